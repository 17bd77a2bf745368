package io.jetspark.engine.spark.runner

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.engine.spark.rows.RowSchemas.Key
import io.jetspark.item.{PythonAggregations, PythonOps}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{SessionWindowDefinition, SlidingWindowDefinition, WindowDefinition}
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, lit}

/** Aggregations with a user-defined aggregate operation (`AggregateOperation.of(create, accumulate, ...)`
  * in Python) on the Spark batch engine, windows included. Its functions are Python's, so each vertex of
  * such an aggregation is one Arrow UDF (python/jetspark/worker/custom_aggregations.py, and worker/custom_windows.py for
  * windows; named `custom:<vertex>`) over the items that the vertex's input extraction gave their key and
  * values (and, into a window, their time); the JVM only moves rows between them, as for built-in
  * operations:
  *
  * {{{
  *   two stages:  accumulate (pickled accumulator per key and partition) ──by key──▶ combine ──▶ results
  *   one stage:   ──items by key (or all to one)──▶ single (accumulate, then finish) ──▶ results
  *   rolling:     ──items by key (or all to one)──▶ rolling (export after each item) ──▶ results
  * }}}
  *
  * A window has the same two shapes as the JVM's window processors ([[window.WindowRunner]]), so the planner's
  * choice means the same for both: two stages accumulate per (key, frame) next to the data and send each
  * key's frames as one row over the shuffle, to be combined per frame and slid into windows; one stage
  * (sessions, an operation without `combine` in a tumbling window, rebalanced keyed input) gets the
  * items of its keys and builds the windows itself. Results are `WindowResult`/`KeyedWindowResult`
  * pickles like the JVM's, so a later window stamps them with their time as it stamps the JVM's
  * ([[CarriedTimestamps.stampOn]]).
  *
  * Where a user-defined operation is a part of the operation (in `all_of`, or one side of `aggregate2`),
  * the whole operation runs in Python, its built-in parts too (python/jetspark/worker/operations.py gives the
  * JVM's results): one accumulator per group holds every part, so a record is accumulated once and fails
  * or succeeds as a whole, and the operation combines or not as a whole. Operations with no user-defined
  * part keep the JVM's processors (and Catalyst). Python reads a built-in part's values from the
  * extraction's `values`, at the slots [[io.jetspark.pipeline.PythonOperationReader]] numbered for it.
  *
  * `aggregate2` reads both inputs as one, each row tagged with its input `ordinal`; the UDF keeps one
  * accumulator per input and gives the pair of results.
  *
  * A record whose `accumulate` fails (in any part) goes to the stage's dead-letter sink where it has one,
  * leaving every part's accumulator as it was (a window: it still opens its frame or session, as its
  * time says, like a record that succeeds); a failing `create`, `combine`, `deduct`, `export` or `finish`
  * fails the job, naming the stage and the group (a window: the key and the window).
  */
object CustomAggregations {

  /** What one vertex runs: `mode` is `accumulate`, `combine`, `single` or `rolling`; `operations` are each
    * input's operation with its slots ([[PythonAggregateSpec.slottedJson]]; user-defined parts name their
    * functions by `ref` among the pipeline's Python objects); `window`, for a window vertex, its definition as
    * Python's `WindowDefinition.to_spec` gives it.
    */
  final case class Work(vertex: Vertex, mode: String, operations: Seq[JsonNode], keyed: Boolean, deadLetter: Boolean,
      window: Option[JsonNode] = None)

  /** The column that tells a row's input when an aggregation has two. */
  val Ordinal = "ordinal"

  /** What each vertex of `dag` that aggregates in Python (`inPython`: those with a user-defined part,
    * unless an engine decides more) runs.
    */
  def work(dag: PhysicalDag, inPython: Vertex => Boolean = PythonAggregations.runsInPython): Seq[Work] =
    dag.vertices.filter(inPython).map { v =>
      def of(mode: String, ops: Seq[PythonAggregateSpec], keyed: Boolean, window: Option[WindowDefinition] = None) =
        Work(v, mode, ops.map(_.slottedJson), keyed, deadLetter = dag.routesFailures(v), window.map(windowJson))
      v.description match {
        case Aggregate(stage, PythonOps(ops), keys) => of(modes(stage), ops, keys.nonEmpty)
        case RollingAggregate(key, op: PythonAggregateSpec) => of("rolling", Seq(op), key.isDefined)
        case WindowAggregate(stage, window, op: PythonAggregateSpec, key) => of(modes(stage), Seq(op), key.isDefined, Some(window))
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

  /** What the UDF of `v` reads, given what each of its input edges delivers: that one input, or both
    * inputs of an `aggregate2` as one, each row tagged with its [[Ordinal]]. A union puts the inputs'
    * partitions side by side, so where the items of a key must meet (a single stage) they are
    * partitioned again, by key (or into one partition for a global aggregation); partial accumulators of
    * a first stage need not meet.
    */
  def input(v: Vertex, inputs: Seq[DataFrame]): DataFrame = (inputs, v.description) match {
    case (Seq(one), _) => one
    case (several, Aggregate(stage, _, keys)) =>
      val union = several.zipWithIndex.map { case (df, i) => df.withColumn(Ordinal, lit(i)) }.reduce(_ union _)
      if (stage != AggregationStage.SingleStage) union
      else if (keys.nonEmpty) union.repartition(v.localParallelism, col(Key))
      else union.repartition(1)
    case (several, other) =>
      throw new IllegalStateException(s"vertex '${v.name}' (${other.describe}) has ${several.size} inputs")
  }
}
