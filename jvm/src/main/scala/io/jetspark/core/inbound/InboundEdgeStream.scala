package io.jetspark.core.inbound

import io.jetspark.core._
import io.jetspark.core.eventtime.{WatermarkCoalescer, WatermarkCoalescerState}

import java.util.ArrayDeque

/** The receiving end of one edge of a processor: `queueCount` upstream queues (one per upstream
  * processor instance) merged into the processor's inbox for one input ordinal.
  *
  * The engine appends what arrives with [[offer]] and, whenever the processor's inbox is empty and the
  * previous [[InboundProgress]] was acted on, calls [[drainTo]], which reports exactly one thing:
  *  - [[InboundProgress.Items]]: data items were added to the inbox; let the processor `process` them;
  *  - [[InboundProgress.CoalescedWatermark]]: the edge's watermark advanced; call `tryProcessWatermark`;
  *  - [[InboundProgress.Idle]]: every live queue is idle; forward [[IdleMessage]] downstream;
  *  - [[InboundProgress.SnapshotBarrier]]: every live queue delivered this barrier; save the processor's
  *    state, then forward the barrier;
  *  - [[InboundProgress.NothingAvailable]]: every live queue is empty; wait for upstream;
  *  - [[InboundProgress.Blocked]]: items are waiting, but only behind a barrier alignment; wait for the
  *    queues that have not yet delivered the barrier;
  *  - [[InboundProgress.Done]]: every queue delivered [[DoneItem]]; call `completeEdge`.
  *
  * Order: a control item of a queue is handled only by a call that adds no data, so all data before it
  * on its queue is already in the processor's hands (never reordered with data of its queue). Data that
  * is available goes first, except right after a batch of data: then waiting control items go first, so
  * that a busy queue cannot starve another queue's control items.
  * Watermarks and idle messages go through a [[WatermarkCoalescer]] (one input per queue; an item
  * re-activates an idle queue).
  *
  * Barriers, by `guarantee`:
  *  - ExactlyOnce: once a queue delivered barrier N nothing more is taken from it until every queue that
  *    is not done delivered N; then the barrier is reported once and all queues flow again. So the
  *    snapshot sees exactly the items before barrier N on every queue.
  *  - AtLeastOnce: queues keep flowing after their barrier N (their items reach the processor before the
  *    snapshot, and will be replayed after a restart: at least once); the barrier is reported once every
  *    live queue delivered it. A queue that reaches barrier N+1 first waits there.
  *  - None: a barrier is an error.
  * A queue that is done counts as having delivered every barrier.
  *
  * Single-threaded: the engine serializes calls. Snapshot: [[coalescerState]] / [[restoreCoalescer]],
  * the coalesced watermark floor, so that after a restart the edge never reports a lower watermark.
  */
final class InboundEdgeStream(val queueCount: Int, guarantee: ProcessingGuarantee) {
  require(queueCount >= 1, s"an inbound edge needs at least one queue, got $queueCount")

  private val queues = Array.fill(queueCount)(new ArrayDeque[Any]())
  private val doneOffered = Array.fill(queueCount)(false)
  private val coalescer = new WatermarkCoalescer(queueCount)
  private val pending = new ArrayDeque[InboundProgress]()
  /** Queues that delivered the barrier being aligned. */
  private val delivered = Array.fill(queueCount)(false)
  private var aligningBarrier: Option[Long] = None
  private var lastCompletedBarrier = Long.MinValue
  private var nextQueue = 0
  private var lastWasItems = false

  /** Appends `item` (data or a [[ControlItem]]) to `queue`. Unbounded: the engine bounds what it offers. */
  def offer(queue: Int, item: Any): Unit = {
    require(item != null, s"null item offered to queue $queue")
    if (doneOffered(queue)) throw new IllegalStateException(s"queue $queue was offered $item after DoneItem")
    if (item == DoneItem) doneOffered(queue) = true
    queues(queue).addLast(item)
  }

  /** Items buffered in `queue` (for the engine's back-pressure). */
  def queuedCount(queue: Int): Int = queues(queue).size

  /** Every queue delivered [[DoneItem]] and every report was made. */
  def isDone: Boolean = pending.isEmpty && queueIndices.forall(coalescer.isDone)

