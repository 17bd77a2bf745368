package io.jetspark.engine.spark.epoch

import org.apache.spark.api.java.function.VoidFunction2
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.apache.spark.sql.{DataFrame, Dataset, Row}

import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}
import scala.concurrent.Promise

/** A stream pipeline running on Spark: Structured Streaming drives the micro-batches of `stream` (the
  * stream source's DataFrame) and each one is an epoch of `engine`. Its query keeps its offsets under
  * `checkpointDir`; the query stops once an epoch finds the stream complete, or when cancelled.
  */
final class StreamingJob(engine: EpochEngine, stream: DataFrame, checkpointDir: String, triggerIntervalMs: Long, name: String) {
  private val completed = Promise[Unit]()
  private val cancelled = new AtomicBoolean(false)
  private val epochs = new AtomicLong(0)
  @volatile private var watermark = Long.MinValue

  private val query: StreamingQuery = stream.writeStream
    .queryName(name)
    .option("checkpointLocation", s"$checkpointDir/query")
    .trigger(Trigger.ProcessingTime(triggerIntervalMs))
    .foreachBatch(new VoidFunction2[Dataset[Row], java.lang.Long] {
      override def call(batch: Dataset[Row], epochId: java.lang.Long): Unit = if (!completed.isCompleted) {
        val outcome = engine.runEpoch(batch, epochId)
        epochs.incrementAndGet()
        watermark = outcome.watermark
        if (outcome.complete) completed.trySuccess(())
      }
    })
    .start()

  /** Waits until the stream is complete (true), the job was cancelled (false) or the query failed (its
    * error); the query is stopped then.
    */
  def awaitCompletion(): Boolean = {
    try {
      while (!completed.isCompleted && !cancelled.get && query.isActive) query.awaitTermination(20)
      query.exception.foreach(e => throw e)
      completed.isCompleted
    } finally { query.stop(); engine.close() }
  }

  def cancel(): Unit = { cancelled.set(true); query.stop() }

  /** The job's progress so far, as JSON: `{"epochs", "watermark" (the sinks' coalesced input watermark,
    * null before the first), "late_events_dropped" (all windows), "vertices": {window or sink:
    * {"late_events_dropped"} or {"items_in"}}}`.
    */
  def metricsJson(): String = {
    val mapper = new com.fasterxml.jackson.databind.ObjectMapper()
    val node = mapper.createObjectNode().put("epochs", epochs.get)
    if (watermark == Long.MinValue) node.putNull("watermark") else node.put("watermark", watermark)
    node.put("late_events_dropped", engine.lateEvents.values.map(_.sum.toLong).sum)
    val vertices = node.putObject("vertices")
    engine.lateEvents.foreach { case (v, acc) => vertices.putObject(v).put("late_events_dropped", acc.sum) }
    engine.sinkItems.foreach { case (v, acc) => vertices.putObject(v).put("items_in", acc.sum) }
    mapper.writeValueAsString(node)
  }
}
