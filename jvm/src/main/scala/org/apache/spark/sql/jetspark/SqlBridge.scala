package org.apache.spark.sql.jetspark

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
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

  /** A DataFrame over rows that processors produced, without converting them to external Rows. */
  def internalCreateDataFrame(spark: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    spark.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)
}
