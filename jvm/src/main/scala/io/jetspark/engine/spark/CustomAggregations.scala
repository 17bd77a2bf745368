package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.engine.spark.SparkBatchEngine.{Key, PythonOps}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, lit}

/** User-defined aggregate operations (`AggregateOperation.of(create, accumulate, ...)` in Python) on the
  * Spark batch engine. Their functions are Python's, so each of their vertices is one Arrow UDF
  * (python/jetspark/_custom_ops.py, named `custom:<vertex>`) over the items that the vertex's input
  * extraction gave their key; the JVM only moves rows between them, as for built-in operations:
  *
  * {{{
  *   two stages:  accumulate (pickled accumulator per key and partition) ──by key──▶ combine ──▶ results
  *   one stage:   ──items by key (or all to one)──▶ single (accumulate, then finish) ──▶ results
  *   rolling:     ──items by key (or all to one)──▶ rolling (export after each item) ──▶ results
  * }}}
  *
  * `aggregate2` with two user-defined operations reads both inputs as one, each row tagged with its input
  * `ordinal`; the UDF keeps one accumulator per input and gives the pair of results.
  *
  * A record whose `accumulate` fails goes to the stage's dead-letter sink where it has one, leaving the
  * accumulator as it was; a failing `create`, `combine`, `export` or `finish` fails the job, naming the
  * stage and the group.
  */
object CustomAggregations {

  /** What one vertex runs: `mode` is `accumulate`, `combine`, `single` or `rolling`; `functionsRefs` number
    * the functions of each input's operation among the pipeline's Python objects.
    */
  final case class Work(vertex: Vertex, mode: String, functionsRefs: Seq[Int], keyed: Boolean, deadLetter: Boolean)

  /** The column that tells a row's input when an aggregation has two. */
  val Ordinal = "ordinal"

  private val mapper = new ObjectMapper()

  def work(dag: PhysicalDag): Seq[Work] = dag.vertices.flatMap { v =>
    def of(mode: String, ops: Seq[PythonAggregateSpec], keyed: Boolean) =
      Work(v, mode, ops.map(op => mapper.readTree(op.json).get("ref").asInt), keyed,
        deadLetter = dag.edgesFrom(v.name).exists(_.errorsOf.isDefined))
    v.description match {
      case Aggregate(stage, PythonOps(ops), keys) if ops.forall(PythonAggregations.isCustom) =>
        val mode = stage match {
          case AggregationStage.Accumulate => "accumulate"
          case AggregationStage.Combine => "combine"
          case AggregationStage.SingleStage => "single"
        }
        Seq(of(mode, ops, keys.nonEmpty))
      case RollingAggregate(key, op: PythonAggregateSpec) if PythonAggregations.isCustom(op) =>
        Seq(of("rolling", Seq(op), key.isDefined))
      case _ => Nil
    }
  }

  /** Whether `v` runs user-defined operations only (a mix with built-in ones is not run). */
  def runsCustom(v: Vertex): Boolean = v.description match {
    case Aggregate(_, PythonOps(ops), _) => ops.forall(PythonAggregations.isCustom)
    case RollingAggregate(_, op: PythonAggregateSpec) => PythonAggregations.isCustom(op)
    case _ => false
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
