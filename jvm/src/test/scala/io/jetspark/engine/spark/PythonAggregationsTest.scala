package io.jetspark.engine.spark

import io.jetspark.pipeline.PythonAggregateSpec
import org.scalatest.funsuite.AnyFunSuite

class PythonAggregationsTest extends AnyFunSuite {
  private def spec(json: String) = PythonAggregateSpec("op", json, canCombineSpec = true, canDeductSpec = false, orderSensitive = false)
  private val counting = spec("""{"name": "counting", "extractors": []}""")
  private val summing = spec("""{"name": "summing", "extractors": [{"kind": "field", "name": "v"}]}""")
  private val custom = spec("""{"name": "custom", "extractors": [], "ref": 3}""")

  private def extracted(values: Any*) = new Extracted(new PickledKey(Array[Byte](1)), new PickledItem(Array[Byte](2)),
    values.toArray, Array.empty)

  test("two inputs bind to a co-aggregation: each input's values feed its own operation, slots from 0") {
    val op = PythonAggregations.bindInputs(Seq(counting, summing))
    assert(op.arity == 2 && op.canCombine)
    val acc = Seq(0 -> extracted(), 0 -> extracted(), 1 -> extracted(5L), 1 -> extracted(7L), 1 -> extracted(1L))
      .foldLeft(op.create()) { case (a, (ordinal, e)) => op.accumulate(a, ordinal, e) }
    assert(op.finishResult(acc) == (2L, 13L))
  }

  test("a custom operation, alone or inside all_of, is not bound in the JVM and has nothing extracted") {
    val allOf = spec("""{"name": "all_of", "extractors": [], "parts": [{"name": "counting", "extractors": []},
      {"name": "custom", "extractors": [], "ref": 1}]}""")
    assert(!PythonAggregations.bindable(custom) && !PythonAggregations.bindable(allOf))
    assert(PythonAggregations.bindable(summing))
    assert(PythonAggregations.extractors(allOf).isEmpty && PythonAggregations.extractors(summing).size == 1)
    // A field named "custom" is a value, not an operation.
    assert(PythonAggregations.bindable(spec("""{"name": "summing", "extractors": [{"kind": "field", "name": "custom"}]}""")))
  }
}
