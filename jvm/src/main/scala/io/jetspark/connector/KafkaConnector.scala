package io.jetspark.connector

import org.apache.spark.sql.functions.{col, concat_ws, unix_millis}
import org.apache.spark.sql.types._
import org.apache.spark.sql.{Column, DataFrame, SparkSession}

/** Kafka through Spark's own connector (`spark-sql-kafka-0-10`, which the wheel bundles: docs/kafka.md):
  * a source's records as a streaming DataFrame, a sink's rows written per batch. The connector keeps a
  * source's offsets in the query's checkpoint, so a resumed job goes on from there; a source commits
  * nothing to a consumer group (an exactly-once sink does: [[KafkaTransactions]]).
  */
object KafkaConnector {
  /** What a record is made of: the connector's columns, its timestamp as ms since the epoch (exact, and in
    * no time zone, as a Python datetime would not be).
    */
  val RecordSchema: StructType = StructType(Seq(StructField("key", BinaryType), StructField("value", BinaryType),
    StructField("topic", StringType), StructField("partition", IntegerType), StructField("offset", LongType),
    StructField("timestamp", LongType)))

  /** A record's substream: its topic's partition, as "topic/partition". */
  val Substream: Column = concat_ws("/", col("topic"), col("partition").cast(StringType))

  /** The records of `topic` (as `subscription` says) from the brokers `bootstrapServers`, with the
    * connector's `options`, as a streaming DataFrame of [[RecordSchema]].
    */
  def stream(spark: SparkSession, bootstrapServers: String, subscription: String, topic: String,
      options: Map[String, String]): DataFrame = {
    requireConnector("source")
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrapServers).option(subscription, topic)
      .options(options).load()
      .select(RecordSchema.fieldNames.toSeq.map(c => if (c == "timestamp") unix_millis(col(c)).as(c) else col(c)): _*)
  }

  /** Writes `rows` (`key` and `value`, binary) to `topic`: each row is one record, sent by the tasks that
    * compute them; a record is written again when its batch is.
    */
  def write(rows: DataFrame, bootstrapServers: String, topic: String, options: Map[String, String]): Unit = {
    requireConnector("sink")
    rows.write.format("kafka").option("kafka.bootstrap.servers", bootstrapServers).option("topic", topic)
      .options(options).save()
  }

  /** Fails, saying how to add it, where Spark's Kafka connector (and its Kafka client) is not on the
    * classpath: a Kafka `what` ("source", "sink") needs it.
    */
  def requireConnector(what: String): Unit =
    try Class.forName("org.apache.spark.sql.kafka010.KafkaSourceProvider", false, Thread.currentThread.getContextClassLoader)
    catch {
      case _: ClassNotFoundException => throw new IllegalStateException(
        s"a Kafka $what needs Spark's Kafka connector on the classpath: a session jetspark starts has the jars its " +
          "wheel bundles (jetspark/jars/kafka); under spark-submit, pass them with --jars (docs/kafka.md)")
    }
}
