package io.jetspark.item

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.pipeline.{PythonAggregateSpec, PythonOperation, ValueSlot}
import io.jetspark.pipeline.PythonOperation._
import io.jetspark.plan.Vertex
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate, WindowAggregate}

/** A Python-defined aggregate operation ([[PythonOperation]]) bound to the built-in operation of the
  * core, over values that a Python worker extracts before the aggregation.
  *
  * `extractors` lists what Python must extract, in slot order (`{"kind": "field" | "python" | "item", ...}`);
  * results that are items (`max_by`, `to_list`, ...) come out as the items themselves (written back to
  * Python as the objects they were, see [[PythonValues]]), `all_of` as a tuple.
  */
final case class BoundAggregation(op: AggregateOperation[Extracted, Any, Any], extractors: Seq[JsonNode])

object PythonAggregations {
  /** Whether `op` runs in Python as a whole (the Spark engine's `CustomAggregations`): it has a
    * user-defined part (`AggregateOperation.of(...)`, itself or inside `all_of`). The JVM binds only
    * operations without one; a mix runs in Python with its built-in parts too, so that one accumulator
    * holds every part.
    */
  def runsInPython(op: PythonAggregateSpec): Boolean = op.operation.hasUserDefinedPart

  /** Whether `v` aggregates in Python: some operation of it has a user-defined part. */
  def runsInPython(v: Vertex): Boolean = v.description match {
    case Aggregate(_, ops, _) => ops.exists { case op: PythonAggregateSpec => runsInPython(op); case _ => false }
    case RollingAggregate(_, op: PythonAggregateSpec) => runsInPython(op)
    case WindowAggregate(_, _, op: PythonAggregateSpec, _) => runsInPython(op)
    case _ => false
  }

  /** What Python extracts from an item for `op`, in slot order ([[PythonOperation.slots]]). */
  def extractors(op: PythonAggregateSpec): Seq[JsonNode] = op.operation.slots.map(_.extractor)

  /** The core operation of an aggregation with one operation per input: the operation itself for one
    * input, `aggregateOperation2` for two (each input's values extracted by that input's own extraction,
    * so each part binds its slots from 0).
    */
  def bindInputs(ops: Seq[PythonAggregateSpec]): AggregateOperation[Extracted, Any, Any] = ops match {
    case Seq(op) => bind(op).op
    case Seq(op0, op1) => AggregateOperations.aggregateOperation2(bind(op0).op, bind(op1).op)
      .asInstanceOf[AggregateOperation[Extracted, Any, Any]]
    case _ => throw new IllegalArgumentException(s"an aggregation of ${ops.size} inputs")
  }

  def bind(op: PythonAggregateSpec): BoundAggregation = BoundAggregation(bind(op.operation), extractors(op))

  private def bind(operation: PythonOperation): AggregateOperation[Extracted, Any, Any] = {
    import AggregateOperations.{andThen, bottomN, mapping, maxBy, minBy, toList, toSet, topN}
    def value(slot: ValueSlot): Extracted => Any = { val at = slot.index; e => e.values(at) }
    // Operations that keep items keep only the item and the value it is ranked by, not the whole
    // extraction (its key and other values): their partial results cross shuffles.
    def kept(slot: ValueSlot): Extracted => Kept = { val of = value(slot); e => Kept(e.item, of(e), e.position) }
    val items = (xs: Iterable[Kept]) => xs.map(_.item)
    val itemOf = (e: Extracted) => e.item
    val op: AggregateOperation[Extracted, _, _] = operation match {
      case Counting => AggregateOperations.counting()
      case Summing(v) => AggregateOperations.summing(value(v))
      case Averaging(v) => AggregateOperations.averaging(value(v))
      case Variance(v) => AggregateOperations.variance(value(v))
      case LinearTrend(x, y) => AggregateOperations.linearTrend(value(x), value(y))
      case MinBy(v) => mapping(kept(v))(andThen(minBy(identity[Kept])(Kept.EarlierLess))(_.map(_.item)))
      case MaxBy(v) => mapping(kept(v))(andThen(maxBy(identity[Kept])(Kept.EarlierGreater))(_.map(_.item)))
      case TopN(n, v) => mapping(kept(v))(andThen(topN(n, identity[Kept])(Kept.EarlierGreater))(items))
      case BottomN(n, v) => mapping(kept(v))(andThen(bottomN(n, identity[Kept])(Kept.EarlierLess))(items))
      case ToList => mapping(itemOf)(toList[AnyRef]())
      case ToSet => mapping(itemOf)(toSet[AnyRef]())
      case AllOf(parts) => andThen(AggregateOperations.allOf(parts.map(bind): _*))(_.toArray[Any])
      case UserDefined(_) => throw new UnsupportedOperationException(
        "an AggregateOperation.of(...) runs in Python (with every other part of its operation), not in the JVM")
    }
    op.asInstanceOf[AggregateOperation[Extracted, Any, Any]]
  }
}
