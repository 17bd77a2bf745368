package io.jetspark.core.window

import io.jetspark.core._
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.{BroadcastKey, SnapshotEntry}

import java.util.{HashMap => JHashMap}
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** Sliding and tumbling windows over event time, in one of three roles (see the factories in the
  * companion):
  *  - `singleStage`: events in; each event is accumulated into its (key, frame); windows out;
  *  - `accumulateFrames` (stage 1 of two): events in; [[KeyedFrame]]s out, each frame once the watermark
  *    reaches its end, before that watermark;
  *  - `combineFrames` (stage 2 of two): [[KeyedFrame]]s from any number of upstream instances in, combined
  *    per (key, frame); windows out.
  * Keyed aggregations emit [[KeyedWindowResult]], non-keyed ones [[WindowResult]].
  *
  * '''Emission.''' On a watermark `wm`, every non-empty window with `end <= wm` that was not emitted yet
  * is emitted, in increasing `end` order, then the watermark itself (every watermark is forwarded). Empty
  * windows are never emitted; stretches of time with no frames are skipped in one step. `complete()` emits
  * every remaining window (as a watermark of +infinity would, without the watermark).
  *
  * '''Lateness.''' Let `closedEnd` be the highest frame end at or before the watermark: every window
  * ending there or earlier is complete. An event (or stage-2 frame) whose frame ends at or before
  * `closedEnd` is late: its frame was already combined into a complete window. It is dropped and counted
  * in [[lateEventsDropped]]; with `lateEventsOut`, a late event is also emitted as a [[LateEvent]].
  *
  * '''Cost.''' Each event costs one accumulate plus two map look-ups (its key; its frame among the frames
  * not yet complete). Sliding one step costs amortized O(1) combines per key whatever the number of frames
  * per window: with a `deductFn` a running accumulator adds the leading and deducts the trailing frame;
  * without one, the frames of the window sit in a two-stack queue (`TwoStacksFrameQueue`). A key
  * with no frames left is forgotten.
  *
  * '''Early results.''' With `earlyResultsPeriodMs > 0`, `tryProcess()` emits, at most once per period by
  * `clock`, the current partial result of every window that has data but is not complete yet, marked
  * `isEarly = true` ([[EarlyResultsTimer]]). These partial results are not part of the snapshot. A second
  * stage sees a frame only once the first stage completed it, so its early results hold the complete frames only.
  *
  * '''Snapshot.''' Per key, a [[SlidingWindowSnapshot.KeyFrames]] under the grouping key itself (every frame
  * still needed, complete or not); the watermark and `closedEnd` as a [[SlidingWindowSnapshot.Progress]]
  * under a [[BroadcastKey]] (restore takes the least over the instances); the late-event count and the
  * next early-results time under keys of its own instance. The sliding state (running accumulator or two stacks) is rebuilt from the frames.
  * Accumulators are offered live: the outbox must serialize them when it accepts them.
  *
  * Aggregate operations need a `combineFn`, except in a single-stage tumbling window (Jet's rule): each
  * of its windows is one frame, accumulated and never combined. The constructor serves the factories in
  * the companion, and benchmarks that substitute another `FrameQueue`.
  */
final class SlidingWindowProcessor[T, A, R] private[jetspark] (
    policy: SlidingWindowPolicy,
    input: SlidingWindowProcessor.Input[T],
    emitsFrames: Boolean,
    keyed: Boolean,
    op: AggregateOperation[T, A, R],
    earlyResultsPeriodMs: Long,
    clock: () => Long,
    newFrameQueue: () => FrameQueue[A],
    lateEventsOut: Boolean = false,
) extends AbstractProcessor with CountsLateEvents {
  import SlidingWindowProcessor._

  private val earlyResults = new EarlyResultsTimer(earlyResultsPeriodMs, clock)
  if (emitsFrames && earlyResultsPeriodMs > 0)
    throw new IllegalArgumentException("the frame-accumulating first stage emits no window results, early or not")

  private val size = policy.size
  // Jet's rule: a window of several frames combines them, and so does a second stage; a single-stage
  // tumbling window is one frame, which it only accumulates (a frame restored from two snapshots still
  // needs combine, and fails without it when it comes, as in Jet).
  private val combine: (A, A) => A =
    if (!policy.isTumbling || emitsFrames || input == Frames) FrameQueue.requireCombine(op, "sliding windows")
    else (l, r) => FrameQueue.requireCombine(op, "sliding windows")(l, r)
  private val oneFrame = FrameQueue.isOneFrame(policy, op)

  private val keys = new JHashMap[Any, KeyWindows[A]]()
  private var watermark = Long.MinValue
  private var closedEnd = Long.MinValue
  // Read by the engine from another thread (light jobs' counts); written only when an event is late.
  @volatile private var lateCount = 0L
  private var emission = Emission.Done
  private var snapshotEmission = Emission.Done
  private val restoredFrames = ArrayBuffer.empty[(Any, SlidingWindowSnapshot.KeyFrames[A])]
  private var restoredProgress: Option[SlidingWindowSnapshot.Progress] = None

  /** Events (stage 2: frames) dropped as late since the job started, restored across snapshots. */
  override def lateEventsDropped: Long = lateCount

  /** Number of keys that hold state; zero once everything was emitted. */
  private[window] def keysWithState: Int = keys.size

  override protected def initState(): Unit = earlyResults.start()

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    var item = inbox.peek()
    while (item != null) {
      input match {
        case Events(keyFn, tsFn) =>
          val event = item.asInstanceOf[T]
          val key = keyFn(event) // taken first: a key that fails is the stage's failure, late or not
          val frameEnd = policy.frameEnd(tsFn(event))
          if (frameEnd > closedEnd) accumulateEvent(ordinal, key, frameEnd, event)
          else if (!droppedLate(event)) return
        case Frames =>
          val frame = item.asInstanceOf[KeyedFrame[Any, A]]
          combineFrame(frame.key, frame.frameEnd, frame.acc)
      }
      inbox.remove()
      item = inbox.peek()
    }
  }

  /** Counts late `event`, and emits it where late events go out: false, with nothing counted, while the
    * outbox is full.
    */
  private def droppedLate(event: Any): Boolean =
    if (lateEventsOut && !outbox.offer(-1, LateEvent(event, watermark))) false
    else { lateCount += 1; true }

  private def accumulateEvent(ordinal: Int, key: Any, frameEnd: Long, event: T): Unit = {
      val pending = windowsOf(key).pending
      val acc = pending.get(frameEnd)
      val updated = op.accumulate(if (acc == null) op.create() else acc, ordinal, event)
      if (acc == null || !sameRef(acc, updated)) pending.put(frameEnd, updated)
  }

  private def combineFrame(key: Any, frameEnd: Long, partial: A): Unit =
    if (frameEnd <= closedEnd) lateCount += 1
    else {
      val pending = windowsOf(key).pending
      val acc = pending.get(frameEnd)
      // the partial accumulator belongs to the sender: combine it into one of our own
      pending.put(frameEnd, combine(if (acc == null) op.create() else acc, partial))
    }

  private def windowsOf(key: Any): KeyWindows[A] = {
    var w = keys.get(key)
    if (w == null) { w = new KeyWindows(newFrameQueue()); keys.put(key, w) }
    w
  }

  override def tryProcessWatermark(wm: Watermark): Boolean = {
    if (emission.isDone) emission = Emission(closeUpTo(wm.timestamp) :+ wm)
    emission.emitTo(outbox)
  }

  override def complete(): Boolean = {
    if (emission.isDone) emission = Emission(closeUpTo(Long.MaxValue))
    emission.emitTo(outbox)
  }

  override def tryProcess(): Boolean = {
    if (emission.isDone) {
      if (!earlyResults.due()) return true
      emission = Emission(openWindows())
    }
    emission.emitTo(outbox)
  }

  /** Advances the watermark to `wm` and returns what it completes: windows in increasing end order; frames
    * in end order per key, key after key (the second stage holds frames until its own watermark, so their
    * order across keys does not matter, and sorting them cost the first stage more than accumulating).
    */
  private def closeUpTo(wm: Long): Seq[Any] = {
    watermark = math.max(watermark, wm)
    val target = policy.lastEndAtOrBefore(wm)
    if (target <= closedEnd) return Nil
    val out = ArrayBuffer.empty[Timed]
    val it = keys.entrySet().iterator()
    while (it.hasNext) {
      val entry = it.next()
      val w = entry.getValue
      if (emitsFrames) emitFrames(entry.getKey, w, target, out) else slide(entry.getKey, w, target, out)
      if (w.isEmpty) it.remove()
    }
    closedEnd = target
    if (emitsFrames) out.map(_.item).toSeq else Timed.inEndOrder(out)
  }

  private def emitFrames(key: Any, w: KeyWindows[A], target: Long, out: ArrayBuffer[Timed]): Unit =
    while (!w.pending.isEmpty && w.pending.firstEnd <= target) {
      val end = w.pending.firstEnd
      out += new Timed(end, KeyedFrame(end, key, w.pending.pollFirst()))
    }

  /** Emits the key's non-empty windows with ends in `(closedEnd, target]`, sliding its frame queue along.
    * Invariant outside this method: the queue holds the key's frames in `(closedEnd - size, closedEnd]`
    * that the next window still needs, `pending` those after `closedEnd`.
    */
  private def slide(key: Any, w: KeyWindows[A], target: Long, out: ArrayBuffer[Timed]): Unit = {
    var end = closedEnd
    var more = true
    while (more) {
      var next = policy.nextEnd(end).getOrElse {
        // no window ends later (none can hold a frame: see SlidingWindowPolicy.frameEnd): no frame is needed
        while (!w.window.isEmpty) w.window.dropOldest()
        more = false
        end
      }
      while (more && !w.window.isEmpty && w.window.oldestEnd <= policy.windowStart(next)) w.window.dropOldest()
      if (more && w.window.isEmpty) {
        // no frame in the next window: jump over the gap to the first window that has one
        if (w.pending.isEmpty) more = false
        else next = math.max(next, w.pending.firstEnd)
      }
      if (more && next <= target) {
        while (!w.pending.isEmpty && w.pending.firstEnd <= next) {
          val end = w.pending.firstEnd
          w.window.push(end, w.pending.pollFirst())
        }
        out += new Timed(next, windowResult(key, next, w.window.aggregate, isEarly = false))
        end = next
      } else more = false
    }
  }

  private def windowResult(key: Any, end: Long, acc: A, isEarly: Boolean): Any = {
    val result = op.exportResult(acc)
    if (keyed) KeyedWindowResult(end - size, end, key, result, isEarly)
    else WindowResult(end - size, end, result, isEarly)
  }

  /** The partial result of every window after `closedEnd` that holds a frame. Runs once per period, so it
    * simply recombines the frames of each window.
    */
  private def openWindows(): Seq[Any] = {
    val out = ArrayBuffer.empty[Timed]
    keys.forEach { (key, w) =>
      val frames = framesOf(w)
      val after = if (closedEnd == Long.MinValue) Some(frames.head._1) else policy.nextEnd(closedEnd)
      var first = if (after.isEmpty) frames.size else 0 // first frame in the current window (none: no window left)
      var end = after.getOrElse(closedEnd)
      while (first < frames.size) {
        while (first < frames.size && frames(first)._1 <= policy.windowStart(end)) first += 1
        if (first < frames.size) {
          end = math.max(end, frames(first)._1)
          // A tumbling window is its one frame (export leaves it as it is): nothing to combine.
          val acc =
            if (oneFrame) frames(first)._2
            else {
              var combined = op.create()
              var i = first
              while (i < frames.size && frames(i)._1 <= end) { combined = combine(combined, frames(i)._2); i += 1 }
              combined
            }
          out += new Timed(end, windowResult(key, end, acc, isEarly = true))
          policy.nextEnd(end) match {
            case Some(next) => end = next
            case None => first = frames.size // no frame ends later
          }
        }
      }
    }
    Timed.inEndOrder(out)
  }

  override def saveToSnapshot(): Boolean = {
    if (snapshotEmission.isDone) {
      val perKey = keys.entrySet().iterator().asScala.map { e =>
        val w = e.getValue
        (e.getKey, SlidingWindowSnapshot.KeyFrames(framesOf(w)))
      }
      snapshotEmission = Emission.toSnapshot(
        perKey ++ Iterator(
          (BroadcastKey(ProgressKeyName), SlidingWindowSnapshot.Progress(watermark, closedEnd)),
          (LateEventsKey(context.globalProcessorIndex), lateCount),
        ) ++ earlyResults.snapshotEntries(context.globalProcessorIndex))
    }
    snapshotEmission.emitTo(outbox)
  }

  override def restoreFromSnapshot(inbox: Inbox): Unit = {
    var item = inbox.poll()
    while (item != null) {
      item match {
        case SnapshotEntry(BroadcastKey(ProgressKeyName), p: SlidingWindowSnapshot.Progress) =>
          restoredProgress = Some(restoredProgress.fold(p)(q =>
            SlidingWindowSnapshot.Progress(math.min(p.watermark, q.watermark), math.min(p.closedEnd, q.closedEnd))))
        case SnapshotEntry(_: LateEventsKey, count: Long) => lateCount += count
        case SnapshotEntry(_: EarlyResultsKey, nextAt: Long) => earlyResults.restore(nextAt)
        case SnapshotEntry(key, frames: SlidingWindowSnapshot.KeyFrames[A @unchecked]) => restoredFrames += ((key, frames))
        case other => throw new IllegalStateException(s"SlidingWindowProcessor cannot restore $other")
      }
      item = inbox.poll()
    }
  }

  override def finishSnapshotRestore(): Boolean = {
    restoredProgress.foreach { p => watermark = p.watermark; closedEnd = p.closedEnd }
    for ((key, saved) <- restoredFrames) {
      val w = windowsOf(key)
      for ((end, acc) <- saved.frames.sortBy(_._1)) {
        if (end > closedEnd) {
          val mine = w.pending.get(end)
          w.pending.put(end, if (mine == null) acc else combine(mine, acc))
        } else if (end > policy.windowStart(closedEnd)) w.window.push(end, acc)
        // A frame at or before closedEnd - size was needed by no remaining window.
      }
      if (w.isEmpty) keys.remove(key)
    }
    restoredFrames.clear()
    restoredProgress = None
    true
  }

  /** Every frame of a key, in end order: the complete ones in its window, then the pending ones. */
  private def framesOf(w: KeyWindows[A]): Vector[(Long, A)] =
    w.window.frames.toVector ++ w.pending.inOrder

  private def sameRef(a: A, b: A): Boolean = a.asInstanceOf[AnyRef] eq b.asInstanceOf[AnyRef]
}

