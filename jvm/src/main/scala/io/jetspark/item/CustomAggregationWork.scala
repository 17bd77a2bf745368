package io.jetspark.item

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{SessionWindowDefinition, SlidingWindowDefinition, WindowDefinition}
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}

/** What one vertex of an aggregation with a user-defined aggregate operation (`AggregateOperation.of`,
  * see [[PythonAggregations.runsInPython]]) runs in Python, on either engine
  * (python/jetspark/worker/custom_aggregations.py and custom_windows.py): `mode` is `accumulate`,
  * `combine`, `single` or `rolling`; `operations` are each input's operation with its slots
  * ([[PythonAggregateSpec.slottedJson]]; user-defined parts name their functions by `ref` among the
  * pipeline's Python objects); `window`, for a window vertex, its definition as Python's
  * `WindowDefinition.to_spec` gives it.
  */
final case class CustomAggregationWork(vertex: Vertex, mode: String, operations: Seq[JsonNode], keyed: Boolean,
    deadLetter: Boolean, window: Option[JsonNode] = None)

object CustomAggregationWork {

  /** What each vertex of `dag` that aggregates in Python (`inPython`: those with a user-defined part,
    * unless an engine decides more) runs.
    */
  def of(dag: PhysicalDag, inPython: Vertex => Boolean = PythonAggregations.runsInPython): Seq[CustomAggregationWork] =
    dag.vertices.filter(inPython).map(v => of(dag, v))

  /** What vertex `v` of `dag` runs in Python. */
  def of(dag: PhysicalDag, v: Vertex): CustomAggregationWork = {
    def work(mode: String, ops: Seq[PythonAggregateSpec], keyed: Boolean, window: Option[WindowDefinition] = None) =
      CustomAggregationWork(v, mode, ops.map(_.slottedJson), keyed, deadLetter = dag.routesFailures(v), window.map(windowJson))
    v.description match {
      case Aggregate(stage, PythonOps(ops), keys) => work(modes(stage), ops, keys.nonEmpty)
      case RollingAggregate(key, op: PythonAggregateSpec) => work("rolling", Seq(op), key.isDefined)
      case WindowAggregate(stage, window, op: PythonAggregateSpec, key) => work(modes(stage), Seq(op), key.isDefined, Some(window))
      case other => throw new IllegalStateException(s"vertex '${v.name}' (${other.describe}) aggregates nothing in Python")
    }
  }

  private val modes: Map[AggregationStage, String] = Map(AggregationStage.Accumulate -> "accumulate",
    AggregationStage.Combine -> "combine", AggregationStage.SingleStage -> "single")

  /** A window definition as Python's `WindowDefinition.to_spec` writes it. Its early-results period
    * matters only on a stream: a batch has no watermark before its end, so there is nothing early to emit.
    */
  private def windowJson(w: WindowDefinition): JsonNode = {
    val node = JsonNodeFactory.instance.objectNode()
    w match {
      case s: SlidingWindowDefinition => node.put("kind", "sliding").put("size_ms", s.sizeMs).put("slide_ms", s.slideMs)
      case s: SessionWindowDefinition => node.put("kind", "session").put("timeout_ms", s.timeoutMs)
    }
    node.put("early_results_period_ms", w.earlyResultsPeriodMs)
  }
}
