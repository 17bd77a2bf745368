package org.apache.spark.sql.jetspark

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.Project
import org.apache.spark.sql.execution.LogicalRDD
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.{Column, DataFrame, SparkSession, classic}

/** The few `private[sql]` Spark methods jetspark's engines need, reachable only from a package under
  * `org.apache.spark.sql`. Nothing else lives here, so an upgrade of Spark has one place to check.
  */
object SqlBridge {

  /** Applies a Python Arrow map UDF (built in Python with `SQL_MAP_ARROW_ITER_UDF` over named
    * columns) to `df`: how fused Python steps run in Spark's Python workers.
    */
  def mapInArrow(df: DataFrame, udf: Column): DataFrame =
    df.asInstanceOf[classic.Dataset[org.apache.spark.sql.Row]].mapInArrow(udf, false, null)

  /** `df` over other rows of its own attributes, `rowsOf` of what it reads: a column resolved against `df`
    * (the user's `df.k`) resolves against it too, where a DataFrame made anew would have new attributes.
    * So do its hidden metadata columns (a file source's `_metadata`), which a checkpoint would lose: where
    * `df` has any, `rowsOf` reads `df` with them after its columns, and they stay hidden behind them.
    */
  def withRows(df: DataFrame, rowsOf: DataFrame => RDD[InternalRow]): DataFrame = {
    val session = df.sparkSession.asInstanceOf[classic.SparkSession]
    val analyzed = df.queryExecution.analyzed
    val hidden = analyzed.metadataOutput
    if (hidden.isEmpty) classic.Dataset.ofRows(session, LogicalRDD(analyzed.output, rowsOf(df))(session))
    else {
      val widened = classic.Dataset.ofRows(session, Project(analyzed.output ++ hidden, analyzed))
      val over = Project(analyzed.output, LogicalRDD(analyzed.output ++ hidden, rowsOf(widened))(session))
      over.setTagValue(Project.hiddenOutputTag, hidden)
      classic.Dataset.ofRows(session, over)
    }
  }

  /** A DataFrame over rows that processors produced, without converting them to external Rows. */
  def internalCreateDataFrame(spark: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    spark.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)
}
