package io.jetspark.engine.spark.epoch

import io.jetspark.core.eventtime.{WatermarkCoalescer, WatermarkCoalescerState}
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.snapshot.{SnapshotEntry, SnapshotFormat}
import io.jetspark.core.{ControlItem, Processor, ProcessorContext, Watermark}
import io.jetspark.engine.spark.rows.StageFailedException
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.jetspark.SqlBridge.PartitionState
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable.ArrayBuffer

/** One epoch of a stateful vertex: in every partition, one processor instance that starts from the state
  * the partition committed in the epoch before, takes the epoch's items, then the watermark its senders'
  * control rows coalesce to, and commits its state as the next version ([[SqlBridge.withPartitionState]]).
  *
  * Input rows are data rows, and one [[EpochControl]] row (`ctl` at column `ctlAt`, the rest null) from
  * each of the `senders` upstream tasks: the epoch's barrier. Every data row of the epoch reaches the
  * processor before the watermark does: watermarks move at epoch ends, and an item is late when a window
  * it belongs to was closed by the watermark of an epoch before its own (docs/streaming.md). A missing or
  * foreign control row fails the epoch, naming the vertex, before anything is committed.
  *
  * When every sender is done, the processor completes (Jet's `complete()`: what it holds is emitted); else
  * it emits what it emits when no input waits (`tryProcess()`: a window's early results) and saves a
  * snapshot. Either way the partition's output ends with its own control row: the highest
  * watermark the processor has emitted, and whether it is done.
  *
  * @param toRows the processor's output items (watermarks taken out) as rows of `width` columns, the
  *               last one (`ctl`) left for the control row
  */
final class EpochStage(
    vertex: String,
    newProcessor: () => Processor,
    toItems: Iterator[InternalRow] => Iterator[Any],
    toRows: Iterator[Any] => Iterator[InternalRow],
    width: Int,
    lateEvents: Processor => Long = _ => 0L,
) extends Serializable {
  import EpochStage._

  /** `input` through the stage in `epoch` of the job whose state lives under `checkpointRoot`
    * (`operatorId` is the vertex's number in the plan). `late`, where given, counts the events it drops as late.
    */
  def run(spark: SparkSession, input: RDD[InternalRow], ctlAt: Int, senders: Int, epoch: EpochRun, operatorId: Int,
      late: Option[LongAccumulator]): RDD[InternalRow] = {
    val (name, create, items, rows, columns, lateOf) = (vertex, newProcessor, toItems, toRows, width, lateEvents)
    val total = input.getNumPartitions
    val epochId = epoch.id
    SqlBridge.withPartitionState(spark, input, epoch.stateRoot, epoch.runId, operatorId, epochId) { (state, partitionRows) =>
      val partition = org.apache.spark.TaskContext.getPartitionId()
      val (restored, own) = loaded(state)
      val controls = ArrayBuffer.empty[EpochControl]
      val data = partitionRows.filter { row =>
        if (row.isNullAt(ctlAt)) true
        else { controls += EpochControl.decode(row.getBinary(ctlAt)); false }
      }
      var last = false
      var coalesced = own.coalesced
      val closing = Iterator.single(()).flatMap { _ =>
        val coalescer = closingCoalescer(name, partition, epochId, controls.toSeq, senders, own.coalesced)
        coalesced = coalescer.lastEmitted
        last = controls.forall(_.done)
        if (coalesced > own.coalesced) Iterator.single(Watermark(coalesced)) else Iterator.empty
      }
      val processor = create()
      var tasklet: ProcessorTasklet = null
      val emitted = StageFailedException.namingOwnErrors(name, items(data) ++ closing) { in =>
        tasklet = new ProcessorTasklet(processor, ProcessorContext(name, partition, total), IndexedSeq(in), Seq(Seq(0)),
          restored = restored, atEnd = () => if (last) ProcessorTasklet.Complete else ProcessorTasklet.SaveSnapshot)
        tasklet
      }
      val lateBefore = lateOf(processor)
      var sent = own.sent
      val output = emitted.filter {
        case Watermark(wm) => sent = math.max(sent, wm); false
        case _: ControlItem => false // an idle substream's message: idleness does not travel yet (docs/streaming.md)
        case _ => true
      }
      val control = Iterator.single(()).flatMap { _ =>
        val entries = if (last) Nil else tasklet.snapshot
        state.commit(SnapshotFormat.encode(entries :+ SnapshotEntry(StateKey, Own(coalesced, sent))))
        late.foreach(_.add(lateOf(processor) - lateBefore))
        val ctl = new GenericInternalRow(columns)
        ctl.update(columns - 1, EpochControl(partition, epochId, sent, last).encode)
        Iterator.single(ctl: InternalRow)
      }
      rows(output).map(r => new JoinedRow(r, NullControl): InternalRow) ++ control
    }
  }
}

object EpochStage {
  /** The key of what the stage itself keeps beside its processor's entries. */
  case object StateKey
  /** The watermark the stage's senders had coalesced to, and the highest one it sent on. */
  final case class Own(coalesced: Long, sent: Long)

  private val NullControl: InternalRow = new GenericInternalRow(Array[Any](null))

  /** The processor's entries and the stage's own state, from the version the epoch before committed. */
  private def loaded(state: PartitionState): (Seq[SnapshotEntry], Own) = state.load() match {
    case None => (Nil, Own(Long.MinValue, Long.MinValue))
    case Some(bytes) =>
      val (own, entries) = SnapshotFormat.decode(bytes).partition(_.key == StateKey)
      (entries, own.head.value.asInstanceOf[Own])
  }

  /** The coalescer over the senders' control rows of epoch `epoch`, never below `floor`: one row from each
    * of `senders` distinct senders, or the epoch fails (a lost or repeated barrier).
    */
  private[epoch] def closingCoalescer(vertex: String, partition: Int, epoch: Long, controls: Seq[EpochControl], senders: Int,
      floor: Long): WatermarkCoalescer = {
    val fromSenders = controls.map(_.sender).distinct.sorted
    if (controls.size != senders || fromSenders.size != senders || controls.exists(_.epoch != epoch))
      throw new IllegalStateException(s"vertex '$vertex', partition $partition, epoch $epoch: expected one control row " +
        s"(the epoch's barrier) from each of $senders upstream tasks, got ${controls.map(c => s"${c.sender}@${c.epoch}").mkString("[", ", ", "]")}")
    val coalescer = new WatermarkCoalescer(senders)
    coalescer.restore(WatermarkCoalescerState(floor))
    controls.foreach { c =>
      val input = fromSenders.indexOf(c.sender)
      if (c.done) coalescer.observeDone(input) else coalescer.observeWatermark(input, c.watermark)
    }
    coalescer
  }
}
