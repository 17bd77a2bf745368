package io.jetspark.pipeline

import scala.jdk.CollectionConverters._

import io.jetspark.pipeline.definition.SinkDefinition

/** The built-in sinks (API.md, "Sinks"). */
object Sinks {
  /** A named list, read back with the session's `getList(name)`, items in arrival order. */
  def list(name: String): SinkDefinition = SinkDefinition("list", Map("name" -> name))
  def console(): SinkDefinition = SinkDefinition("console", Map.empty)
  def noop(): SinkDefinition = SinkDefinition("noop", Map.empty)

  /** `rows.write.format(format).mode(mode).options(options).save(path)`. Items that are not rows already
    * (Python values) become rows of `schema` (a DDL string such as `"id INT, name STRING"`, or Spark's JSON
    * of a type), or of the schema inferred from the items when it is None; a record that does not fit
    * fails the job, or goes to the sink stage's `onError` dead-letter sink.
    */
  def files(path: String, format: String, mode: String, options: Map[String, String], schema: Option[String]): SinkDefinition =
    SinkDefinition("files", Map[String, Any]("path" -> path, "format" -> format, "mode" -> mode) ++
      (if (options.isEmpty) Map.empty else Map("options" -> options)) ++ schema.map("schema" -> _))
  def files(path: String, format: String, mode: String): SinkDefinition = files(path, format, mode, Map.empty[String, String], None)
  def files(path: String, format: String): SinkDefinition = files(path, format, "append")
  def files(path: String): SinkDefinition = files(path, "parquet")

  /** Records to Kafka topic `topic`, written by Spark's connector with its `options`: each item one record,
    * its key and value made of it by Python functions (`key`, `value`: [[PythonRef]]s; without `key`, no key;
    * without `value`, the item itself as bytes, UTF-8 text or JSON). At least once: a batch written again
    * writes its records again; a stream's epochs under EXACTLY_ONCE go out in Kafka transactions.
    */
  def kafka(bootstrapServers: String, topic: String, options: Map[String, String], key: Option[AnyRef],
      value: Option[AnyRef]): SinkDefinition =
    SinkDefinition("kafka", Map[String, Any]("bootstrapServers" -> bootstrapServers, "topic" -> topic, "options" -> options) ++
      key.map("key" -> _) ++ value.map("value" -> _))
  def kafka(bootstrapServers: String, topic: String, options: Map[String, String]): SinkDefinition =
    kafka(bootstrapServers, topic, options, None, None)
  def kafka(bootstrapServers: String, topic: String, options: java.util.Map[String, String]): SinkDefinition =
    kafka(bootstrapServers, topic, options.asScala.toMap)
  def kafka(bootstrapServers: String, topic: String): SinkDefinition = kafka(bootstrapServers, topic, Map.empty[String, String])

  /** `fn(dataframe, batchId)` per micro-batch; `fn` is held opaquely (a Scala function or a Python callable). */
  def foreachBatch(fn: AnyRef): SinkDefinition = SinkDefinition("foreachBatch", Map("fn" -> fn))
  /** The same, the items made rows of `schema` as for [[files]]. */
  def foreachBatch(fn: AnyRef, schema: Option[String]): SinkDefinition =
    SinkDefinition("foreachBatch", Map("fn" -> fn) ++ schema.map("schema" -> _))

  /** Records a user function failed on, with their errors; attach with `stage.onError(...)`. */
  def deadLetter(name: String): SinkDefinition = SinkDefinition("deadLetter", Map("name" -> name))
}
