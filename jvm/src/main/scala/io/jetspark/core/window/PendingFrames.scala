package io.jetspark.core.window

/** One key's frames that no window has completed yet, by frame end.
  *
  * Every event looks up the frame it falls in, so that look-up is a probe of an open-addressing table of
  * primitive ends (no boxing, no tree walk); the order that emission needs is kept in a binary min-heap of
  * the ends, which is touched once per frame (when it is added and when it is taken), not per event.
  * `get` answers null for a frame that is not held, as for one whose accumulator is null (a user's
  * operation may use null as an accumulator; the processor creates one for either).
  */
private[window] final class PendingFrames[A] {
  import PendingFrames.{InitialCapacity, NullAccumulator}

  // Linear probing; a slot is free where its accumulator is null (a null accumulator is held as
  // NullAccumulator). The capacity is a power of two.
  private var ends = new Array[Long](InitialCapacity)
  private var accs = new Array[AnyRef](InitialCapacity)
  private var count = 0
  private var heap = new Array[Long](InitialCapacity)

  def isEmpty: Boolean = count == 0

  /** The accumulator of the frame ending at `end`, or null. */
  def get(end: Long): A = {
    var i = slotOf(end)
    while (accs(i) != null) {
      if (ends(i) == end) return unwrapped(accs(i))
      i = (i + 1) & (ends.length - 1)
    }
    null.asInstanceOf[A]
  }

  /** Sets the accumulator of the frame ending at `end`, adding the frame if it is not held. */
  def put(end: Long, acc: A): Unit = {
    val held = if (acc == null) NullAccumulator else acc.asInstanceOf[AnyRef]
    var i = slotOf(end)
    while (accs(i) != null) {
      if (ends(i) == end) { accs(i) = held; return }
      i = (i + 1) & (ends.length - 1)
    }
    ends(i) = end
    accs(i) = held
    pushEnd(end)
    count += 1
    if (count * 2 > ends.length) grow()
  }

  /** The least end held; the frames must not be empty. */
  def firstEnd: Long = {
    if (count == 0) throw new NoSuchElementException("no pending frame")
    heap(0)
  }

  /** Removes the frame with the least end and returns its accumulator. */
  def pollFirst(): A = {
    val end = firstEnd
    count -= 1
    heap(0) = heap(count)
    siftDown(0)
    remove(end)
  }

  /** Every frame held, in end order (a sorted copy: for snapshots and early results, not per event). */
  def inOrder: Vector[(Long, A)] = {
    val sorted = java.util.Arrays.copyOf(heap, count)
    java.util.Arrays.sort(sorted)
    sorted.iterator.map(end => (end, get(end))).toVector
  }

  private def slotOf(end: Long): Int = {
    val h = end * 0x9E3779B97F4A7C15L // Fibonacci hashing: frame ends are multiples of the slide
    (h ^ (h >>> 32)).toInt & (ends.length - 1)
  }

  private def remove(end: Long): A = {
    var i = slotOf(end)
    while (ends(i) != end || accs(i) == null) i = (i + 1) & (ends.length - 1)
    val acc = unwrapped(accs(i))
    // Backward-shift deletion: move up every later entry of the probe run whose home slot is not
    // between the freed slot and itself, so that no look-up stops early at the hole.
    var hole = i
    var j = (i + 1) & (ends.length - 1)
    while (accs(j) != null) {
      val home = slotOf(ends(j))
      val movable = if (hole <= j) home <= hole || home > j else home <= hole && home > j
      if (movable) {
        ends(hole) = ends(j)
        accs(hole) = accs(j)
        hole = j
      }
      j = (j + 1) & (ends.length - 1)
    }
    accs(hole) = null
    acc
  }

  private def unwrapped(held: AnyRef): A = (if (held eq NullAccumulator) null else held).asInstanceOf[A]

  private def grow(): Unit = {
    val (oldEnds, oldAccs) = (ends, accs)
    ends = new Array[Long](oldEnds.length * 2)
    accs = new Array[AnyRef](oldEnds.length * 2)
    heap = java.util.Arrays.copyOf(heap, oldEnds.length * 2)
    var k = 0
    while (k < oldEnds.length) {
      if (oldAccs(k) != null) {
        var i = slotOf(oldEnds(k))
        while (accs(i) != null) i = (i + 1) & (ends.length - 1)
        ends(i) = oldEnds(k)
        accs(i) = oldAccs(k)
      }
      k += 1
    }
  }

  private def pushEnd(end: Long): Unit = {
    var i = count
    heap(i) = end
    while (i > 0 && heap((i - 1) / 2) > heap(i)) {
      swap(i, (i - 1) / 2)
      i = (i - 1) / 2
    }
  }

  private def siftDown(from: Int): Unit = {
    var i = from
    var done = false
    while (!done) {
      val l = 2 * i + 1
      val least = if (l + 1 < count && heap(l + 1) < heap(l)) l + 1 else l
      if (l < count && heap(least) < heap(i)) { swap(i, least); i = least } else done = true
    }
  }

  private def swap(a: Int, b: Int): Unit = { val t = heap(a); heap(a) = heap(b); heap(b) = t }
}

private object PendingFrames {
  private val InitialCapacity = 8
  private object NullAccumulator
}
