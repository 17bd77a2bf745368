package io.jetspark.engine.spark.epoch

import io.jetspark.core.snapshot.{SnapshotEntry, SnapshotFormat}
import io.jetspark.engine.spark.rows.EncounterPositions
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.jetspark.SqlBridge.PartitionState

import scala.collection.mutable.ArrayBuffer

/** What every partition of a stateful vertex does in an epoch around its own work, whoever does that work
  * (a JVM processor, [[EpochStage]]; a Python UDF, [[PythonEpochStage]]): it restores the version of its
  * state the epoch before committed, keeps the senders' control rows out of the data, checks them as the
  * epoch's barrier and coalesces their watermarks, then commits its state as the next version and ends its
  * output with its own control row (docs/streaming.md, "Stateful vertices"). The encounter positions of
  * the items it takes go on from where the epoch before stopped.
  *
  * @param ctlAt     where rows of the partition's input hold their `ctl` (null on data rows)
  * @param stateSize where the partition notes the size of the state it commits (job metrics)
  */
private[epoch] final class EpochPartition(vertex: String, val partition: Int, epoch: Long, senders: Int,
    state: PartitionState, ctlAt: Int, stateSize: LatestPerPartition) {
  import EpochPartition._

  private val (entries, own) = loaded(state)
  EncounterPositions.continueFrom(own.nextPosition)
  private val controls = ArrayBuffer.empty[EpochControl]
  private var coalescedTo = own.coalesced
  private var closed = false
  private var sendersIdle = false

  /** The entries of the work's state that the epoch before committed (none in the first epoch). */
  def restored: Seq[SnapshotEntry] = entries

  /** The highest watermark the partition sent on before this epoch. */
  def sentBefore: Long = own.sent

  /** The data rows among `rows`, the control rows kept aside as the barrier. */
  def data(rows: Iterator[InternalRow]): Iterator[InternalRow] = rows.filter { row =>
    if (row.isNullAt(ctlAt)) true
    else { controls += EpochControl.decode(row.getBinary(ctlAt)); false }
  }

  /** After the data: the watermark the senders coalesce to, where it rose in this epoch. Fails, naming the
    * vertex, unless exactly one control row of this epoch came from each sender.
    */
  def close(): Option[Long] = {
    val coalesced = EpochControl.barrier(vertex, partition, epoch, controls.toSeq, senders, own.coalesced)
    coalescedTo = coalesced.watermark
    sendersIdle = coalesced.idle
    closed = true
    if (coalescedTo > own.coalesced) Some(coalescedTo) else None
  }

  /** Every sender not done is idle (known once [[close]]d): the partition is idle downstream too. */
  def idle: Boolean = { require(closed, "the barrier is not closed yet"); sendersIdle }

  /** The watermark the senders coalesce to (known once [[close]]d), never below the epoch before's. */
  def coalesced: Long = { require(closed, "the barrier is not closed yet"); coalescedTo }

  /** Every sender is done (known once [[close]]d): nothing follows in any epoch. */
  def done: Boolean = { require(closed, "the barrier is not closed yet"); controls.forall(_.done) }

  /** Commits `work` (the work's state entries) and the partition's own as the next version; the control
    * row (of `width` columns, `ctl` last) that ends the partition's output, with `sent`, the highest
    * watermark it has sent on, and whether it is idle: its senders are ([[idle]]), or its work said it
    * is (`idleWork`: a source's substream that delivered nothing for the idle timeout).
    */
  def commit(work: Seq[SnapshotEntry], sent: Long, width: Int, idleWork: Boolean = false): InternalRow = {
    require(closed, "committed before the barrier closed")
    val snapshot = SnapshotFormat.encode(work :+ SnapshotEntry(StateKey, Own(coalescedTo, sent, EncounterPositions.upcoming())))
    state.commit(snapshot)
    InjectedTaskFailures.afterCommit(vertex, partition, epoch)
    stateSize.add((partition, epoch, snapshot.length.toLong))
    val ctl = new GenericInternalRow(width)
    ctl.update(width - 1, EpochControl(partition, epoch, sent, done, idle = !done && (sendersIdle || idleWork)).encode)
    ctl
  }
}

private[epoch] object EpochPartition {
  /** The key of what the partition itself keeps beside its work's entries. */
  case object StateKey
  /** The watermark the partition's senders had coalesced to, the highest one it sent on, and the encounter
    * position its task was to give next, from which the next epoch's items go on (ties break by them).
    */
  final case class Own(coalesced: Long, sent: Long, nextPosition: Long)

  private def loaded(state: PartitionState): (Seq[SnapshotEntry], Own) = state.load() match {
    case None => (Nil, Own(Long.MinValue, Long.MinValue, 0L))
    case Some(bytes) =>
      val (own, entries) = SnapshotFormat.decode(bytes).partition(_.key == StateKey)
      (entries, own.head.value.asInstanceOf[Own])
  }
}
