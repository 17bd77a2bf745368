package io.jetspark.item

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{IntNode, ObjectNode}
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations, AnyOrdering}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.plan.Vertex
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate, WindowAggregate}

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** Binds a Python-defined aggregate operation (its JSON, from python/jetspark/aggregate.py) to the
  * built-in operation of the core, over values that a Python worker extracts before the aggregation.
  *
  * `extractors` lists what Python must extract, in slot order (`{"kind": "field" | "python" | "item", ...}`);
  * results that are items (`max_by`, `to_list`, ...) come out as the items themselves (written back to
  * Python as the objects they were, see [[PythonValues]]), `all_of` as a tuple.
  */
final case class BoundAggregation(op: AggregateOperation[Extracted, Any, Any], extractors: Seq[JsonNode])

object PythonAggregations {
  private val mapper = new ObjectMapper()
  private val wholeItem: JsonNode = mapper.readTree("""{"kind": "item"}""")

  /** Whether `op` runs in Python as a whole ([[CustomAggregations]]): it has a user-defined part
    * (`AggregateOperation.of(...)`, itself or inside `all_of`). The JVM binds only operations without one;
    * a mix runs in Python with its built-in parts too, so that one accumulator holds every part.
    */
  def runsInPython(op: PythonAggregateSpec): Boolean = containsCustom(mapper.readTree(op.json))

  /** Whether `v` aggregates in Python: some operation of it has a user-defined part. */
  def runsInPython(v: Vertex): Boolean = v.description match {
    case Aggregate(_, ops, _) => ops.exists { case op: PythonAggregateSpec => runsInPython(op); case _ => false }
    case RollingAggregate(_, op: PythonAggregateSpec) => runsInPython(op)
    case WindowAggregate(_, _, op: PythonAggregateSpec, _) => runsInPython(op)
    case _ => false
  }

  private def containsCustom(spec: JsonNode): Boolean =
    spec.get("name").asText == "custom" || Option(spec.get("parts")).exists(_.elements().asScala.exists(containsCustom))

  /** What Python extracts from an item for `op`, in slot order (see [[slotted]]). */
  def extractors(op: PythonAggregateSpec): Seq[JsonNode] = slotted(op)._2

  /** `op`'s spec with, on every built-in operation in it, where its values are among those extracted
    * (`"slots"`: the indices of its extractors, in their order; a user-defined part takes whole items and
    * has none), and the extractors in slot order. The JVM's binding and Python's ([[CustomAggregations]])
    * both read these slots, so the two cannot number values differently.
    */
  def slotted(op: PythonAggregateSpec): (JsonNode, Seq[JsonNode]) = {
    val extractors = ArrayBuffer.empty[JsonNode]
    def number(spec: JsonNode): JsonNode = {
      val out = spec.deepCopy[ObjectNode]()
      val declared = spec.get("extractors").elements().asScala.toSeq
      // Operations over the item itself when no value is given (top_n/bottom_n without a key).
      val own = if (declared.isEmpty && Set("top_n", "bottom_n")(spec.get("name").asText)) Seq(wholeItem) else declared
      out.putArray("slots").addAll(own.indices.map(i => IntNode.valueOf(extractors.size + i): JsonNode).asJava)
      extractors ++= own
      Option(spec.get("parts")).foreach(parts => out.putArray("parts").addAll(parts.elements().asScala.map(number).toSeq.asJava))
      out
    }
    (number(mapper.readTree(op.json)), extractors.toSeq)
  }

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

  def bind(op: PythonAggregateSpec): BoundAggregation = {
    val (spec, extractors) = slotted(op)
    BoundAggregation(bind(spec), extractors)
  }

  private def bind(spec: JsonNode): AggregateOperation[Extracted, Any, Any] = {
    import AggregateOperations.{andThen, bottomN, mapping, maxBy, minBy, toList, toSet, topN}
    val name = spec.get("name").asText
    def value(i: Int): Extracted => Any = { val slot = spec.get("slots").get(i).asInt; e => e.values(slot) }
    def n = spec.get("n").asInt
    // Operations that keep items keep only the item and the value it is ranked by, not the whole
    // extraction (its key and other values): their partial results cross shuffles.
    def kept(value: Extracted => Any): Extracted => Kept = e => Kept(e.item, value(e), e.position)
    val items = (xs: Iterable[Kept]) => xs.map(_.item)
    val itemOf = (e: Extracted) => e.item
    val op: AggregateOperation[Extracted, _, _] = name match {
      case "counting" => AggregateOperations.counting()
      case "summing" => AggregateOperations.summing(value(0))
      case "averaging" => AggregateOperations.averaging(value(0))
      case "variance" => AggregateOperations.variance(value(0))
      case "linear_trend" => AggregateOperations.linearTrend(value(0), value(1))
      case "min_by" => mapping(kept(value(0)))(andThen(minBy(identity[Kept])(Kept.EarlierLess))(_.map(_.item)))
      case "max_by" => mapping(kept(value(0)))(andThen(maxBy(identity[Kept])(Kept.EarlierGreater))(_.map(_.item)))
      case "top_n" => mapping(kept(value(0)))(andThen(topN(n, identity[Kept])(Kept.EarlierGreater))(items))
      case "bottom_n" => mapping(kept(value(0)))(andThen(bottomN(n, identity[Kept])(Kept.EarlierLess))(items))
      case "to_list" => mapping(itemOf)(toList[AnyRef]())
      case "to_set" => mapping(itemOf)(toSet[AnyRef]())
      case "all_of" =>
        val parts = spec.get("parts").elements().asScala.map(bind).toSeq
        AggregateOperations.andThen(AggregateOperations.allOf(parts: _*))(_.toArray[Any])
      case "custom" => throw new UnsupportedOperationException(
        "an AggregateOperation.of(...) runs in Python (with every other part of its operation), not in the JVM")
      case other => throw new IllegalArgumentException(s"unknown aggregate operation '$other'")
    }
    op.asInstanceOf[AggregateOperation[Extracted, Any, Any]]
  }
}