object SlidingWindowProcessor {
  /** Where a processor's input items come from. */
  private[jetspark] sealed trait Input[-T]
  /** Raw events, with their grouping key and timestamp. */
  private[jetspark] final case class Events[T](keyFn: T => Any, tsFn: T => Long) extends Input[T]
  /** [[KeyedFrame]]s from first-stage instances. */
  private[jetspark] case object Frames extends Input[Any]

  private val ProgressKeyName = "sliding-window-progress"

  /** Keyed single-stage windows: events in, [[KeyedWindowResult]]s out; with `lateEventsOut`, each late
    * event as a [[LateEvent]] too.
    */
  def singleStage[T, K, A, R](
      policy: SlidingWindowPolicy,
      keyFn: T => K,
      tsFn: T => Long,
      op: AggregateOperation[T, A, R],
      earlyResultsPeriodMs: Long = 0,
      clock: () => Long = () => System.currentTimeMillis(),
      lateEventsOut: Boolean = false,
  ): SlidingWindowProcessor[T, A, R] =
    new SlidingWindowProcessor(policy, Events(keyFn, tsFn), emitsFrames = false, keyed = true, op,
      earlyResultsPeriodMs, clock, FrameQueue.forWindow(policy, op), lateEventsOut)

  /** Non-keyed single-stage windows: events in, [[WindowResult]]s out; with `lateEventsOut`, each late
    * event as a [[LateEvent]] too.
    */
  def singleStageNonKeyed[T, A, R](
      policy: SlidingWindowPolicy,
      tsFn: T => Long,
      op: AggregateOperation[T, A, R],
      earlyResultsPeriodMs: Long = 0,
      clock: () => Long = () => System.currentTimeMillis(),
      lateEventsOut: Boolean = false,
  ): SlidingWindowProcessor[T, A, R] =
    new SlidingWindowProcessor(policy, Events((_: T) => NonKeyed, tsFn), emitsFrames = false, keyed = false, op,
      earlyResultsPeriodMs, clock, FrameQueue.forWindow(policy, op), lateEventsOut)

