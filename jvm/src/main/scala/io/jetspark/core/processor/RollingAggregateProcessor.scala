package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.SnapshotEntry

/** Jet's `rollingAggregate`: accumulates each item into the accumulator of its key (`keyFn`, or one
  * accumulator for the whole input when `None`) and emits `mapToOutput(key, exported running result)`
  * right after it, in input order. Without a key function `key` is [[RollingAggregateProcessor.NoKey]].
  *
  * Emits nothing on complete; keeps its accumulators to the end (a rolling result depends on all
  * earlier items of the key). Watermarks are forwarded unchanged.
  *
  * Snapshot: the accumulators, as described in [[AccumulatorTable]] (per key, or one global entry).
  */
final class RollingAggregateProcessor(
    keyFn: Option[Any => Any],
    operation: AggregateOperation[Nothing, _, Any],
    mapToOutput: (Any, Any) => Any,
) extends AbstractProcessor with AccumulatorTableSnapshots {

  private val op = operation.asInstanceOf[AggregateOperation[Any, Any, Any]]
  override protected val table = new AccumulatorTable(op)
  private var emission = Emission.Done

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      if (emission.isDone) {
        val item = inbox.peek()
        val key = keyFn.fold[Any](AccumulatorTable.Global)(_(item))
        val acc = table.update(key)(op.accumulate(_, ordinal, item))
        val outputKey = if (keyFn.isDefined) key else RollingAggregateProcessor.NoKey
        emission = Emission(Seq(mapToOutput(outputKey, op.exportResult(acc))))
      }
      if (!emission.emitTo(outbox)) return
      inbox.remove()
    }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)
}

object RollingAggregateProcessor {
  /** The `key` given to `mapToOutput` when the aggregation is not keyed. */
  case object NoKey

  /** Emits `(key, running result)` after each item. */
  def keyed(keyFn: Any => Any, op: AggregateOperation[Nothing, _, Any]): RollingAggregateProcessor =
    new RollingAggregateProcessor(Some(keyFn), op, (key, result) => (key, result))

  /** Emits the running result over all items after each item. */
  def global(op: AggregateOperation[Nothing, _, Any]): RollingAggregateProcessor =
    new RollingAggregateProcessor(None, op, (_, result) => result)
}
