package io.jetspark.item

import io.jetspark.pipeline.PythonAggregateSpec
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

class PythonAggregationsTest extends AnyFunSuite {
  private def spec(json: String) = PythonAggregateSpec(json, canCombineSpec = true, canDeductSpec = false, orderSensitive = false)
  private val counting = spec("""{"name": "counting", "extractors": []}""")
  private val summing = spec("""{"name": "summing", "extractors": [{"kind": "field", "name": "v"}]}""")
  private val custom = spec("""{"name": "custom", "extractors": [], "ref": 3}""")

  private val positions = Iterator.from(0)
  private def extracted(values: Any*) = new Extracted(new PickledKey(Array[Byte](1)), new PickledItem(Array[Byte](2)),
    values.toArray, Array.empty, positions.next())

  test("two inputs bind to a co-aggregation: each input's values feed its own operation, slots from 0") {
    val op = PythonAggregations.bindInputs(Seq(counting, summing))
    assert(op.arity == 2 && op.canCombine)
    val acc = Seq(0 -> extracted(), 0 -> extracted(), 1 -> extracted(5L), 1 -> extracted(7L), 1 -> extracted(1L))
      .foldLeft(op.create()) { case (a, (ordinal, e)) => op.accumulate(a, ordinal, e) }
    assert(op.finishResult(acc) == (2L, 13L))
  }

  test("an operation with a custom part, alone or inside all_of, runs in Python; its built-in parts keep their slots") {
    val allOf = spec("""{"name": "all_of", "extractors": [], "parts": [{"name": "summing", "extractors": [{"kind": "field", "name": "a"}]},
      {"name": "custom", "extractors": [], "ref": 1}, {"name": "top_n", "extractors": [], "n": 2},
      {"name": "linear_trend", "extractors": [{"kind": "field", "name": "x"}, {"kind": "field", "name": "y"}]}]}""")
    assert(PythonAggregations.runsInPython(custom) && PythonAggregations.runsInPython(allOf))
    assert(!PythonAggregations.runsInPython(summing))
    // A field named "custom" is a value, not an operation.
    assert(!PythonAggregations.runsInPython(spec("""{"name": "summing", "extractors": [{"kind": "field", "name": "custom"}]}""")))

    val (slotted, extractors) = (allOf.slottedJson, PythonAggregations.extractors(allOf))
    assert(extractors.map(e => e.path("name").asText(e.get("kind").asText)) == Seq("a", "item", "x", "y"))
    val parts = slotted.get("parts")
    def slots(i: Int) = parts.get(i).get("slots").elements().asScala.map(_.asInt).toSeq
    // The custom part takes the whole item and has no slot; top_n without a key ranks the item itself.
    assert(slots(0) == Seq(0) && slots(1).isEmpty && slots(2) == Seq(1) && slots(3) == Seq(2, 3))
    assert(parts.get(1).get("ref").asInt == 1)
    assert(PythonAggregations.extractors(allOf) == extractors && PythonAggregations.extractors(custom).isEmpty)
  }

  test("the JVM binds a built-in operation's values at its slots") {
    val op = PythonAggregations.bindInputs(Seq(spec("""{"name": "all_of", "extractors": [], "parts": [
      {"name": "summing", "extractors": [{"kind": "field", "name": "a"}]}, {"name": "counting", "extractors": []},
      {"name": "max_by", "extractors": [{"kind": "field", "name": "b"}]}]}""")))
    val acc = Seq(extracted(1L, 9L), extracted(2L, 3L)).foldLeft(op.create())((a, e) => op.accumulate(a, 0, e))
    assert(op.finishResult(acc).asInstanceOf[Array[Any]].take(2).toSeq == Seq(3L, 2L))
  }
}
