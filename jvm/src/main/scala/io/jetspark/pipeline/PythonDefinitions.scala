package io.jetspark.pipeline

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.Extractor

/** A Python callable the JVM cannot hold: number `ref` of the values the Python side recorded with its
  * pipeline. The engine hands the numbers back so that Python builds the UDFs that run them.
  */
final case class PythonRef(ref: Int)

object PythonExtractors {
  /** How a Python worker extracts a key or value (read by `jetspark.worker.steps`): `{"kind": "field",
    * "name"}`, `{"kind": "python", "ref"}` (a callable the Python layer numbered), `{"kind": "item"}` or
    * `{"kind": "window_time"}` ([[Extractor.WindowResultTime]]);
    * None for an extractor Python cannot run (a Column, a JVM function).
    */
  def json(e: Extractor): Option[JsonNode] = {
    val node = JsonNodeFactory.instance.objectNode()
    e match {
      case Extractor.FieldName(name) => Some(node.put("kind", "field").put("name", name))
      case Extractor.PythonFn(PythonRef(ref), _) => Some(node.put("kind", "python").put("ref", ref))
      case Extractor.WholeItem => Some(node.put("kind", "item"))
      case Extractor.WindowResultTime => Some(node.put("kind", "window_time"))
      case _ => None
    }
  }

  /** How a Python worker extracts the canonical bytes of the key that `of` (a form of [[json]]) gives: a
    * hash join's other clauses' keys ride beside the streamed item in the form keys compare in.
    */
  def keyBytesJson(of: JsonNode): JsonNode = JsonNodeFactory.instance.objectNode().put("kind", "key").set[JsonNode]("of", of)

  /** Why [[json]] has no form for `e`, for the engines' errors. */
  def unsupported(e: Extractor): String = s"${e.describe}: keys of Python items are field names or Python functions"
}

/** A Python-defined aggregate operation as the planner sees it: what it can do (combine, deduct) and
  * whether its result depends on order; `json` is its whole definition, as python/jetspark/aggregate.py
  * wrote it, read once into [[operation]]. The engine binds it to its values (extracted in the JVM or in
  * a Python worker) before anything is accumulated; until then it cannot run, and says so.
  * `columns` holds the Spark Columns its `{"kind": "column", "ref": n}` extractors name, by `n`.
  */
final case class PythonAggregateSpec(json: String, canCombineSpec: Boolean, canDeductSpec: Boolean,
    orderSensitive: Boolean, columns: Map[Int, AnyRef] = Map.empty)
    extends AggregateOperation[Any, Any, Any] {
  private val read = PythonOperationReader.read(json)
  def operation: PythonOperation = read.operation
  /** `json` with the slots of every operation in it ([[PythonOperationReader.Read]]). */
  def slottedJson: JsonNode = read.slotted
  def name: String = operation.name
  private def unbound = throw new IllegalStateException(s"Python aggregate operation '$name' runs only once an engine binds it")
  override def arity: Int = 1
  override def create(): Any = unbound
  override def accumulate(acc: Any, ordinal: Int, item: Any): Any = unbound
  override def combineFn: Option[(Any, Any) => Any] = if (canCombineSpec) Some((_, _) => unbound) else None
  override def deductFn: Option[(Any, Any) => Any] = if (canDeductSpec) Some((_, _) => unbound) else None
  override def exportResult(acc: Any): Any = unbound
  override def finishResult(acc: Any): Any = unbound
  override def isOrderSensitive: Boolean = orderSensitive
  override def hasForeignFunctions: Boolean = operation.hasUserDefinedPart
}