  /** Stage 1 of two: events in, one [[KeyedFrame]] per (key, frame) out when the watermark reaches the
    * frame's end. Use `keyFn = _ => NonKeyed` for a non-keyed aggregation.
    */
  def accumulateFrames[T, K, A, R](
      policy: SlidingWindowPolicy,
      keyFn: T => K,
      tsFn: T => Long,
      op: AggregateOperation[T, A, R],
  ): SlidingWindowProcessor[T, A, R] =
    new SlidingWindowProcessor(policy, Events(keyFn, tsFn), emitsFrames = true, keyed = true, op,
      0, () => 0L, FrameQueue.forOperation(op))

  /** Stage 2 of two: [[KeyedFrame]]s in, windows out ([[KeyedWindowResult]] when `keyed`, else
    * [[WindowResult]]).
    */
  def combineFrames[A, R](
      policy: SlidingWindowPolicy,
      op: AggregateOperation[Nothing, A, R],
      keyed: Boolean,
      earlyResultsPeriodMs: Long = 0,
      clock: () => Long = () => System.currentTimeMillis(),
  ): SlidingWindowProcessor[Nothing, A, R] =
    new SlidingWindowProcessor[Nothing, A, R](policy, Frames, emitsFrames = false, keyed, op,
      earlyResultsPeriodMs, clock, FrameQueue.forOperation(op))
}

