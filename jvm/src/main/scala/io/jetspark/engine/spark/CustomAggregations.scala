package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.engine.spark.SparkBatchEngine.{Key, PythonOps}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, lit}

/** Aggregations with a user-defined aggregate operation (`AggregateOperation.of(create, accumulate, ...)`
  * in Python) on the Spark batch engine. Its functions are Python's, so each vertex of such an aggregation
  * is one Arrow UDF (python/jetspark/_custom_ops.py, named `custom:<vertex>`) over the items that the
  * vertex's input extraction gave their key and values; the JVM only moves rows between them, as for
  * built-in operations:
  *
  * {{{
  *   two stages:  accumulate (pickled accumulator per key and partition) ──by key──▶ combine ──▶ results
  *   one stage:   ──items by key (or all to one)──▶ single (accumulate, then finish) ──▶ results
  *   rolling:     ──items by key (or all to one)──▶ rolling (export after each item) ──▶ results
  * }}}
  *
  * Where a user-defined operation is a part of the operation (in `all_of`, or one side of `aggregate2`),
  * the whole operation runs in Python, its built-in parts too (python/jetspark/_operations.py gives the
  * JVM's results): one accumulator per group holds every part, so a record is accumulated once and fails
  * or succeeds as a whole, and the operation combines or not as a whole. Operations with no user-defined
  * part keep the JVM's processors (and Catalyst). Python reads a built-in part's values from the
  * extraction's `values`, at the slots [[PythonAggregations.slotted]] numbered for it.
  *
  * `aggregate2` reads both inputs as one, each row tagged with its input `ordinal`; the UDF keeps one
  * accumulator per input and gives the pair of results.
  *
  * A record whose `accumulate` fails (in any part) goes to the stage's dead-letter sink where it has one,
  * leaving every part's accumulator as it was; a failing `create`, `combine`, `export` or `finish` fails
  * the job, naming the stage and the group.
  */
object CustomAggregations {

  /** What one vertex runs: `mode` is `accumulate`, `combine`, `single` or `rolling`; `operations` are each
    * input's operation, as [[PythonAggregations.slotted]] gives it (user-defined parts name their functions
    * by `ref` among the pipeline's Python objects).
    */
  final case class Work(vertex: Vertex, mode: String, operations: Seq[JsonNode], keyed: Boolean, deadLetter: Boolean)

  /** The column that tells a row's input when an aggregation has two. */
  val Ordinal = "ordinal"

  def work(dag: PhysicalDag): Seq[Work] = dag.vertices.filter(runsInPython).map { v =>
    def of(mode: String, ops: Seq[PythonAggregateSpec], keyed: Boolean) =
      Work(v, mode, ops.map(PythonAggregations.slotted(_)._1), keyed,
        deadLetter = dag.routesFailures(v))
    v.description match {
      case Aggregate(AggregationStage.Accumulate, PythonOps(ops), keys) => of("accumulate", ops, keys.nonEmpty)
      case Aggregate(AggregationStage.Combine, PythonOps(ops), keys) => of("combine", ops, keys.nonEmpty)
      case Aggregate(AggregationStage.SingleStage, PythonOps(ops), keys) => of("single", ops, keys.nonEmpty)
      case RollingAggregate(key, op: PythonAggregateSpec) => of("rolling", Seq(op), key.isDefined)
      case other => throw new IllegalStateException(s"vertex '${v.name}' (${other.describe}) aggregates nothing in Python")
    }
  }

  /** Whether `v` aggregates in Python: some operation of it has a user-defined part. */
  def runsInPython(v: Vertex): Boolean = v.description match {
    case Aggregate(_, PythonOps(ops), _) => ops.exists(PythonAggregations.runsInPython)
    case RollingAggregate(_, op: PythonAggregateSpec) => PythonAggregations.runsInPython(op)
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
