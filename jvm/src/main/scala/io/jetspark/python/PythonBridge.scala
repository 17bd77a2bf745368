package io.jetspark.python

import io.jetspark.JetSparkVersion
import org.apache.spark.sql.SparkSession

/** The one JVM surface that the Python package calls through py4j. Everything Python needs goes
  * through here, in few calls: a py4j round trip costs about a millisecond.
  */
object PythonBridge {

  /** The jar's version; Python compares it with its own to catch a stale jar. */
  def version(): String = JetSparkVersion.current

  /** Runs one task per partition that loads this jar's classes on an executor and reports the version
    * it found there: proof that `spark.jars` / `--jars` reached the executors, not only the driver.
    */
  def executorVersions(spark: SparkSession, partitions: Int): Array[String] =
    spark.sparkContext
      .parallelize(0 until partitions, partitions)
      .map(_ => JetSparkVersion.current)
      .collect()
}
