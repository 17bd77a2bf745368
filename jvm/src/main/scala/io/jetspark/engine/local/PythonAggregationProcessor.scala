package io.jetspark.engine.local

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, Watermark}

/** A vertex of an aggregation whose accumulators live in the driver's Python (a user-defined aggregate
  * operation, `AggregateOperation.of`): `batch(ordinal, items)` hands one inbox of one input to Python
  * and returns what Python emits for it at once (dead letters; a rolling aggregation's results), and
  * `atEnd()`, once every input is complete, what it emits then (partial accumulators or results).
  *
  * As [[io.jetspark.core.processor.BatchTransformProcessor]]: one Python call per inbox, whose items
  * leave the inbox only once all their outputs were accepted.
  */
private[local] final class PythonAggregationProcessor(batch: (Int, IndexedSeq[Any]) => IterableOnce[Any],
    atEnd: () => IterableOnce[Any]) extends AbstractProcessor {
  private var emission = Emission.Done
  private var batchSize = 0
  private var ended = false

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    if (batchSize == 0) {
      val items = inbox.iterator.toIndexedSeq
      batchSize = items.size
      emission = Emission(batch(ordinal, items))
    }
    if (emission.emitTo(outbox)) {
      while (batchSize > 0) { inbox.remove(); batchSize -= 1 }
    }
  }

  // As the JVM's aggregations: a watermark follows the outputs of the items before it.
  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)

  override def complete(): Boolean = {
    if (!ended) {
      emission = Emission(atEnd())
      ended = true
    }
    emission.emitTo(outbox)
  }
}
