package io.jetspark.engine.spark

import org.apache.spark.sql.SparkSession

/** One small local Spark for every JVM suite that needs one, bound to loopback. */
object SharedSparkSession {
  lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName("jetspark-jvm-tests")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
}
