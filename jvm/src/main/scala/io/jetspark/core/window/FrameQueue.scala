package io.jetspark.core.window

import io.jetspark.core.aggregate.AggregateOperation

import java.util.ArrayDeque
import scala.jdk.CollectionConverters._

/** The completed frames of one key's current window, oldest first, with their combination.
  *
  * Frames are pushed in increasing end order and dropped from the oldest end; a pushed frame's accumulator
  * is never modified again (its frame is closed). Both operations and `aggregate` cost amortized O(1)
  * combines, whatever the number of frames held.
  */
private[jetspark] trait FrameQueue[A] {
  def isEmpty: Boolean
  /** End of the oldest frame; the queue must not be empty. */
  def oldestEnd: Long
  def push(frameEnd: Long, acc: A): Unit
  def dropOldest(): Unit
  /** The combination of every frame held, oldest first (`create()` when empty). Read-only for the caller
    * and valid only until the next push or drop.
    */
  def aggregate: A
  /** The frames held, oldest first. */
  def frames: Iterator[(Long, A)]
}

private[jetspark] object FrameQueue {
  /** The deducting queue when the operation can deduct, otherwise two stacks; for a tumbling window of
    * an operation that cannot combine, the one frame each window is (Jet needs no combine there).
    */
  def forWindow[A](policy: SlidingWindowPolicy, op: AggregateOperation[_, A, _]): () => FrameQueue[A] =
    if (isOneFrame(policy, op)) () => new OneFrameQueue(() => op.create())
    else forOperation(op)

  /** Whether each window is its one frame, never combined: a tumbling window of an operation that cannot
    * combine (with one that can, frames still combine, e.g. a frame restored from two snapshots).
    */
  def isOneFrame(policy: SlidingWindowPolicy, op: AggregateOperation[_, _, _]): Boolean =
    policy.isTumbling && op.combineFn.isEmpty

  /** The deducting queue when the operation can deduct, otherwise two stacks. */
  def forOperation[A](op: AggregateOperation[_, A, _]): () => FrameQueue[A] = {
    val combine = requireCombine(op, "sliding windows")
    op.deductFn match {
      case Some(deduct) => () => new DeductingFrameQueue(() => op.create(), combine, deduct)
      case None => () => new TwoStacksFrameQueue(() => op.create(), combine)
    }
  }

  def requireCombine[A](op: AggregateOperation[_, A, _], what: String): (A, A) => A =
    op.combineFn.getOrElse(throw new IllegalArgumentException(
      s"$what need an aggregate operation with a combineFn (they combine partial accumulators); " +
        s"${op.getClass.getName} has none"))
}

private final case class Frame[A](end: Long, acc: A)

/** A tumbling window's frames: one at a time, the window's own (a window covers one frame, so a frame is
  * dropped before the next is pushed), so nothing is ever combined.
  */
private final class OneFrameQueue[A](create: () => A) extends FrameQueue[A] {
  private var frame: Frame[A] = null

  override def isEmpty: Boolean = frame == null
  override def oldestEnd: Long = frame.end
  override def push(frameEnd: Long, acc: A): Unit = {
    if (frame != null) throw new IllegalStateException(s"a tumbling window holds one frame: ${frame.end}, then $frameEnd")
    frame = Frame(frameEnd, acc)
  }
  override def dropOldest(): Unit = frame = null
  override def aggregate: A = if (frame == null) create() else frame.acc
  override def frames: Iterator[(Long, A)] = Iterator.single(frame).filter(_ != null).map(f => (f.end, f.acc))
}

/** Keeps one running accumulator: `+=` the newest frame on push, `-=` the oldest on drop. */
private final class DeductingFrameQueue[A](create: () => A, combine: (A, A) => A, deduct: (A, A) => A)
    extends FrameQueue[A] {
  private val queue = new ArrayDeque[Frame[A]]()
  private var running: A = create()

  override def isEmpty: Boolean = queue.isEmpty
  override def oldestEnd: Long = queue.peekFirst().end
  override def push(frameEnd: Long, acc: A): Unit = {
    queue.addLast(Frame(frameEnd, acc))
    running = combine(running, acc)
  }
  override def dropOldest(): Unit = {
    val oldest = queue.removeFirst()
    // An empty window starts from a fresh accumulator so that deduct's rounding never accumulates.
    running = if (queue.isEmpty) create() else deduct(running, oldest.acc)
  }
  override def aggregate: A = running
  override def frames: Iterator[(Long, A)] = queue.iterator().asScala.map(f => (f.end, f.acc))
}

/** A queue built from two stacks, for operations without deduct (min, max, top-n, to-list).
  *
  * New frames go on the back stack, which keeps the combination of all of them. The front stack holds
  * older frames, oldest on top, each with the combination of itself and every newer frame below it. A drop
  * pops the front; when the front is empty the back is moved over once, computing those suffix
  * combinations. Every frame is thus combined a constant number of times: amortized O(1) per slide step,
  * where recombining every frame of the window would cost O(frames per window).
  */
private final class TwoStacksFrameQueue[A](create: () => A, combine: (A, A) => A) extends FrameQueue[A] {
  private val front = new ArrayDeque[Frame[A]]() // head = oldest
  private val frontAggs = new ArrayDeque[AnyRef]() // head = combination of front's head and every frame under it
  private val back = new ArrayDeque[Frame[A]]() // first = oldest of the back
  private var backAgg: A = create()

  private def copyOf(acc: A): A = combine(create(), acc)

  override def isEmpty: Boolean = front.isEmpty && back.isEmpty
  override def oldestEnd: Long = if (front.isEmpty) back.peekFirst().end else front.peekFirst().end
  override def push(frameEnd: Long, acc: A): Unit = {
    back.addLast(Frame(frameEnd, acc))
    backAgg = combine(backAgg, acc)
  }
  override def dropOldest(): Unit = {
    if (front.isEmpty) moveBackToFront()
    front.removeFirst()
    frontAggs.removeFirst()
  }
  private def moveBackToFront(): Unit = {
    var newer: A = null.asInstanceOf[A]
    while (!back.isEmpty) {
      val f = back.removeLast()
      // combine(older, newer) keeps the oldest-first order for operations that are not commutative
      val agg = if (front.isEmpty) copyOf(f.acc) else combine(copyOf(f.acc), newer)
      front.addFirst(f)
      frontAggs.addFirst(agg.asInstanceOf[AnyRef])
      newer = agg
    }
    backAgg = create()
  }
  override def aggregate: A =
    if (front.isEmpty) backAgg
    else {
      val frontAgg = frontAggs.peekFirst().asInstanceOf[A]
      if (back.isEmpty) frontAgg else combine(copyOf(frontAgg), backAgg)
    }
  override def frames: Iterator[(Long, A)] =
    (front.iterator().asScala ++ back.iterator().asScala).map(f => (f.end, f.acc))
}
