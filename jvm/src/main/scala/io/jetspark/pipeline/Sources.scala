package io.jetspark.pipeline

import scala.jdk.CollectionConverters._

import io.jetspark.pipeline.definition.{BatchSource, StreamSource}

/** The built-in sources (API.md, "Sources"). */
object Sources {

  /** The given items, in that order, as one substream. */
  def items(items: Seq[Any]): BatchSource = BatchSource("items", Map("items" -> items.toVector), Some(1))
  def items(items: java.util.List[_]): BatchSource = this.items(items.asScala.toSeq)

  /** A batch Spark DataFrame, held opaquely. The Python layer calls [[streamingDataframe]] instead when
    * `df.isStreaming` (in Scala the stage kind must be known statically).
    */
  def dataframe(df: AnyRef): BatchSource = BatchSource("dataframe", Map("dataframe" -> df), None)

  /** A streaming Spark DataFrame, held opaquely: one substream, or, with `substream`, one per distinct
    * value of that column.
    */
  def streamingDataframe(df: AnyRef, substream: Option[String]): StreamSource =
    StreamSource("dataframe", Map("dataframe" -> df) ++ substream.map("substream" -> _), None)
  def streamingDataframe(df: AnyRef): StreamSource = streamingDataframe(df, None)
  def streamingDataframe(df: AnyRef, substream: String): StreamSource = streamingDataframe(df, Some(substream))

  /** `spark.read.format(format)` with the options, from `path`. */
  def files(path: String, format: String, options: Map[String, String]): BatchSource =
    BatchSource("files", Map("path" -> path, "format" -> format) ++ options, None)
  def files(path: String, format: String, options: java.util.Map[String, String]): BatchSource =
    files(path, format, options.asScala.toMap)
  def files(path: String, format: String): BatchSource = files(path, format, Map.empty[String, String])
  def files(path: String): BatchSource = files(path, "parquet")

  /** A finite stream: each partition is one substream delivered in its order, `itemsPerBatch` items of
    * each substream per micro-batch.
    */
  def itemsStream(partitions: Seq[Seq[Any]], itemsPerBatch: Int): StreamSource = {
    if (itemsPerBatch <= 0) throw new IllegalArgumentException(s"itemsPerBatch must be positive, was $itemsPerBatch")
    StreamSource("itemsStream", Map("partitions" -> partitions.map(_.toVector).toVector, "itemsPerBatch" -> itemsPerBatch),
      Some(partitions.size max 1))
  }
  def itemsStream(partitions: java.util.List[java.util.List[_]], itemsPerBatch: Int): StreamSource =
    itemsStream(partitions.asScala.toSeq.map(_.asScala.toSeq), itemsPerBatch)

  /** An unbounded stream of `SimpleEvent(timestamp, sequence)` at a fixed rate. */
  def rateStream(itemsPerSecond: Long, partitions: Int): StreamSource = {
    if (itemsPerSecond <= 0) throw new IllegalArgumentException(s"itemsPerSecond must be positive, was $itemsPerSecond")
    if (partitions <= 0) throw new IllegalArgumentException(s"partitions must be positive, was $partitions")
    StreamSource("rateStream", Map("itemsPerSecond" -> itemsPerSecond, "partitions" -> partitions), Some(partitions))
  }
  def rateStream(itemsPerSecond: Long): StreamSource = rateStream(itemsPerSecond, 1)

  /** How a Kafka source subscribes: to topics named in a comma-separated list, or to those a pattern matches
    * (the options of Spark's connector that say so).
    */
  val KafkaSubscriptions: Set[String] = Set("subscribe", "subscribePattern")

  /** Kafka records (`key, value, topic, partition, offset, timestamp`) of the topics `topic` names (a
    * comma-separated list, or with `subscription` "subscribePattern" a pattern), read by Spark's connector
    * with its `options`; each partition is a substream. How Python makes a key and a value of their bytes:
    * a deserializer's name ("bytes", "string", "json") or a [[PythonRef]] to a function.
    */
  def kafka(bootstrapServers: String, topic: String, subscription: String, options: Map[String, String],
      keyDeserializer: Any, valueDeserializer: Any): StreamSource = {
    if (!KafkaSubscriptions(subscription))
      throw new IllegalArgumentException(s"a Kafka source subscribes by ${KafkaSubscriptions.mkString(" or ")}, not $subscription")
    StreamSource("kafka", Map("bootstrapServers" -> bootstrapServers, "topic" -> topic, "subscription" -> subscription,
      "options" -> options, "keyDeserializer" -> keyDeserializer, "valueDeserializer" -> valueDeserializer), None)
  }
  def kafka(bootstrapServers: String, topic: String, options: Map[String, String]): StreamSource =
    kafka(bootstrapServers, topic, "subscribe", options, "bytes", "bytes")
  def kafka(bootstrapServers: String, topic: String, options: java.util.Map[String, String]): StreamSource =
    kafka(bootstrapServers, topic, options.asScala.toMap)
  def kafka(bootstrapServers: String, topic: String): StreamSource = kafka(bootstrapServers, topic, Map.empty[String, String])
}
