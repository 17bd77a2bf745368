package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, ProcessorContext}
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.{BroadcastKey, SnapshotEntry}

import scala.collection.mutable

/** What an aggregation processor saves per key: the accumulator of that key (or of the whole input). */
final case class AccumulatorSnapshot(acc: Any)

/** The accumulators of an aggregation processor, per grouping key, in first-encounter order; a
  * non-keyed processor keeps one accumulator under [[AccumulatorTable.Global]].
  *
  * Snapshot: one entry per key, `key -> AccumulatorSnapshot(acc)`, so that a restore on a partitioned
  * edge routes each key to the instance that now owns it. The global accumulator is saved under
  * [[AccumulatorTable.GlobalSnapshotKey]], which every instance receives on restore; only the instance
  * with global index 0 takes them (combining them when several instances saved one), so the restored
  * job holds each accumulated item exactly once. Entries for a key already present (partial
  * accumulators of one key from several instances of a first stage) are combined.
  */
private[processor] final class AccumulatorTable(op: AggregateOperation[Any, Any, Any]) {
  import AccumulatorTable._

  private val accs = mutable.LinkedHashMap.empty[Any, Any]

  def isEmpty: Boolean = accs.isEmpty
  def keys: Vector[Any] = accs.keysIterator.toVector
  def apply(key: Any): Any = accs(key)
  def remove(key: Any): Unit = { accs.remove(key); () }

  /** Replaces `key`'s accumulator by `update` of it (a fresh one when absent); returns the new one. */
  def update(key: Any)(update: Any => Any): Any = {
    val current = accs.getOrElseUpdate(key, op.create())
    val acc = update(current)
    // Mutable accumulators come back as themselves: one hash lookup per item then.
    if (acc.asInstanceOf[AnyRef] ne current.asInstanceOf[AnyRef]) accs.update(key, acc)
    acc
  }

  /** Ensures there is a global accumulator (the result of no input is still a result). */
  def ensureGlobal(): Unit = if (!accs.contains(Global)) accs.update(Global, op.create())

  def snapshotEntries: Vector[(Any, Any)] =
    accs.iterator.map { case (key, acc) => (if (key == Global) GlobalSnapshotKey else key, AccumulatorSnapshot(acc)) }.toVector

  def restore(entry: SnapshotEntry, context: ProcessorContext): Unit = {
    val acc = entry.value match {
      case AccumulatorSnapshot(a) => a
      case other => throw new IllegalStateException(s"not an aggregation snapshot entry: $other")
    }
    entry.key match {
      case GlobalSnapshotKey => if (context.globalProcessorIndex == 0) merge(Global, acc)
      case key => merge(key, acc)
    }
  }

  private def merge(key: Any, acc: Any): Unit = accs.get(key) match {
    case None => accs.update(key, acc)
    case Some(existing) =>
      val combine = op.combineFn.getOrElse(throw new IllegalStateException(
        s"snapshot holds several accumulators for key $key, but $op cannot combine them"))
      accs.update(key, combine(existing, acc))
  }
}

/** Saving and restoring a processor whose whole state is one [[AccumulatorTable]]: one snapshot entry
  * per key (see [[AccumulatorTable.snapshotEntries]]).
  */
private[processor] trait AccumulatorTableSnapshots extends AbstractProcessor {
  protected def table: AccumulatorTable
  private var snapshotEmission = Emission.Done

  override def saveToSnapshot(): Boolean = {
    if (snapshotEmission.isDone) snapshotEmission = Emission.toSnapshot(table.snapshotEntries)
    snapshotEmission.emitTo(outbox)
  }

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) table.restore(inbox.poll().asInstanceOf[SnapshotEntry], context)
}

private[processor] object AccumulatorTable {
  /** The table key of a non-keyed processor's single accumulator. */
  case object Global

  val GlobalSnapshotKey: BroadcastKey = BroadcastKey("aggregate.global-accumulator")
}
