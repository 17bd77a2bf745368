package io.jetspark.engine.spark.epoch

import org.apache.hadoop.fs.Path
import org.apache.spark.api.java.function.VoidFunction2
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.apache.spark.sql.{Dataset, Row}

import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}
import scala.concurrent.Promise

/** A stream pipeline running on Spark: Structured Streaming drives the micro-batches of `sources` (the
  * stream sources' DataFrame) and each one is an epoch of `engine`. Its query keeps its offsets under
  * `checkpointDir`; the query stops once an epoch finds the stream complete, or when cancelled, and then
  * the sources let go of what they hold for it.
  *
  * A complete stream leaves a file `completed` in its checkpoint: a job started again on it has nothing
  * left to read, so it starts no query and completes at once, instead of waiting for a micro-batch that
  * never comes.
  */
final class StreamingJob(engine: EpochEngine, sources: StreamUnion, checkpointDir: String, triggerIntervalMs: Long, name: String) {
  private val completed = Promise[Unit]()
  private val cancelled = new AtomicBoolean(false)
  private val epochs = new AtomicLong(0)
  private val completingEpoch = new AtomicLong(-1)
  @volatile private var watermark = Long.MinValue
  private val completeMark = new Path(checkpointDir, "completed")
  private val fs = completeMark.getFileSystem(sources.stream.sparkSession.sparkContext.hadoopConfiguration)

  private val query: Option[StreamingQuery] = if (fs.exists(completeMark)) {
    watermark = Long.MaxValue
    completed.trySuccess(())
    None
  } else Some(sources.stream.writeStream
    .queryName(name)
    .option("checkpointLocation", s"$checkpointDir/query")
    .trigger(Trigger.ProcessingTime(triggerIntervalMs))
    .foreachBatch(new VoidFunction2[Dataset[Row], java.lang.Long] {
      override def call(batch: Dataset[Row], epochId: java.lang.Long): Unit = if (!completed.isCompleted) {
        val outcome = engine.runEpoch(sources.of(batch, _), epochId)
        epochs.incrementAndGet()
        watermark = outcome.watermark
        if (outcome.complete) { fs.create(completeMark, true).close(); completingEpoch.set(epochId); completed.trySuccess(()) }
      }
    })
    .start())

  /** Waits until the stream is complete (true), the job was cancelled (false) or the query failed (its
    * error); the query is stopped then.
    */
  def awaitCompletion(): Boolean = {
    try {
      query.foreach { q =>
        while (!completed.isCompleted && !cancelled.get && q.isActive) q.awaitTermination(20)
        q.exception.foreach(e => throw e)
        if (completed.isCompleted) letLastBatchCommit(q)
      }
      completed.isCompleted
    } finally { query.foreach(_.stop()); sources.release(); engine.close() }
  }

  /** Waits, a few seconds at most, until the query has committed the micro-batch that completed the
    * stream: stopped while it writes its commit log, it logs the interruption as an error, noise to a user
    * whose job succeeded. The output is written by then either way.
    */
  private def letLastBatchCommit(q: StreamingQuery): Unit = {
    val deadline = System.nanoTime() + 5_000_000_000L
    // A micro-batch's progress is reported once its commit log is written.
    def committed = Option(q.lastProgress).exists(_.batchId >= completingEpoch.get)
    while (q.isActive && !committed && System.nanoTime() < deadline) Thread.sleep(5)
  }

  def cancel(): Unit = { cancelled.set(true); query.foreach(_.stop()) }

  /** The job's progress so far, as JSON: `{"epochs", "watermark" (the sinks' coalesced input watermark,
    * null before the first), "watermark_lag_ms" (its lag behind the wall clock, while finite),
    * "late_events_dropped" (all windows), "typed_windows" (the windows that read the source's rows in the
    * JVM), "columnar_windows" (those of them whose frames are columns), and the figures of [[EpochMetrics.write]]}`.
    */
  def metricsJson(): String = {
    val mapper = new com.fasterxml.jackson.databind.ObjectMapper()
    val now = System.currentTimeMillis()
    val node = mapper.createObjectNode().put("epochs", epochs.get)
    if (watermark == Long.MinValue) node.putNull("watermark") else node.put("watermark", watermark)
    EpochMetrics.lag(now, watermark).foreach(node.put("watermark_lag_ms", _))
    node.put("late_events_dropped", engine.metrics.lateEvents.values.map(_.sum.toLong).sum)
    val typed = node.putArray("typed_windows")
    engine.typedWindows.foreach(typed.add)
    val columnar = node.putArray("columnar_windows")
    engine.columnarWindows.foreach(columnar.add)
    engine.metrics.write(node, now)
    mapper.writeValueAsString(node)
  }
}
