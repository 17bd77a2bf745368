package io.jetspark.engine.spark.epoch

import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.eventtime.EventTimePolicy
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.window.{NonKeyed, SlidingWindowPolicy, SlidingWindowProcessor}
import io.jetspark.core.{ControlItem, ProcessorContext, Watermark}
import io.jetspark.engine.spark.rows.{InPlaceRows, PartialCodec, StageFailedException}
import io.jetspark.engine.spark.window.{TimedEvent, TypedWindow, WindowRunner}
import io.jetspark.item.Extracted
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.util.LongAccumulator

/** The first stage of a sliding or tumbling window that reads a streaming DataFrame's rows in the JVM
  * ([[SourceExtraction.rowsWindow]]), in every task of the micro-batch: Catalyst projects each row to its
  * key, time and values ([[TypedWindow]]), the core's `accumulateFrames` makes the task's frames of them,
  * and those cross to the window's second stage as the two-stage window's frames always do. No row becomes
  * a Python item, and the micro-batch is read in as many tasks as Spark gives it, not in one.
  *
  * The DataFrame is one substream, and its tasks are parts of it: each ends its frames with a control row
  * flagged as a part ([[EpochControl.part]]), its watermark the allowed lag behind its own highest time,
  * and the receiver takes the greatest of the parts' as the substream's. The stage keeps nothing between
  * epochs: every frame it makes leaves at the epoch's end, and the second stage, whose state holds the
  * frames of windows not yet complete, combines a frame's parts from several epochs. An event is late when
  * its frame was closed by the substream's watermark as of the epoch before (`watermarkBefore`): the
  * processor, given that watermark first, drops and counts it.
  */
final class RowsWindowStage(vertex: String, typed: TypedWindow, policy: SlidingWindowPolicy,
    op: AggregateOperation[Extracted, Any, Any], allowedLagMs: Long) extends Serializable {
  import RowsWindowStage.NullControl

  /** The frames of `batch`'s rows (rows of [[EpochEngine.FramesSchema]]), each task's ending with its
    * control row. Each task adds the rows it read to `rowsRead`, its late drops to `late`, and its
    * watermark to `substreamWatermark` (under one partition, so that the greatest of the parts is kept).
    */
  def run(batch: DataFrame, epoch: Long, watermarkBefore: Long, rowsRead: LongAccumulator, late: LongAccumulator,
      substreamWatermark: LatestPerPartition): RDD[InternalRow] = {
    val rows = InPlaceRows.of(typed.project(batch))
    val (name, total, window, events, codec) = (vertex, rows.getNumPartitions, policy, typed.events, new PartialCodec(vertex))
    val operation = AggregateOperations.mapping((e: TimedEvent) => e.event)(op)
    val keyOf: TimedEvent => Any = if (typed.key.isDefined) _.event.key else _ => NonKeyed
    val watermarkOf = EventTimePolicy[Any](_ => 0L, allowedLagMs).watermarkFor _
    rows.mapPartitionsWithIndex { (partition, partitionRows) =>
      val processor = SlidingWindowProcessor.accumulateFrames(window, keyOf, (e: TimedEvent) => e.ts, operation)
      var (count, highest) = (0L, Long.MinValue)
      val read = partitionRows.map { row =>
        val event = events(row)
        count += 1
        if (event.ts > highest) highest = event.ts
        event
      }
      val before = if (watermarkBefore == Long.MinValue) Iterator.empty else Iterator.single(Watermark(watermarkBefore))
      val frames = StageFailedException.namingOwnErrors(name, before ++ read)(
        ProcessorTasklet(processor, ProcessorContext(name, partition, total), _)).filterNot(_.isInstanceOf[ControlItem])
      WindowRunner.packFrames(codec)(frames).map(r => new JoinedRow(r, NullControl): InternalRow) ++ Iterator.single(()).map { _ =>
        rowsRead.add(count)
        late.add(processor.lateEventsDropped)
        val watermark = if (count == 0) Long.MinValue else watermarkOf(highest)
        if (count > 0) substreamWatermark.add((0, watermark, watermark))
        val ctl = new GenericInternalRow(EpochEngine.FramesSchema.length)
        ctl.update(EpochEngine.FramesSchema.length - 1, EpochControl(partition, epoch, watermark, done = false, part = true).encode)
        ctl: InternalRow
      }
    }
  }
}

private object RowsWindowStage {
  private val NullControl: InternalRow = new GenericInternalRow(Array[Any](null))
}
