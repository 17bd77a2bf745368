package io.jetspark.core.window

import io.jetspark.core.aggregate.AggregateOperation

/** Small aggregate operations for the window tests (the built-in ones live elsewhere). Accumulators are
  * mutable case classes, so that frames compare by value.
  */
object TestOps {
  final case class LongAcc(var value: Long)

  /** An operation that cannot combine (windows must refuse it). */
  def withoutCombine[T]: AggregateOperation[T, LongAcc, Long] = new AggregateOperation[T, LongAcc, Long] {
    override def arity = 1
    override def create() = LongAcc(0)
    override def accumulate(acc: LongAcc, ordinal: Int, item: T) = acc
    override def combineFn = None
    override def deductFn = None
    override def exportResult(acc: LongAcc) = acc.value
    override def finishResult(acc: LongAcc) = acc.value
  }
  final case class ListAcc[T](var items: Vector[T])

  /** Sums `value(item)` but cannot combine: only a single-stage tumbling window takes it (Jet's rule). */
  def summingWithoutCombine[T](value: T => Long): AggregateOperation[T, LongAcc, Long] = new AggregateOperation[T, LongAcc, Long] {
    override def arity = 1
    override def create() = LongAcc(0)
    override def accumulate(acc: LongAcc, ordinal: Int, item: T) = { acc.value += value(item); acc }
    override def combineFn = None
    override def deductFn = None
    override def exportResult(acc: LongAcc) = acc.value
    override def finishResult(acc: LongAcc) = acc.value
  }

  /** An operation built from functions; `combine` folds right into left. */
  final class TestOp[T, A, R](
      createFn: () => A,
      accumulateFn: (A, T) => A,
      combine: (A, A) => A,
      deduct: Option[(A, A) => A],
      exportFn: A => R,
  ) extends AggregateOperation[T, A, R] {
    override def arity: Int = 1
    override def create(): A = createFn()
    override def accumulate(acc: A, ordinal: Int, item: T): A = accumulateFn(acc, item)
    override def combineFn: Option[(A, A) => A] = Some(combine)
    override def deductFn: Option[(A, A) => A] = deduct
    override def exportResult(acc: A): R = exportFn(acc)
    override def finishResult(acc: A): R = exportFn(acc)
  }

  /** Sums `value(item)`; with or without a deductFn, so that both sliding strategies run the same cases. */
  def summing[T](value: T => Long, withDeduct: Boolean): TestOp[T, LongAcc, Long] =
    new TestOp[T, LongAcc, Long](
      () => LongAcc(0),
      (a, t) => { a.value += value(t); a },
      (a, b) => { a.value += b.value; a },
      if (withDeduct) Some((a: LongAcc, b: LongAcc) => { a.value -= b.value; a }) else None,
      _.value,
    )

  def counting[T](withDeduct: Boolean): TestOp[T, LongAcc, Long] = summing[T](_ => 1L, withDeduct)

  /** Maximum of `value(item)`: no deduct exists. */
  def max[T](value: T => Long): TestOp[T, LongAcc, Long] =
    new TestOp[T, LongAcc, Long](
      () => LongAcc(Long.MinValue),
      (a, t) => { a.value = math.max(a.value, value(t)); a },
      (a, b) => { a.value = math.max(a.value, b.value); a },
      None,
      _.value,
    )

  /** The items in accumulation order, older frames first: not commutative, so it catches combines done in
    * the wrong order.
    */
  def toList[T]: TestOp[T, ListAcc[T], List[T]] =
    new TestOp[T, ListAcc[T], List[T]](
      () => ListAcc(Vector.empty),
      (a, t) => { a.items :+= t; a },
      (a, b) => { a.items ++= b.items; a },
      None,
      _.items.toList,
    )
}
