package io.jetspark.core.aggregate

/** An aggregate operation in Jet's form: a mutable accumulator is created, items are accumulated into it
  * (per input ordinal, for co-aggregation of several inputs), partial accumulators are combined, and the
  * result is exported (without disturbing the accumulator) or finished (the accumulator is not used again).
  *
  * `combine(left, right)` folds `right` into `left` and returns the result (usually `left` itself);
  * `right` is left unchanged. It must be associative and have `create()` as its identity.
  * `deduct(left, right)`, when present, undoes an earlier `combine(left, right)`: for every `x`,
  * `deduct(combine(a, x), x)` equals `a`. Windows slide in O(1) with it.
  *
  * Accumulators are Serializable: they are saved to snapshots and sent between stages.
  */
trait AggregateOperation[-T, A, +R] extends Serializable {
  /** Number of inputs this operation accumulates (1, or 2+ for `aggregate2`-style co-aggregation). */
  def arity: Int
  def create(): A
  def accumulate(acc: A, ordinal: Int, item: T): A
  def combineFn: Option[(A, A) => A]
  def deductFn: Option[(A, A) => A]
  def exportResult(acc: A): R
  def finishResult(acc: A): R

  /** True when the result depends on the order items arrive in (to-list, first, last): the planner then
    * keeps the input's encounter order when the pipeline preserves order. Commutative operations keep
    * the default, false.
    */
  def isOrderSensitive: Boolean = false

  /** True when some of its functions live outside the JVM (a user's `AggregateOperation.of` in Python), so
    * only an engine that calls back into that runtime runs it: the planner then keeps a stream's window of
    * it in one stage, which that runtime keeps from one epoch to the next.
    */
  def hasForeignFunctions: Boolean = false

  final def canCombine: Boolean = combineFn.isDefined
  final def canDeduct: Boolean = deductFn.isDefined
  final def accumulate(acc: A, item: T): A = accumulate(acc, 0, item)
}