  /** Moves at most `maxItems` data items to `inbox`, or handles control items; see the class comment. */
  def drainTo(inbox: ArrayDequeInbox, maxItems: Int): InboundProgress = {
    require(maxItems >= 1, s"maxItems must be >= 1, got $maxItems")
    val start = nextQueue
    nextQueue = (nextQueue + 1) % queueCount
    // Data goes first, so that what arrived on other queues before a control item reaches the processor
    // before it; but right after a batch of data, control items waiting at queue heads go first, so that
    // a queue that is always busy cannot hold back another queue's watermark or barrier.
    val controlsFirst = lastWasItems
    lastWasItems = false
    if (controlsFirst) handleControls(start)
    while (pending.isEmpty) {
      val added = takeData(inbox, maxItems, start)
      if (added > 0) {
        lastWasItems = true
        return InboundProgress.Items(added)
      }
      if (!handleControls(start)) {
        return if (queueIndices.forall(coalescer.isDone)) InboundProgress.Done
        else if (queueIndices.exists(q => !queues(q).isEmpty)) InboundProgress.Blocked
        else InboundProgress.NothingAvailable
      }
    }
    pending.pollFirst()
  }

  def coalescerState: WatermarkCoalescerState = coalescer.state

  def restoreCoalescer(saved: WatermarkCoalescerState): Unit = coalescer.restore(saved)

  private def queueIndices: Range = 0 until queueCount

  /** Whether the head of queue `q` may be taken now. */
  private def mayTake(q: Int): Boolean =
    !queues(q).isEmpty && !coalescer.isDone(q) && !(delivered(q) && (guarantee == ProcessingGuarantee.ExactlyOnce ||
      queues(q).peekFirst().isInstanceOf[Barrier]))

  private def headIsControl(q: Int): Boolean = queues(q).peekFirst().isInstanceOf[ControlItem]

  /** Takes data from the queue heads, up to each queue's next control item; returns how many. */
  private def takeData(inbox: ArrayDequeInbox, maxItems: Int, start: Int): Int = {
    var added = 0
    for (k <- 0 until queueCount) {
      val q = (start + k) % queueCount
      while (added < maxItems && mayTake(q) && !headIsControl(q)) {
        inbox.add(queues(q).pollFirst())
        coalescer.observeItem(q)
        added += 1
      }
    }
    added
  }

  /** Handles control items at the queue heads until one has something to report or none is left;
    * returns whether it handled any.
    */
  private def handleControls(start: Int): Boolean = {
    var handled = false
    for (k <- 0 until queueCount) {
      val q = (start + k) % queueCount
      while (pending.isEmpty && mayTake(q) && headIsControl(q)) {
        handleControl(q, queues(q).pollFirst().asInstanceOf[ControlItem])
        handled = true
      }
    }
    handled
  }

  private def handleControl(q: Int, control: ControlItem): Unit = control match {
    case Watermark(ts) => report(coalescer.observeWatermark(q, ts))
    case IdleMessage => report(coalescer.observeIdle(q))
    case DoneItem =>
      report(coalescer.observeDone(q))
      completeAlignmentIfAll()
    case Barrier(id) =>
      if (guarantee == ProcessingGuarantee.None)
        throw new IllegalStateException(s"queue $q delivered barrier $id, but the job has no processing guarantee")
      aligningBarrier match {
        case Some(current) if current != id =>
          throw new IllegalStateException(s"queue $q delivered barrier $id while barrier $current is being aligned")
        case None if id <= lastCompletedBarrier =>
          throw new IllegalStateException(s"queue $q delivered barrier $id after barrier $lastCompletedBarrier completed")
        case _ =>
      }
      aligningBarrier = Some(id)
      delivered(q) = true
      completeAlignmentIfAll()
  }

  private def completeAlignmentIfAll(): Unit = aligningBarrier.foreach { id =>
    if (queueIndices.forall(q => delivered(q) || coalescer.isDone(q))) {
      java.util.Arrays.fill(delivered, false)
      aligningBarrier = None
      lastCompletedBarrier = id
      pending.addLast(InboundProgress.SnapshotBarrier(id))
    }
  }

  private def report(items: List[ControlItem]): Unit = items.foreach {
    case Watermark(ts) => pending.addLast(InboundProgress.CoalescedWatermark(Watermark(ts)))
    case IdleMessage => pending.addLast(InboundProgress.Idle)
    case other => throw new IllegalStateException(s"the coalescer reported $other")
  }
}

/** What one [[InboundEdgeStream.drainTo]] call did; see [[InboundEdgeStream]] for what the engine does
  * with each.
  */
sealed trait InboundProgress
object InboundProgress {
  final case class Items(count: Int) extends InboundProgress
  final case class CoalescedWatermark(watermark: Watermark) extends InboundProgress
  case object Idle extends InboundProgress
  final case class SnapshotBarrier(snapshotId: Long) extends InboundProgress
  case object NothingAvailable extends InboundProgress
  case object Blocked extends InboundProgress
  case object Done extends InboundProgress
}
