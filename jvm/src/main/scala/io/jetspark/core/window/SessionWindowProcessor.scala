package io.jetspark.core.window

import io.jetspark.core._
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.{BroadcastKey, SnapshotEntry}

import java.util.{HashMap => JHashMap, TreeMap => JTreeMap}
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** Session windows per key: events in, [[KeyedWindowResult]]`(start, end, key, result)` out.
  *
  * An event at `ts` spans `[ts, ts + timeout)`. A key's sessions are disjoint intervals; an event joins
  * every session its span overlaps (`start < ts + timeout && ts < end`; touching spans do not overlap),
  * merging them into one when it bridges several, whose accumulators are then combined (so the operation
  * must have a `combineFn`). A session `[start, end)` ends `timeout` after its last event.
  *
  * '''Emission.''' On a watermark `wm`, every session with `end < wm` is emitted, in increasing `end`
  * order, then the watermark. (At `wm == end` the session stays open: Jet's session interval includes its
  * end.) `complete()` emits every remaining session.
  *
  * '''Lateness.''' An event with `ts < wm` is late: dropped and counted in [[lateEventsDropped]]; with
  * `lateEventsOut`, also emitted as a [[LateEvent]].
  *
  * '''Early results.''' With `earlyResultsPeriodMs > 0`, `tryProcess()` emits, at most once per period by
  * `clock` ([[EarlyResultsTimer]]), every open session as it is so far, marked `isEarly = true`, in
  * increasing `end` order. A later event may extend or merge it, so its final result can have another
  * start, end or value.
  *
  * '''Snapshot.''' Per key, a [[SessionWindowSnapshot.KeySessions]] under the grouping key; the watermark as
  * a [[SessionWindowSnapshot.Progress]] under a [[BroadcastKey]] (restore takes the least); the late-event
  * count and the next early-results time under keys of its own instance.
  */
