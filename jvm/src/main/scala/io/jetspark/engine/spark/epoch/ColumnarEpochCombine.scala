package io.jetspark.engine.spark.epoch

import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy, WindowResult}
import io.jetspark.engine.spark.rows.StageFailedException
import io.jetspark.engine.spark.window.{ColumnarFrames, FrameRun, WindowRunner}
import io.jetspark.item.PickledKey
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.JoinedRow
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** The second stage of a window whose frames are columns ([[ColumnarFrames]]), in a stream's epochs: in each
  * partition, the frames of windows not yet complete, kept from the epoch before as each key's packed run,
  * merged with the epoch's frames from every task of stage 1 ([[RowsWindowStage]]); then the windows the
  * coalesced watermark completes, sliding over them as the batch's second stage does ([[FrameSlide.windows]]),
  * and the frames that windows still to come hold kept as the next version of the state, around the
  * partition's barrier and commit ([[EpochPartition]]).
  *
  * Frames of windows already emitted that still arrive (stage 1 drops late events by the watermark of the
  * epoch before, which it knows unless the driver restarted) are late here: dropped and counted as frames,
  * as the core's second stage counts them. Rows: in (key, frames, rows, ctl) per key and sending task; out
  * each window's result (its pickle, or where `unread` an empty item) with its time `end - 1`, and the
  * partition's control row.
  */
final class ColumnarEpochCombine(vertex: String, frames: ColumnarFrames, policy: SlidingWindowPolicy, keyed: Boolean,
    unread: Boolean) extends Serializable {
  import ColumnarEpochCombine._
  import EpochStage.NullControl

  def run(spark: SparkSession, input: RDD[InternalRow], senders: Int, epoch: EpochRun, operatorId: Int,
      stateSize: LatestPerPartition, late: LongAccumulator): RDD[InternalRow] = {
    val (name, columnar, window, isKeyed, noReader) = (vertex, frames, policy, keyed, unread)
    val epochId = epoch.id
    SqlBridge.withPartitionState(spark, input, epoch.stateRoot, epoch.runId, operatorId, epochId) { (state, rows) =>
      val partition = new EpochPartition(name, TaskContext.getPartitionId(), epochId, senders, state, InCtlAt, stateSize)
      val kept = partition.restored.collectFirst { case SnapshotEntry(KeptKey, k: Kept) => k }.getOrElse(Kept.Nothing)
      val before = new java.util.LinkedHashMap[PickledKey, (Array[Byte], Array[Byte])]()
      kept.runs.foreach { case (key, frameBytes, rowBytes) => before.put(new PickledKey(key), frameBytes -> rowBytes) }
      val arrived = new java.util.LinkedHashMap[PickledKey, ArrayBuffer[(Array[Byte], Array[Byte])]]()
      partition.data(rows).foreach { row =>
        val key = new PickledKey(row.getBinary(0))
        var runs = arrived.get(key)
        if (runs == null) { runs = ArrayBuffer.empty; arrived.put(key, runs) }
        runs += row.getBinary(1) -> row.getBinary(2) // (Spark reuses the row; its binaries are copies)
      }
      partition.close()
      val closedUpTo = if (partition.done) Long.MaxValue
        else if (partition.coalesced == Long.MinValue) Long.MinValue else window.lastFrameAtOrBefore(partition.coalesced)
      val upTo = math.max(kept.emittedUpTo, closedUpTo)
      val framesPerWindow = window.size / window.slide
      // The windows to emit: those after the last one emitted, up to `upTo`.
      val from = if (kept.emittedUpTo == Long.MinValue) Long.MinValue else kept.emittedUpTo + 1
      val next = ArrayBuffer.empty[(Array[Byte], Array[Byte], Array[Byte])]
      var lateFrames = 0L
      val keys = (before.keySet().iterator().asScala ++ arrived.keySet().iterator().asScala).distinct
      val results = keys.flatMap { key =>
        val earlier = Option(before.get(key)).map(columnar.wire.unpacked)
        val now = Option(arrived.get(key)).map { runs =>
          val run = columnar.wire.merged(runs, 0, runs.length)
          val closed = if (kept.emittedUpTo == Long.MinValue) 0 else run.upTo(kept.emittedUpTo)
          lateFrames += closed
          if (closed == 0) run else run.from(closed)
        }
        val run: FrameRun = (earlier ++ now).reduce(columnar.wire.merged(_, _))
        // Frames that a window after `upTo` holds stay for the epochs to come.
        val stays = if (upTo == Long.MaxValue) run.size else if (upTo == Long.MinValue) 0 else run.upTo(upTo - framesPerWindow)
        if (stays < run.size) {
          val packed = columnar.wire.packed(key.bytes, run, stays)
          next += ((key.bytes, packed.getBinary(1), packed.getBinary(2)))
        }
        columnar.frameSlide.windows(run, window, Some((end: Long, result: Any) => {
          val item = if (noReader) Array.emptyByteArray
            else WindowRunner.resultPickle(columnar.resultItems(
              if (isKeyed) KeyedWindowResult(end - window.size, end, key, result) else WindowResult(end - window.size, end, result)))
          InternalRow(item, end - 1)
        }), from, upTo)
      }
      val out = StageFailedException.namingOwnErrors(name, results)(identity).map(r => new JoinedRow(r, NullControl): InternalRow)
      out ++ Iterator.single(()).map { _ =>
        late.add(lateFrames)
        partition.commit(Seq(SnapshotEntry(KeptKey, Kept(upTo, next.toArray))),
          math.max(partition.sentBefore, partition.coalesced), OutWidth)
      }
    }
  }
}

object ColumnarEpochCombine {
  private val InCtlAt = 3
  private val OutWidth = 3

  /** The key of the stage's own state entry. */
  case object KeptKey

  /** What a partition keeps: the last window it emitted (counted in slides; `Long.MinValue`: none), and per
    * key (its pickle) the frames windows still to come hold, packed as stage 1 packs them.
    */
  final case class Kept(emittedUpTo: Long, runs: Array[(Array[Byte], Array[Byte], Array[Byte])])

  object Kept {
    val Nothing: Kept = Kept(Long.MinValue, Array.empty)
  }
}
