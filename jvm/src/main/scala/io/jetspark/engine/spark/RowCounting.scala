package io.jetspark.engine.spark

import org.apache.spark.sql.functions.udf
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.util.LongAccumulator

/** Counts the rows of a typed DataFrame as they pass, for job metrics: a filter that keeps every row and
  * adds to accumulators. It is one Catalyst expression, so a plan that Catalyst runs stays whole (no
  * detour through an RDD); being nondeterministic, Catalyst neither drops nor moves it.
  */
object RowCounting {

  /** `df`, counting each row into `items`. */
  def counted(df: DataFrame, items: LongAccumulator): DataFrame =
    df.where(udf(() => { items.add(1); true }).asNondeterministic()())

  /** `df`, adding each row's `rows` column (a count of items it stands for) to `items` and the row itself
    * to `results`.
    */
  def countedGroups(df: DataFrame, rows: Column, items: Option[LongAccumulator], results: LongAccumulator): DataFrame =
    df.where(udf((n: Long) => { items.foreach(_.add(n)); results.add(1); true }).asNondeterministic()(rows))
}
