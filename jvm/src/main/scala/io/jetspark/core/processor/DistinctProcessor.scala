package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}
import io.jetspark.core.snapshot.SnapshotEntry

import scala.collection.mutable

/** API.md `distinct()`: emits the first item of each key (by `keyFn`, compared by value) as soon as it
  * arrives and drops every later item of that key; the same for batch and stream. Behind an edge
  * partitioned by the key, each instance sees all items of its keys, so "first" is the first in that
  * key's encounter order. Watermarks pass through unchanged.
  *
  * Snapshot: one entry per key seen, `key -> Seen`.
  */
final class DistinctProcessor(keyFn: Any => Any) extends AbstractProcessor {
  import DistinctProcessor.Seen

  private val seen = mutable.HashSet.empty[Any]
  private val emitter = new ItemByItemEmitter
  private val saver = new SnapshotSaver

  override def process(ordinal: Int, inbox: Inbox): Unit =
    emitter.drain(inbox, outbox)(item => if (seen.add(keyFn(item))) Some(item) else None)

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)

  override def saveToSnapshot(): Boolean = saver.save(outbox)(seen.iterator.map(key => (key, Seen)))

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      val SnapshotEntry(key, Seen) = inbox.poll(): @unchecked
      seen += key
    }
}

object DistinctProcessor {
  /** The snapshot value of a key whose first item was emitted. */
  case object Seen
}
