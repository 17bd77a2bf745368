package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.SnapshotEntry

/** Batch aggregation (Jet's `GroupP`/`AggregateP`): accumulates every input item into the accumulator of
  * its group and, once every input is exhausted, emits one item per group in first-encounter order.
  * The named subclasses are the stages of one- and two-stage aggregation:
  *
  * {{{
  *   keyed, two stages:   AccumulateByKeyProcessor ──(key, acc)──▶ CombineByKeyProcessor ──▶ (key, result)
  *   keyed, one stage:    AggregateByKeyProcessor ──▶ (key, result)
  *   global, two stages:  AccumulateProcessor ──acc──▶ CombineProcessor ──▶ result
  *   global, one stage:   AggregateProcessor ──▶ result
  * }}}
  *
  * Inputs: items of any ordinal (a co-aggregation gets its inputs on ordinals 0 and 1; the operation
  * routes them). A global aggregation emits its result also when there was no input at all (the
  * result of an empty accumulator, e.g. `counting` gives 0); a keyed one then emits nothing.
  * Watermarks are forwarded unchanged (batch aggregation gets none, but must not stall on them).
  *
  * Snapshot: the accumulators not yet emitted, as described in [[AccumulatorTable]]. After `complete`
  * the processor holds no state.
  */
sealed abstract class GroupAggregateProcessor private[processor] (
    operation: AggregateOperation[Nothing, _, Any],
    input: GroupAggregateProcessor.Input,
    emitResults: Boolean,
) extends AbstractProcessor with AccumulatorTableSnapshots {
  import GroupAggregateProcessor._

  private val op = operation.asInstanceOf[AggregateOperation[Any, Any, Any]]
  override protected val table = new AccumulatorTable(op)
  private var completionKeys: Iterator[Any] = _
  /** The key being emitted and its output item, until the outbox accepts it. */
  private var pending: (Any, Any) = _

  /** True while nothing is held (used by tests to check that `complete` leaves no state behind). */
  def isStateEmpty: Boolean = table.isEmpty

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      input.accumulate(table, op, ordinal, inbox.peek())
      inbox.remove()
    }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)

  override def complete(): Boolean = {
    if (completionKeys == null) {
      if (!input.keyed) table.ensureGlobal()
      completionKeys = table.keys.iterator
    }
    while (pending != null || completionKeys.hasNext) {
      if (pending == null) {
        val key = completionKeys.next()
        val acc = table(key)
        val value = if (emitResults) op.finishResult(acc) else acc
        pending = (key, if (input.keyed) (key, value) else value)
      }
      if (!outbox.offer(pending._2)) return false
      table.remove(pending._1)
      pending = null
    }
    true
  }

}

object GroupAggregateProcessor {

  /** How an input item reaches the table. */
  private[processor] sealed trait Input extends Serializable {
    def keyed: Boolean
    def accumulate(table: AccumulatorTable, op: AggregateOperation[Any, Any, Any], ordinal: Int, item: Any): Unit
  }

  /** Items accumulated under `keyFns(ordinal)(item)`. */
  private[processor] final case class ItemsByKey(keyFns: IndexedSeq[Any => Any]) extends Input {
    require(keyFns.nonEmpty, "a keyed aggregation needs a key function per input")
    override def keyed: Boolean = true
    override def accumulate(table: AccumulatorTable, op: AggregateOperation[Any, Any, Any], ordinal: Int, item: Any): Unit = {
      if (ordinal >= keyFns.size) throw new IllegalArgumentException(s"item on input $ordinal, but key functions are given for ${keyFns.size} inputs")
      table.update(keyFns(ordinal)(item))(op.accumulate(_, ordinal, item))
      ()
    }
  }

  private[processor] case object ItemsGlobal extends Input {
    override def keyed: Boolean = false
    override def accumulate(table: AccumulatorTable, op: AggregateOperation[Any, Any, Any], ordinal: Int, item: Any): Unit = {
      table.update(AccumulatorTable.Global)(op.accumulate(_, ordinal, item)); ()
    }
  }

