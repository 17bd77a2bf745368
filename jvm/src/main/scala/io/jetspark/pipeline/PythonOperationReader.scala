package io.jetspark.pipeline

import com.fasterxml.jackson.databind.node.{IntNode, ObjectNode}
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.pipeline.PythonOperation._

import scala.jdk.CollectionConverters._

/** Reads an aggregate operation's spec as `AggregateOperation.to_spec` in python/jetspark/aggregate.py
  * writes it (`{"name", "extractors", "n"?, "parts"?, "ref"?, ...}`): the one place that reads an
  * operation's name.
  */
object PythonOperationReader {
  private val mapper = new ObjectMapper()
  private val wholeItem: JsonNode = mapper.readTree("""{"kind": "item"}""")

  /** An operation read from its spec, and the spec with `"slots"` added to every operation in it (the
    * indices of its own values among [[PythonOperation.slots]]): what Python's workers read where they run
    * the operation (python/jetspark/worker/operations.py), so that Python and the JVM cannot number values
    * differently.
    */
  final case class Read(operation: PythonOperation, slotted: JsonNode)

  def read(json: String): Read = {
    val spec = mapper.readTree(json)
    val operation = new Numbering().read(spec)
    Read(operation, slotted(spec, operation))
  }

  /** Numbers the values of the operations it reads one after another, as the spec lists them. */
  private final class Numbering {
    private var next = 0

    def read(spec: JsonNode): PythonOperation = {
      val name = spec.get("name").asText
      val declared = spec.get("extractors").elements().asScala.toSeq
      def values(count: Int, extractors: Seq[JsonNode] = declared): Seq[ValueSlot] = {
        require(extractors.size == count, s"aggregate operation '$name' reads $count values, its spec gives ${extractors.size}")
        val slots = extractors.zipWithIndex.map { case (e, i) => ValueSlot(next + i, e) }
        next += count
        slots
      }
      def value: ValueSlot = values(1).head
      // top_n/bottom_n without a key rank the items themselves.
      def ranked: ValueSlot = values(1, if (declared.isEmpty) Seq(wholeItem) else declared).head
      def none[T](op: T): T = { values(0); op }
      name match {
        case "counting" => none(Counting)
        case "summing" => Summing(value)
        case "averaging" => Averaging(value)
        case "variance" => Variance(value)
        case "linear_trend" => val xy = values(2); LinearTrend(xy(0), xy(1))
        case "min_by" => MinBy(value)
        case "max_by" => MaxBy(value)
        case "top_n" => TopN(spec.get("n").asInt, ranked)
        case "bottom_n" => BottomN(spec.get("n").asInt, ranked)
        case "to_list" => none(ToList)
        case "to_set" => none(ToSet)
        case "all_of" => none(AllOf(spec.get("parts").elements().asScala.map(read).toSeq))
        case "custom" => none(UserDefined(spec.get("ref").asInt))
        case other => throw new IllegalArgumentException(s"unknown aggregate operation '$other'")
      }
    }
  }

  private def slotted(spec: JsonNode, operation: PythonOperation): JsonNode = {
    val out = spec.deepCopy[ObjectNode]()
    out.putArray("slots").addAll(operation.ownSlots.map(s => IntNode.valueOf(s.index): JsonNode).asJava)
    operation match {
      case AllOf(parts) =>
        out.putArray("parts").addAll(spec.get("parts").elements().asScala.zip(parts).map { case (s, p) => slotted(s, p) }.toSeq.asJava)
      case _ =>
    }
    out
  }
}