final class SessionWindowProcessor[T, K, A, R](
    timeout: Long,
    keyFn: T => K,
    tsFn: T => Long,
    op: AggregateOperation[T, A, R],
    earlyResultsPeriodMs: Long = 0,
    clock: () => Long = () => System.currentTimeMillis(),
    lateEventsOut: Boolean = false,
) extends AbstractProcessor with CountsLateEvents {
  import SessionWindowProcessor._

  private val policy = SessionWindowPolicy(timeout) // validates the timeout
  private val combine: (A, A) => A = FrameQueue.requireCombine(op, "session windows (an event may merge two sessions)")

  private val keys = new JHashMap[K, JTreeMap[java.lang.Long, Session[A]]]()
  private var watermark = Long.MinValue
  // Read by the engine from another thread (light jobs' counts); written only when an event is late.
  @volatile private var lateCount = 0L
  private var emission = Emission.Done
  private var snapshotEmission = Emission.Done
  private var restoredWatermark: Option[Long] = None
  private val earlyResults = new EarlyResultsTimer(earlyResultsPeriodMs, clock)

  override def lateEventsDropped: Long = lateCount

  override protected def initState(): Unit = earlyResults.start()

  private[window] def keysWithState: Int = keys.size

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    var item = inbox.peek()
    while (item != null) {
      val event = item.asInstanceOf[T]
      val ts = tsFn(event)
      if (ts >= watermark) addEvent(ordinal, keyFn(event), ts, event)
      else if (lateEventsOut && !outbox.offer(-1, LateEvent(event, watermark))) return
      else lateCount += 1
      inbox.remove()
      item = inbox.peek()
    }
  }

  private def addEvent(ordinal: Int, key: K, ts: Long, event: T): Unit = {
    var sessions = keys.get(key)
    if (sessions == null) { sessions = new JTreeMap(); keys.put(key, sessions) }
    var start = ts
    var end = policy.spanEnd(ts)
    // Sessions are disjoint, so ordered by start they are ordered by end too: walk back from the last one
    // starting before `end` while they still reach past `ts`. Prepending leaves the oldest first.
    var overlapping = List.empty[Session[A]]
    var candidate = sessions.lowerEntry(end)
    while (candidate != null && candidate.getValue.end > ts) {
      overlapping ::= candidate.getValue
      sessions.remove(candidate.getKey)
      candidate = sessions.lowerEntry(candidate.getKey)
    }
    var acc = overlapping match {
      case Nil => op.create()
      case oldest :: newer =>
        start = math.min(start, oldest.start)
        end = math.max(end, newer.lastOption.getOrElse(oldest).end)
        // the oldest session's accumulator is ours to extend; the newer ones fold into it in time order
        newer.foldLeft(oldest.acc)((merged, s) => combine(merged, s.acc))
    }
    acc = op.accumulate(acc, ordinal, event)
    sessions.put(start, Session(start, end, acc))
  }

  override def tryProcessWatermark(wm: Watermark): Boolean = {
    if (emission.isDone) {
      watermark = math.max(watermark, wm.timestamp)
      emission = Emission(closeBefore(watermark) :+ wm)
    }
    emission.emitTo(outbox)
  }

  override def complete(): Boolean = {
    if (emission.isDone) emission = Emission(closeBefore(Long.MaxValue))
    emission.emitTo(outbox)
  }

  override def tryProcess(): Boolean = {
    if (emission.isDone) {
      if (!earlyResults.due()) return true
      val open = keys.entrySet().iterator().asScala.flatMap { e =>
        e.getValue.values().asScala.map(s => KeyedWindowResult(s.start, s.end, e.getKey, op.exportResult(s.acc), isEarly = true))
      }
      emission = Emission(open.toSeq.sortBy(_.end))
    }
    emission.emitTo(outbox)
  }

  /** Removes and returns the results of the sessions ending before `limit`, in increasing end order;
    * `Long.MaxValue` stands for +infinity (the input's end), which a session ending there is before.
    */
  private def closeBefore(limit: Long): Seq[Any] = {
    val out = ArrayBuffer.empty[KeyedWindowResult[K, R]]
    val it = keys.entrySet().iterator()
    while (it.hasNext) {
      val entry = it.next()
      val sessions = entry.getValue
      while (!sessions.isEmpty && (sessions.firstEntry().getValue.end < limit || limit == Long.MaxValue)) {
        val s = sessions.pollFirstEntry().getValue
        out += KeyedWindowResult(s.start, s.end, entry.getKey, op.finishResult(s.acc))
      }
      if (sessions.isEmpty) it.remove()
    }
    out.sortBy(_.end).toSeq
  }

  override def saveToSnapshot(): Boolean = {
    if (snapshotEmission.isDone) {
      val perKey = keys.entrySet().iterator().asScala.map { e =>
        val sessions = e.getValue.values().asScala.map(s => (s.start, s.end, s.acc)).toVector
        (e.getKey: Any, SessionWindowSnapshot.KeySessions(sessions))
      }
      snapshotEmission = Emission.toSnapshot(
        perKey ++ Iterator(
          (BroadcastKey(ProgressKeyName), SessionWindowSnapshot.Progress(watermark)),
          (LateEventsKey(context.globalProcessorIndex), lateCount),
        ) ++ earlyResults.snapshotEntries(context.globalProcessorIndex))
    }
    snapshotEmission.emitTo(outbox)
  }

  override def restoreFromSnapshot(inbox: Inbox): Unit = {
    var item = inbox.poll()
    while (item != null) {
      item match {
        case SnapshotEntry(BroadcastKey(ProgressKeyName), SessionWindowSnapshot.Progress(wm)) =>
          restoredWatermark = Some(restoredWatermark.fold(wm)(math.min(_, wm)))
        case SnapshotEntry(_: LateEventsKey, count: Long) => lateCount += count
        case SnapshotEntry(_: EarlyResultsKey, nextAt: Long) => earlyResults.restore(nextAt)
        case SnapshotEntry(key, saved: SessionWindowSnapshot.KeySessions[A @unchecked]) =>
          val sessions = new JTreeMap[java.lang.Long, Session[A]]()
          saved.sessions.foreach { case (start, end, acc) => sessions.put(start, Session(start, end, acc)) }
          keys.put(key.asInstanceOf[K], sessions)
        case other => throw new IllegalStateException(s"SessionWindowProcessor cannot restore $other")
      }
      item = inbox.poll()
    }
  }

  override def finishSnapshotRestore(): Boolean = {
    restoredWatermark.foreach(watermark = _)
    restoredWatermark = None
    true
  }
}

object SessionWindowProcessor {
  private val ProgressKeyName = "session-window-progress"
}

private final case class Session[A](start: Long, end: Long, acc: A)

/** The snapshot state of a [[SessionWindowProcessor]]. */
object SessionWindowSnapshot {
  /** One key's open sessions: `(start, end, accumulator)`, in start order. */
  @SerialVersionUID(1L)
  final case class KeySessions[A](sessions: Vector[(Long, Long, A)])

  @SerialVersionUID(1L)
  final case class Progress(watermark: Long)
}