  /** `(key, partial accumulator)` items combined under their key. */
  private[processor] case object PartialsByKey extends Input {
    override def keyed: Boolean = true
    override def accumulate(table: AccumulatorTable, op: AggregateOperation[Any, Any, Any], ordinal: Int, item: Any): Unit = item match {
      case (key, partial) => table.update(key)(combine(op)(_, partial)); ()
      case other => throw new IllegalArgumentException(s"expected a (key, accumulator) pair, got $other")
    }
  }

  /** Partial accumulators combined into one. */
  private[processor] case object PartialsGlobal extends Input {
    override def keyed: Boolean = false
    override def accumulate(table: AccumulatorTable, op: AggregateOperation[Any, Any, Any], ordinal: Int, item: Any): Unit = {
      table.update(AccumulatorTable.Global)(combine(op)(_, item)); ()
    }
  }

  private def combine(op: AggregateOperation[Any, Any, Any]): (Any, Any) => Any = op.combineFn.get

  private[processor] def requireCombine(op: AggregateOperation[_, _, _], stage: String): Unit =
    require(op.canCombine, s"$stage is a stage of two-stage aggregation, but $op cannot combine; aggregate in one stage")
}

/** Stage 1 of keyed two-stage aggregation: accumulates items of input `i` under `keyFns(i)(item)`; on
  * complete emits `(key, accumulator)` per key for [[CombineByKeyProcessor]].
  */
final class AccumulateByKeyProcessor(keyFns: IndexedSeq[Any => Any], op: AggregateOperation[Nothing, _, Any])
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.ItemsByKey(keyFns), emitResults = false) {
  GroupAggregateProcessor.requireCombine(op, "AccumulateByKeyProcessor")
}

/** Stage 2 of keyed two-stage aggregation: combines `(key, partial accumulator)` items per key; on
  * complete emits `(key, result)` per key, or `(key, accumulator)` when `finish` is false (for a
  * further combining stage).
  */
final class CombineByKeyProcessor(op: AggregateOperation[Nothing, _, Any], finish: Boolean = true)
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.PartialsByKey, emitResults = finish) {
  GroupAggregateProcessor.requireCombine(op, "CombineByKeyProcessor")
}

/** Keyed aggregation in one stage (for operations that cannot combine, or after a keyed rebalance):
  * accumulates items of input `i` under `keyFns(i)(item)`; on complete emits `(key, result)` per key.
  */
final class AggregateByKeyProcessor(keyFns: IndexedSeq[Any => Any], op: AggregateOperation[Nothing, _, Any])
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.ItemsByKey(keyFns), emitResults = true)

/** Stage 1 of global two-stage aggregation: accumulates every item; on complete emits its one
  * accumulator (also when empty) for [[CombineProcessor]].
  */
final class AccumulateProcessor(op: AggregateOperation[Nothing, _, Any])
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.ItemsGlobal, emitResults = false) {
  GroupAggregateProcessor.requireCombine(op, "AccumulateProcessor")
}

/** Stage 2 of global two-stage aggregation (parallelism 1): combines the partial accumulators; on
  * complete emits the one result (the result of an empty accumulator when none arrived).
  */
final class CombineProcessor(op: AggregateOperation[Nothing, _, Any])
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.PartialsGlobal, emitResults = true) {
  GroupAggregateProcessor.requireCombine(op, "CombineProcessor")
}

/** Global aggregation in one stage (parallelism 1; for operations that cannot combine): accumulates
  * every item; on complete emits the one result (also for no input).
  */
final class AggregateProcessor(op: AggregateOperation[Nothing, _, Any])
    extends GroupAggregateProcessor(op, GroupAggregateProcessor.ItemsGlobal, emitResults = true)
