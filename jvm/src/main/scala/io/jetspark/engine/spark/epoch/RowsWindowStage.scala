package io.jetspark.engine.spark.epoch

import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.eventtime.EventTimePolicy
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.window.{NonKeyed, SlidingWindowPolicy, SlidingWindowProcessor}
import io.jetspark.core.{ControlItem, ProcessorContext, Watermark}
import io.jetspark.engine.spark.rows.{InPlaceRows, PartialCodec, StageFailedException}
import io.jetspark.engine.spark.window.{TimedEvent, TypedWindow, WindowPath, WindowRunner}
import io.jetspark.item.Extracted
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.util.LongAccumulator

/** The first stage of a sliding or tumbling window that reads a streaming DataFrame's rows in the JVM
  * ([[SourceExtraction.rowsWindow]]), in every task of the micro-batch: Catalyst projects each row to its
  * key, time and values ([[TypedWindow]]), and the task makes frames of them on the window's `path`: the
  * core's `accumulateFrames`, whose frames go on as the two-stage window's always do, or columns of
  * numbers ([[io.jetspark.engine.spark.window.ColumnarFrames]], whose second stage is
  * [[ColumnarEpochCombine]]). No row becomes a Python item, and the micro-batch is read in as many tasks as
  * Spark gives it, not in one.
  *
  * The DataFrame is one substream, and its tasks are parts of it: each ends its frames with a control row
  * flagged as a part ([[EpochControl.part]]), its watermark the allowed lag behind its own highest time,
  * and the receiver takes the greatest of the parts' as the substream's. The stage keeps nothing between
  * epochs: every frame it makes leaves at the epoch's end, and the second stage, whose state holds the
  * frames of windows not yet complete, combines a frame's parts from several epochs. An event is late when
  * its frame was closed by the substream's watermark as of the epoch before (`watermarkBefore`): it is
  * dropped and counted here.
  */
final class RowsWindowStage(vertex: String, path: WindowPath, policy: SlidingWindowPolicy,
    op: AggregateOperation[Extracted, Any, Any], allowedLagMs: Long) extends Serializable {
  import EpochStage.NullControl

  /** The frames of `batch`'s rows, each task's ending with its control row: rows of [[EpochEngine.FramesSchema]]
    * on the core's path, of [[EpochEngine.ColumnarFramesSchema]] on the columnar one. Each task adds the rows
    * it read to `rowsRead`, its late drops to `late`, and its watermark to `substreamWatermark` (under one
    * partition, so that the greatest of the parts is kept).
    */
  def run(batch: DataFrame, epoch: Long, watermarkBefore: Long, rowsRead: LongAccumulator, late: LongAccumulator,
      substreamWatermark: LatestPerPartition): RDD[InternalRow] = {
    val watermarkOf = EventTimePolicy[Any](_ => 0L, allowedLagMs).watermarkFor _
    def control(partition: Int, read: Long, dropped: Long, highest: Long): InternalRow = {
      rowsRead.add(read)
      late.add(dropped)
      val watermark = if (read == 0) Long.MinValue else watermarkOf(highest)
      if (read > 0) substreamWatermark.add((0, watermark, watermark))
      val ctl = new GenericInternalRow(RowsWindowStage.Width)
      ctl.update(RowsWindowStage.Width - 1, EpochControl(partition, epoch, watermark, done = false, part = true).encode)
      ctl
    }
    path match {
      case WindowPath.Columnar(typed, frames) =>
        val (read, checkedByBatch) = InPlaceRows.checkedByBatch(typed.project(batch), typed.checked.batch)
        val rows = EpochSources.atLeastOneTask(read)
        val lateUpTo = if (watermarkBefore == Long.MinValue) Long.MinValue else policy.lastFrameAtOrBefore(watermarkBefore)
        frames.accumulated(policy, rows, checkedByBatch, lateUpTo, new JoinedRow(_, NullControl)) { (partition, task) =>
          Iterator.single(control(partition, task.read, task.late, task.highest))
        }
      case WindowPath.CoreOnRows(typed) => coreFrames(typed, batch, watermarkBefore)(control)
      case other => throw new IllegalStateException(s"vertex '$vertex': no first stage over rows on the path $other")
    }
  }

  /** The core's `accumulateFrames` over `batch`'s rows, given the watermark of the epoch before first, which
    * makes it drop and count the late events.
    */
  private def coreFrames(typed: TypedWindow, batch: DataFrame, watermarkBefore: Long)(
      control: (Int, Long, Long, Long) => InternalRow): RDD[InternalRow] = {
    val rows = EpochSources.atLeastOneTask(InPlaceRows.of(typed.project(batch)))
    val (name, total, window, events, codec) = (vertex, rows.getNumPartitions, policy, typed.events, new PartialCodec(vertex))
    val operation = AggregateOperations.mapping((e: TimedEvent) => e.event)(op)
    val keyOf: TimedEvent => Any = if (typed.key.isDefined) _.event.key else _ => NonKeyed
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
      WindowRunner.packFrames(codec)(frames).map(r => new JoinedRow(r, NullControl): InternalRow) ++
        Iterator.single(()).map(_ => control(partition, count, processor.lateEventsDropped, highest))
    }
  }
}

private object RowsWindowStage {
  /** Both paths' rows: a key and its frames in two columns, and the control row's bytes. */
  private val Width = 4
}
