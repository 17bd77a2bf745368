package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, Watermark}

/** A stateless transform applied to a whole inbox at a time: `fn` gets the items of one `process` call,
  * in order, and returns every output for them, in order. For functions whose per-call cost dwarfs the
  * per-item cost (a round trip to another process: the local engine's Python steps), one call per batch
  * instead of one per item.
  *
  * `fn` runs once per batch, also when the outbox refuses part of its output. The batch's items leave
  * the inbox only once all its outputs were accepted, so a snapshot (taken between inbox batches) never
  * falls in the middle of a batch; the processor keeps no state. Watermarks pass through after the
  * outputs of the items before them.
  */
final class BatchTransformProcessor(fn: IndexedSeq[Any] => IterableOnce[Any]) extends AbstractProcessor {
  private var emission = Emission.Done
  /** Items of the batch whose outputs are being emitted. */
  private var batchSize = 0

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    if (batchSize == 0) {
      val items = inbox.iterator.toIndexedSeq
      batchSize = items.size
      emission = Emission(fn(items))
    }
    if (emission.emitTo(outbox)) {
      while (batchSize > 0) { inbox.remove(); batchSize -= 1 }
    }
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)
}
