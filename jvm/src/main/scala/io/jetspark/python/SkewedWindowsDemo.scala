package io.jetspark.python

import io.jetspark.core.ProcessorContext
import io.jetspark.core.aggregate.AggregateOperations
import io.jetspark.core.eventtime.{EventTimePolicy, InsertWatermarksProcessor, SubstreamItem}
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy, SlidingWindowProcessor}
import org.apache.spark.sql.SparkSession

/** The jetspark side of the main job (`python -m jetspark.demo`): sliding-window counts per sensor over
  * readings from several substreams, in the order the micro-batches deliver them, inside a Spark task.
  * The source assigns event time per substream and coalesces (the minimum over substreams), so a lagging
  * substream holds the watermark back instead of having its readings dropped as late.
  *
  * This runs the core processors directly, chained in one task; pipelines will reach the same processors
  * through the planner and the streaming engine.
  */
object SkewedWindowsDemo {
  final case class Reading(substream: Int, sensor: String, ts: Long)

  /** Returns one `Array(sensor, start, end, count)` per emitted window, then `Array("late", dropped)`. */
  def run(spark: SparkSession, substreams: Array[Int], sensors: Array[String], timestamps: Array[Long],
          sizeMs: Long, slideMs: Long, allowedLagMs: Long): java.util.List[Array[Any]] = {
    val readings = substreams.indices.map(i => Reading(substreams(i), sensors(i), timestamps(i)))
    val substreamCount = substreams.max + 1
    val out = spark.sparkContext.parallelize(readings, numSlices = 1).mapPartitions { partition =>
      // Idle timeout off: the demo's substreams are never idle, and wall-clock time must not matter.
      val timestamps = EventTimePolicy[Reading](_.ts, allowedLagMs, idleTimeoutMs = 0, throttlingFrameSize = slideMs)
      val source = ProcessorTasklet(new InsertWatermarksProcessor(timestamps, substreamCount),
        ProcessorContext("readings", 0, 1), partition.map(r => SubstreamItem(r.substream, r)))
      val windows = SlidingWindowProcessor.singleStage(SlidingWindowPolicy(sizeMs, slideMs),
        (r: Reading) => r.sensor, (r: Reading) => r.ts, AggregateOperations.counting())
      val results = ProcessorTasklet(windows, ProcessorContext("windows", 0, 1), source).collect {
        case KeyedWindowResult(start, end, sensor, count, _) => Array[Any](sensor, start, end, count)
      }.toVector
      (results :+ Array[Any]("late", windows.lateEventsDropped)).iterator
    }.collect()
    java.util.Arrays.asList(out: _*)
  }
}
