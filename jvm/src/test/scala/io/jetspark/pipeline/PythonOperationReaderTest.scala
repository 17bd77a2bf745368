package io.jetspark.pipeline

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.pipeline.PythonOperation._
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** Each operation's spec, as `AggregateOperation.to_spec` in python/jetspark/aggregate.py writes it, reads
  * as its node of the tree, with its values numbered in the order the spec lists them.
  */
class PythonOperationReaderTest extends AnyFunSuite {
  private val mapper = new ObjectMapper()
  private def json(text: String): JsonNode = mapper.readTree(text)
  private def flags(combine: Boolean, deduct: Boolean, ordered: Boolean = false) =
    s""""can_combine": $combine, "can_deduct": $deduct, "order_sensitive": $ordered"""
  private def field(name: String, numbersFor: Option[String] = None): String =
    s"""{"kind": "field", "name": "$name"${numbersFor.fold("")(op => s""", "numbers_for": "$op"""")}}"""
  private def slot(index: Int, extractor: String) = ValueSlot(index, json(extractor))

  /** (spec, the operation it defines) for every operation of aggregate.py. */
  private val operations: Seq[(String, PythonOperation)] = Seq(
    s"""{"name": "counting", "extractors": [], ${flags(true, true)}}""" -> Counting,
    s"""{"name": "summing", "extractors": [${field("v", Some("summing"))}], ${flags(true, true)}}""" ->
      Summing(slot(0, field("v", Some("summing")))),
    s"""{"name": "averaging", "extractors": [${field("v", Some("averaging"))}], ${flags(true, true)}}""" ->
      Averaging(slot(0, field("v", Some("averaging")))),
    s"""{"name": "variance", "extractors": [${field("v", Some("variance"))}], ${flags(true, true)}}""" ->
      Variance(slot(0, field("v", Some("variance")))),
    s"""{"name": "linear_trend", "extractors": [${field("x", Some("linear_trend"))}, ${field("y", Some("linear_trend"))}],
      ${flags(true, true)}}""" -> LinearTrend(slot(0, field("x", Some("linear_trend"))), slot(1, field("y", Some("linear_trend")))),
    s"""{"name": "min_by", "extractors": [${field("v")}], ${flags(true, false)}}""" -> MinBy(slot(0, field("v"))),
    s"""{"name": "max_by", "extractors": [{"kind": "python", "ref": 0, "name": "<lambda>"}], ${flags(true, false)}}""" ->
      MaxBy(slot(0, """{"kind": "python", "ref": 0, "name": "<lambda>"}""")),
    s"""{"name": "top_n", "extractors": [${field("v")}], ${flags(true, false)}, "n": 3}""" -> TopN(3, slot(0, field("v"))),
    // Without a key, the items themselves.
    s"""{"name": "bottom_n", "extractors": [], ${flags(true, false)}, "n": 2}""" -> BottomN(2, slot(0, """{"kind": "item"}""")),
    s"""{"name": "to_list", "extractors": [], ${flags(true, false, ordered = true)}}""" -> ToList,
    s"""{"name": "to_set", "extractors": [], ${flags(true, false)}}""" -> ToSet,
    s"""{"name": "custom", "extractors": [], ${flags(false, false)}, "ref": 1}""" -> UserDefined(1))

  test("every operation's spec reads as its node, which Python's name names") {
    operations.foreach { case (spec, expected) =>
      val read = PythonOperationReader.read(spec).operation
      assert(read == expected, spec)
      assert(read.name == json(spec).get("name").asText)
    }
  }

  test("all_of numbers its parts' values one after another and adds each part's slots to the spec") {
    val spec = s"""{"name": "all_of", "extractors": [], ${flags(false, false)}, "parts": [
      {"name": "counting", "extractors": [], ${flags(true, true)}},
      {"name": "summing", "extractors": [${field("a", Some("summing"))}], ${flags(true, true)}},
      {"name": "custom", "extractors": [], ${flags(false, false)}, "ref": 1},
      {"name": "top_n", "extractors": [], ${flags(true, false)}, "n": 2},
      {"name": "all_of", "extractors": [], ${flags(true, false)}, "parts": [
        {"name": "max_by", "extractors": [${field("b")}], ${flags(true, false)}}]}]}"""
    val read = PythonOperationReader.read(spec)
    assert(read.operation == AllOf(Seq(Counting, Summing(slot(0, field("a", Some("summing")))), UserDefined(1),
      TopN(2, slot(1, """{"kind": "item"}""")), AllOf(Seq(MaxBy(slot(2, field("b"))))))))
    assert(read.operation.slots.map(_.index) == Seq(0, 1, 2))
    def slots(node: JsonNode) = node.get("slots").elements().asScala.map(_.asInt).toSeq
    val parts = read.slotted.get("parts")
    assert(slots(read.slotted).isEmpty && slots(parts.get(0)).isEmpty && slots(parts.get(1)) == Seq(0))
    assert(slots(parts.get(2)).isEmpty && parts.get(2).get("ref").asInt == 1 && slots(parts.get(3)) == Seq(1))
    assert(slots(parts.get(4).get("parts").get(0)) == Seq(2))
    // The rest of the spec goes to Python as it came.
    assert(parts.get(3).get("n").asInt == 2 && parts.get(1).get("extractors") == json(s"[${field("a", Some("summing"))}]"))
  }

  test("an operation the JVM does not know, or a spec with too few values, is refused naming the operation") {
    val unknown = intercept[IllegalArgumentException](PythonOperationReader.read("""{"name": "median", "extractors": []}"""))
    assert(unknown.getMessage.contains("unknown aggregate operation 'median'"))
    val nested = intercept[IllegalArgumentException](PythonOperationReader.read(
      """{"name": "all_of", "extractors": [], "parts": [{"name": "mode", "extractors": []}]}"""))
    assert(nested.getMessage.contains("'mode'"))
    val missing = intercept[IllegalArgumentException](PythonOperationReader.read("""{"name": "linear_trend", "extractors": []}"""))
    assert(missing.getMessage.contains("linear_trend") && missing.getMessage.contains("2 values"))
  }
}
