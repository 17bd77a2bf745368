package io.jetspark.core.eventtime

import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}

import scala.collection.mutable

/** The watermarks of a source whose substreams are not known ahead: each distinct value of
  * `substreamOf(item)` (null included) is a substream of its own, from its first item on. A substream's
  * watermark is its highest timestamp minus `allowedLagMs`; the processor's is the minimum over the
  * substreams seen so far, and it never goes back (a new substream behind it lowers nothing).
  *
  * The items pass unchanged. The watermark is announced when no input waits (`tryProcess`, which the
  * epoch engine calls at every epoch end): watermarks move at epoch ends anyway (docs/streaming.md).
  * Idleness is not tracked per substream yet.
  *
  * Snapshot: one entry, key [[SubstreamsByValueProcessor.StateKey]] of this instance's global index, value
  * each substream's highest timestamp and the last watermark emitted.
  */
final class SubstreamsByValueProcessor[T](timestampOf: T => Long, substreamOf: T => Any, allowedLagMs: Long)
    extends AbstractProcessor {
  import SubstreamsByValueProcessor._

  private val tops = mutable.HashMap.empty[Any, Long]
  private var emitted = Long.MinValue
  private var moved = false

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      val item = inbox.peek().asInstanceOf[T]
      if (!outbox.offer(-1, item)) return
      val (substream, ts) = (substreamOf(item), timestampOf(item))
      if (tops.get(substream).forall(_ < ts)) { tops(substream) = ts; moved = true }
      inbox.remove()
    }

  override def tryProcess(): Boolean = {
    val wm = if (moved && tops.nonEmpty) tops.valuesIterator.min - allowedLagMs else Long.MinValue
    if (wm > emitted && !outbox.offer(-1, Watermark(wm))) return false
    emitted = math.max(emitted, wm)
    moved = false
    true
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean =
    throw new IllegalStateException(s"${getClass.getSimpleName} inserts the watermarks of a source and cannot " +
      s"receive one ($watermark): timestamps were assigned twice on one stream")

  override def saveToSnapshot(): Boolean =
    outbox.offerToSnapshot(StateKey(context.globalProcessorIndex), State(tops.toMap, emitted))

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) inbox.poll() match {
      case SnapshotEntry(_: StateKey, State(saved, wm)) => tops ++= saved; emitted = wm
      case other => throw new IllegalStateException(s"${getClass.getSimpleName} cannot restore $other")
    }
}

object SubstreamsByValueProcessor {
  final case class StateKey(processorIndex: Int)
  /** Each substream's highest timestamp, and the last watermark emitted. */
  final case class State(tops: Map[Any, Long], emitted: Long)
}
