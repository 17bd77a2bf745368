package io.jetspark.core.eventtime

import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.{AbstractProcessor, IdleMessage, Inbox, Watermark}

import scala.collection.mutable

/** The watermarks of a source whose substreams are not known ahead: each distinct value of
  * `substreamOf(item)` (null included) is a substream of its own, from its first item on. A substream's
  * watermark is its highest timestamp minus `allowedLagMs`; the processor's is the minimum over the
  * substreams seen so far that are not idle, and it never goes back (a new substream behind it lowers
  * nothing).
  *
  * Idleness, as [[EventTimeMapper]] decides it for a source's partitions: a substream that delivered
  * nothing for `idleTimeoutMs` by `clock` (0: never idle) is left out of the minimum until its next item;
  * when every substream seen is idle, the watermark is the greatest of theirs (as [[WatermarkCoalescer]]
  * forwards it) and [[IdleMessage]] follows: once until an item comes, and again after a restore, which
  * starts the processor active as Jet's does. The idle timers survive a restore: the epoch engine restores
  * this state at every epoch, so a timer that restarted could never run out.
  *
  * The items pass unchanged. The watermark is announced when no input waits (`tryProcess`, which the
  * epoch engine calls at every epoch end): watermarks move at epoch ends anyway (docs/streaming.md).
  *
  * Snapshot: one entry, key [[SubstreamsByValueProcessor.StateKey]] of this instance's global index, value
  * each substream's highest timestamp and when it last delivered, and the last watermark emitted.
  */
final class SubstreamsByValueProcessor[T](timestampOf: T => Long, substreamOf: T => Any, allowedLagMs: Long,
    idleTimeoutMs: Long = 0, clock: () => Long = () => System.currentTimeMillis()) extends AbstractProcessor {
  import SubstreamsByValueProcessor._

  private val tops = mutable.HashMap.empty[Any, Long]
  private val lastEventAt = mutable.HashMap.empty[Any, Long]
  private var emitted = Long.MinValue
  private var saidIdle = false

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      val item = inbox.peek().asInstanceOf[T]
      if (!outbox.offer(-1, item)) return
      val (substream, ts) = (substreamOf(item), timestampOf(item))
      if (tops.get(substream).forall(_ < ts)) tops(substream) = ts
      lastEventAt(substream) = clock()
      saidIdle = false
      inbox.remove()
    }

  override def tryProcess(): Boolean = {
    val now = clock()
    val active = tops.filter { case (s, _) => idleTimeoutMs == 0 || now - lastEventAt(s) < idleTimeoutMs }
    val allIdle = tops.nonEmpty && active.isEmpty
    val wm = if (tops.isEmpty) Long.MinValue
      else if (allIdle) tops.valuesIterator.max - allowedLagMs
      else active.valuesIterator.min - allowedLagMs
    if (wm > emitted && !outbox.offer(-1, Watermark(wm))) return false
    emitted = math.max(emitted, wm)
    if (allIdle && !saidIdle) {
      if (!outbox.offer(-1, IdleMessage)) return false
      saidIdle = true
    }
    true
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean =
    throw new IllegalStateException(s"${getClass.getSimpleName} inserts the watermarks of a source and cannot " +
      s"receive one ($watermark): timestamps were assigned twice on one stream")

  override def saveToSnapshot(): Boolean =
    outbox.offerToSnapshot(StateKey(context.globalProcessorIndex), State(tops.toMap, emitted, lastEventAt.toMap))

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) inbox.poll() match {
      case SnapshotEntry(_: StateKey, State(saved, wm, delivered)) => tops ++= saved; emitted = wm; lastEventAt ++= delivered
      case other => throw new IllegalStateException(s"${getClass.getSimpleName} cannot restore $other")
    }
}

object SubstreamsByValueProcessor {
  final case class StateKey(processorIndex: Int)
  /** Each substream's highest timestamp, the last watermark emitted, and by the clock when each substream
    * last delivered.
    */
  final case class State(tops: Map[Any, Long], emitted: Long, lastEventAt: Map[Any, Long])
}
