package io.jetspark.pipeline

import io.jetspark.core.aggregate.AggregateOperation

/** A Python callable the JVM cannot hold: number `ref` of the values the Python side recorded with its
  * pipeline. The engine hands the numbers back so that Python builds the UDFs that run them.
  */
final case class PythonRef(ref: Int)

/** A Python-defined aggregate operation as the planner sees it: what it can do (combine, deduct) and
  * whether its result depends on order; `json` is its whole definition, as python/jetspark/aggregate.py
  * wrote it. The engine binds it to its values (extracted in the JVM or in
  * a Python worker) before anything is accumulated; until then it cannot run, and says so.
  * `columns` holds the Spark Columns its `{"kind": "column", "ref": n}` extractors name, by `n`.
  */
final case class PythonAggregateSpec(name: String, json: String, canCombineSpec: Boolean, canDeductSpec: Boolean,
    orderSensitive: Boolean, columns: Map[Int, AnyRef] = Map.empty)
    extends AggregateOperation[Any, Any, Any] {
  private def unbound = throw new IllegalStateException(s"Python aggregate operation '$name' runs only once an engine binds it")
  override def arity: Int = 1
  override def create(): Any = unbound
  override def accumulate(acc: Any, ordinal: Int, item: Any): Any = unbound
  override def combineFn: Option[(Any, Any) => Any] = if (canCombineSpec) Some((_, _) => unbound) else None
  override def deductFn: Option[(Any, Any) => Any] = if (canDeductSpec) Some((_, _) => unbound) else None
  override def exportResult(acc: Any): Any = unbound
  override def finishResult(acc: Any): Any = unbound
  override def isOrderSensitive: Boolean = orderSensitive
}