/** A key's frames: `window` the complete ones that a coming window still needs, `pending` the rest. */
private final class KeyWindows[A](val window: FrameQueue[A]) {
  val pending = new PendingFrames[A]
  def isEmpty: Boolean = window.isEmpty && pending.isEmpty
}

/** An output (a window or a frame) with the end it is emitted in order of. */
private final class Timed(val end: Long, val item: Any)

private object Timed {
  private val ByEnd: java.util.Comparator[Timed] = (a, b) => java.lang.Long.compare(a.end, b.end)

  /** The items in end order. Each key's outputs are already in end order, and the sort is stable (a
    * TimSort, which merges those ascending runs), so outputs with one end keep their keys' order.
    */
  def inEndOrder(out: ArrayBuffer[Timed]): Seq[Any] = {
    val sorted = out.toArray
    java.util.Arrays.sort(sorted, ByEnd)
    scala.collection.immutable.ArraySeq.unsafeWrapArray(sorted.map(_.item: Any))
  }
}

/** The snapshot state of a [[SlidingWindowProcessor]]. */
object SlidingWindowSnapshot {
  /** Every frame of one key still needed: `(frame end, accumulator)`, complete frames included. */
  @SerialVersionUID(1L)
  final case class KeyFrames[A](frames: Vector[(Long, A)])

  /** The watermark seen and the highest window end it completed. */
  @SerialVersionUID(1L)
  final case class Progress(watermark: Long, closedEnd: Long)
}

/** Snapshot key of one instance's late-event count; restored by exactly one instance. */
final case class LateEventsKey(processorIndex: Int)
