package org.apache.spark.sql.jetspark

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
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

  /** `df` over other rows of its own attributes, as a checkpoint is: a column resolved against `df` (the
    * user's `df.k`) resolves against it too, where a DataFrame made anew would have new attributes. (Its
    * hidden metadata columns, a file source's `_metadata`, do not: they are not among the rows.)
    */
  def withRows(df: DataFrame, rows: RDD[InternalRow]): DataFrame = {
    val session = df.sparkSession.asInstanceOf[classic.SparkSession]
    classic.Dataset.ofRows(session, LogicalRDD(df.queryExecution.analyzed.output, rows)(session))
  }

  /** A DataFrame over rows that processors produced, without converting them to external Rows. */
  def internalCreateDataFrame(spark: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    spark.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)
}
