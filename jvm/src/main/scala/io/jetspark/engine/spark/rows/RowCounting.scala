package io.jetspark.engine.spark.rows

import org.apache.spark.sql.api.java.{UDF0, UDF1}
import org.apache.spark.sql.functions.udf
import org.apache.spark.sql.types.BooleanType
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.util.LongAccumulator

/** Counts the rows of a typed DataFrame as they pass, for job metrics: a condition that keeps every row and
  * adds to accumulators. It is one Catalyst expression, so a plan that Catalyst runs stays whole (no
  * detour through an RDD); being nondeterministic, Catalyst neither drops nor moves it as a filter, but
  * as part of a projected column it counts only where that column is read. (Java UDF
  * interfaces: the Scala ones reflect on type tags, which costs more than planning a job.)
  */
object RowCounting {

  /** `df`, counting each row into `items`. */
  def counted(df: DataFrame, items: LongAccumulator): DataFrame = {
    val count: UDF0[java.lang.Boolean] = () => { items.add(1); true }
    df.where(udf(count, BooleanType).asNondeterministic()())
  }

  /** A condition over a column of group sizes that keeps every group, adding each group's size (the items
    * it stands for) to each of `items` and the group itself to each of `groups`.
    */
  def groups(items: Seq[LongAccumulator], groups: Seq[LongAccumulator]): Column => Column = {
    val count: UDF1[java.lang.Long, java.lang.Boolean] = n => { items.foreach(_.add(n)); groups.foreach(_.add(1)); true }
    udf(count, BooleanType).asNondeterministic()(_)
  }
}
