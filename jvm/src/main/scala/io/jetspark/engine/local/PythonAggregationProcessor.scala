package io.jetspark.engine.local

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, Watermark}
import io.jetspark.core.window.CountsLateEvents

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

/** A window of a user-defined aggregate operation on a stream, its frames or sessions in the driver's
  * Python (python/jetspark/worker/stream_windows.py, as on the Spark engine's epochs): `batch` hands one
  * inbox to Python, which keeps it until the next epoch; an epoch ends at each watermark
  * (`epoch(watermark, nowMs, done = false)`: the windows it closes), at the end of the input (`done`:
  * every window), and, where the window gives early results, every `earlyPeriodMs` of real time while no
  * watermark comes (`epoch` with the last watermark: only the early results then). Each epoch answers the
  * late events it dropped and what it emits, which leaves before the watermark that ended it. A
  * watermark that `closes` nothing (from the last one; a sliding window's: one that reaches no new frame
  * end) ends no epoch: what is late depends only on what was closed, so nothing changes but the calls.
  */
private[local] final class PythonStreamWindowProcessor(batch: (Int, IndexedSeq[Any]) => Unit,
    epoch: (Long, Long, Boolean) => (Long, IterableOnce[Any]), earlyPeriodMs: Long, closes: (Long, Long) => Boolean)
    extends AbstractProcessor
    with CountsLateEvents {
  private var emission = Emission.Done
  private var pendingWatermark: Option[Watermark] = None
  private var watermark = Long.MinValue
  private var lastEpochMs = System.currentTimeMillis()
  private var ended = false
  @volatile private var late = 0L

  override def lateEventsDropped: Long = late

  override def process(ordinal: Int, inbox: Inbox): Unit = if (emission.emitTo(outbox)) {
    batch(ordinal, inbox.iterator.toIndexedSeq)
    inbox.clear()
  }

  override def tryProcessWatermark(wm: Watermark): Boolean = {
    if (pendingWatermark.isEmpty) {
      if (!emission.emitTo(outbox)) return false
      val closing = closes(watermark, wm.timestamp)
      watermark = wm.timestamp
      if (closing) endEpoch(done = false)
      pendingWatermark = Some(wm)
    }
    if (emission.emitTo(outbox) && outbox.offer(pendingWatermark.get)) { pendingWatermark = None; true } else false
  }

  override def tryProcess(): Boolean = {
    if (emission.emitTo(outbox) && earlyPeriodMs > 0 && System.currentTimeMillis() - lastEpochMs >= earlyPeriodMs)
      endEpoch(done = false)
    true
  }

  override def complete(): Boolean = {
    if (!ended) {
      if (!emission.emitTo(outbox)) return false
      endEpoch(done = true)
      ended = true
    }
    emission.emitTo(outbox)
  }

  private def endEpoch(done: Boolean): Unit = {
    lastEpochMs = System.currentTimeMillis()
    val (dropped, outputs) = epoch(watermark, lastEpochMs, done)
    late += dropped
    emission = Emission(outputs)
  }
}
