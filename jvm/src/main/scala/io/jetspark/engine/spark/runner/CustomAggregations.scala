package io.jetspark.engine.spark.runner

import io.jetspark.engine.spark.rows.RowSchemas.Key
import io.jetspark.plan.VertexDescription.Aggregate
import io.jetspark.plan.{AggregationStage, Vertex}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, lit}

/** Aggregations with a user-defined aggregate operation (`AggregateOperation.of(create, accumulate, ...)`
  * in Python) on the Spark batch engine, windows included. Its functions are Python's, so each vertex of
  * such an aggregation is one Arrow UDF (python/jetspark/worker/custom_aggregations.py, and worker/custom_windows.py for
  * windows; named `custom:<vertex>`; what each runs: [[io.jetspark.item.CustomAggregationWork]]) over the items that the vertex's input extraction gave their key and
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

  /** The column that tells a row's input when an aggregation has two. */
  val Ordinal = "ordinal"

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
