package io.jetspark.core.processor

import io.jetspark.core.{ArrayDequeInbox, ControlItem, Inbox, Outbox, Processor, ProcessorContext, Watermark}

/** Runs `inner` over the payloads of items that carry something beside them (a sequence id, an event
  * time), and gives what it emits while processing an item what that item carried: `split(item)` is the
  * payload and how an output made for it carries the same. For processors that emit only while
  * processing an item and only for it (a rolling aggregation, a distinct; a hash join, for the time of
  * its streamed items), whose outputs must keep their item's id where order is restored by ids later,
  * or its time where a window reads it.
  * Items reach `inner` one at a time; watermarks pass through. A data item that `inner` emits at any
  * other time (on a watermark, on completion) has no item to take from and fails the job.
  */
final class CarryingProcessor(inner: Processor, split: Any => (Any, Any => Any)) extends Processor {
  private var outbox: Outbox = _
  private var context: ProcessorContext = _
  private var carry: Any => Any = _
  private val single = new ArrayDequeInbox

  private val carrying: Outbox = new Outbox {
    override def bucketCount: Int = outbox.bucketCount
    override def offer(ordinal: Int, item: Any): Boolean = item match {
      case control: ControlItem => outbox.offer(ordinal, control)
      case data if carry == null =>
        throw new IllegalStateException(s"${context.vertexName}: emitted $data outside the processing of an item, so it has nothing to carry")
      case data => outbox.offer(ordinal, carry(data))
    }
    override def offerToSnapshot(key: Any, value: Any): Boolean = outbox.offerToSnapshot(key, value)
  }

  override def init(outbox: Outbox, context: ProcessorContext): Unit = {
    this.outbox = outbox
    this.context = context
    inner.init(carrying, context)
  }

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      if (single.isEmpty) {
        val (payload, carrier) = split(inbox.peek())
        carry = carrier
        single.add(payload)
      }
      inner.process(ordinal, single)
      if (!single.isEmpty) return // refused: the same item again on the next call
      carry = null
      inbox.remove()
    }

  override def tryProcessWatermark(watermark: Watermark): Boolean = inner.tryProcessWatermark(watermark)
  override def tryProcess(): Boolean = inner.tryProcess()
  override def completeEdge(ordinal: Int): Boolean = inner.completeEdge(ordinal)
  override def complete(): Boolean = inner.complete()
  override def saveToSnapshot(): Boolean = inner.saveToSnapshot()
  override def restoreFromSnapshot(inbox: Inbox): Unit = inner.restoreFromSnapshot(inbox)
  override def finishSnapshotRestore(): Boolean = inner.finishSnapshotRestore()
  override def close(): Unit = inner.close()
}

object CarryingProcessor {
  /** Over [[Sequenced]] items: each output gets the id of the item it was emitted for. */
  def sequenceIds(inner: Processor): CarryingProcessor = new CarryingProcessor(inner, {
    case Sequenced(seq, item) => (item, Sequenced(seq, _))
    case other => throw new IllegalArgumentException(s"expected Sequenced items, got $other")
  })
}
