package io.jetspark.engine.spark.window

import io.jetspark.item.PickledKey
import org.apache.spark.sql.catalyst.InternalRow

/** One key's frames in one task, each named by its end in slides (frame `f` holds the times in
  * `[(f - 1) * slide, f * slide)`): per slot the frame, `columns` numbers (slot after slot: an event
  * touches one slot's numbers, which then share a cache line) and a row per row column (null until the
  * frame has one). Slots are found through an index of the frames: a direct one (the slot of frame `f`
  * at position `f - base`), which costs one look-up and no hashing per event, while the frames fill a
  * quarter of its span (plus some slack) or the task's `budget` of direct positions lasts; else an
  * open-addressing hash table. (A key's frames are sparse over their span until most have come; the
  * budget keeps a key's first frames from starting out hashed, the density rule bounds the memory of an
  * index once the budget is spent.)
  *
  * Events may be deferred ([[defer]]): held in arrival order, each as its time (from which its owner tells
  * its frame) and `deferredColumns` numbers, until the owner adds them all at once. The task's budget
  * bounds what its tables defer.
  */
private[spark] final class FrameTable(val key: PickledKey, columns: Int, rowColumns: Int, deferredColumns: Int,
    budget: FrameTable.Budget) {
  import FrameTable._

  var size = 0
  /** Where a kept item's field is the key: the key's number, null for a null key (see [[FrameLayout.ItemLayout]]). */
  var keyNumber: java.lang.Long = null
  var frames = new Array[Long](8)
  var numbers = new Array[Long](8 * columns)
  val rows: Array[Array[InternalRow]] = Array.fill(rowColumns)(new Array[InternalRow](8))
  private var direct = true
  private var base = 0L // direct: the frame at position 0
  private var lowest = 0L // the least and the greatest frame held
  private var highest = 0L
  private var index = { budget.left -= 64; budget.tableBytes += 8 * 8 + 8 * 8 * columns + 64 * 4; free(64) }

  /** The deferred events: per event, its time and then `deferredColumns` numbers. */
  var deferred: Array[Long] = noneDeferred
  /** How many longs an event takes in [[deferred]]. */
  val deferredWidth: Int = deferredColumns + 1
  var deferredEvents = 0
  private var deferredLowest = 0L
  private var deferredHighest = 0L

  /** Whether the table holds no frame and no deferred event. */
  def isEmpty: Boolean = size == 0 && deferredEvents == 0

  /** The slot of frame `f`, added if it is not held. */
  def slotOf(f: Long): Int = if (direct) directSlot(f) else hashedSlot(f)

  /** Defers an event of time `time`: returns where its numbers go in [[deferred]]. */
  def defer(time: Long): Int = {
    val width = deferredWidth
    val at = deferredEvents * width
    if (at + width > deferred.length) deferred = java.util.Arrays.copyOf(deferred, math.max(deferred.length * 2, 8 * width))
    deferred(at) = time
    if (deferredEvents == 0) { deferredLowest = time; deferredHighest = time }
    else if (time < deferredLowest) deferredLowest = time
    else if (time > deferredHighest) deferredHighest = time
    budget.deferredLeft -= width
    deferredEvents += 1
    at + 1
  }

  /** Makes room for the deferred events' frames (`frameOf` a time, which never falls as time rises), so that
    * adding them grows nothing.
    */
  def reserveForDeferred(frameOf: Long => Long): Unit = if (deferredEvents > 0) {
    val (deferredLow, deferredHigh) = (frameOf(deferredLowest), frameOf(deferredHighest))
    val (low, high) = if (size == 0) (deferredLow, deferredHigh) else (math.min(lowest, deferredLow), math.max(highest, deferredHigh))
    val spread = deferredHigh - deferredLow // (negative where it overflows)
    val fresh = if (spread >= 0 && spread < deferredEvents) spread.toInt + 1 else deferredEvents
    val range = high - low // (negative where it overflows)
    val room = if (range >= 0 && range < Int.MaxValue) range + 1 - size else Long.MaxValue // the range's frames not held yet
    val most = size + math.min(room, fresh.toLong).toInt
    // (Doubling, and a direct index with room beyond a range that grows: tables whose frames come in
    // time order grow O(log n) times over a task's flushes, not at each.)
    if (most > frames.length) grow(math.max(most, frames.length * 2))
    val covered =
      if (direct) size > 0 && covers(low) && covers(high)
      else most * 2 <= index.length
    if (!covered) reindex(low, high, most, spare = size > 0, growLeft = size > 0 && low < lowest)
  }

  /** Forgets the deferred events, once they are added; the room they took goes too, so that what a task's
    * tables hold stays within the budget, not within the most that each of them ever deferred.
    */
  def clearDeferred(): Unit = {
    budget.deferredLeft += deferredEvents.toLong * deferredWidth
    deferredEvents = 0
    deferred = noneDeferred
  }

  /** The slots in frame order. */
  def slotsInOrder: Array[Int] =
    if (direct) {
      // (a loop: ArrayOps.filter boxes every position of an index of tens of thousands)
      val order = new Array[Int](size)
      var (at, n) = (0, 0)
      while (at < index.length) { if (index(at) >= 0) { order(n) = index(at); n += 1 }; at += 1 }
      order
    } else {
      val sorted = java.util.Arrays.copyOf(frames, size)
      java.util.Arrays.sort(sorted)
      sorted.map(hashedSlot)
    }

  private def directSlot(f: Long): Int = {
    if (size == 0 && !covers(f)) base = if (f < Long.MinValue + index.length / 2) Long.MinValue else f - index.length / 2
    if (covers(f)) {
      val at = (f - base).toInt
      val held = index(at)
      if (held >= 0) held else { val s = add(f); index(at) = s; s }
    } else {
      reindex(math.min(lowest, f), math.max(highest, f), size + 1, spare = true, growLeft = f < lowest)
      slotOf(f)
    }
  }

  /** Whether a direct index has a position for frame `f` (as longs do not overflow). */
  private def covers(f: Long): Boolean = f >= base && f - base >= 0 && f - base < index.length

  private def hashedSlot(f: Long): Int = {
    var i = position(f)
    while (index(i) >= 0) {
      if (frames(index(i)) == f) return index(i)
      i = (i + 1) & (index.length - 1)
    }
    if ((size + 1) * 2 > index.length) {
      reindex(math.min(lowest, f), math.max(highest, f), size + 1, spare = true, growLeft = false)
      return slotOf(f)
    }
    index(i) = add(f)
    index(i)
  }

  /** A new index for frames from `low` to `high`, `most` of them held at most: direct where they are
    * dense enough (which a key's frames in random order become only as more arrive, so a hashed index is
    * reconsidered each time it grows), else hashed. With `spare`, a direct index has room for as much
    * again on the side it grew to, so that frames arriving in time order grow it O(log n) times.
    */
  private def reindex(low: Long, high: Long, most: Int, spare: Boolean, growLeft: Boolean): Unit = {
    val before = index.length
    val span = if (high - low >= 0 && high - low < Long.MaxValue) high - low + 1 else Long.MaxValue // (overflows to negative)
    val capacity = math.min(Int.MaxValue - 8L, if (spare) math.min(span, Int.MaxValue) * 2 else span)
    val held = if (direct) index.length else 0
    direct = span <= 4L * most + Slack || capacity - held <= budget.left
    budget.left -= (if (direct) capacity else 0) - held
    if (direct) {
      base = if (!growLeft) low else if (high - capacity + 1 > high) Long.MinValue else high - capacity + 1 // (> high: overflowed)
      index = free(capacity.toInt)
      var s = 0
      while (s < size) { index((frames(s) - base).toInt) = s; s += 1 }
    } else {
      index = free(math.max(64, Integer.highestOneBit(most) * 4))
      var s = 0
      while (s < size) {
        var i = position(frames(s))
        while (index(i) >= 0) i = (i + 1) & (index.length - 1)
        index(i) = s
        s += 1
      }
    }
    budget.tableBytes += (index.length - before) * 4L
  }

  private def grow(capacity: Int): Unit = {
    budget.tableBytes += (capacity - frames.length) * 8L * (1 + columns)
    frames = java.util.Arrays.copyOf(frames, capacity)
    numbers = java.util.Arrays.copyOf(numbers, capacity * columns)
    for (c <- rows.indices) rows(c) = java.util.Arrays.copyOf(rows(c), capacity)
  }

  private def add(f: Long): Int = {
    if (size == frames.length) grow(size * 2)
    frames(size) = f
    if (size == 0) { lowest = f; highest = f } else if (f < lowest) lowest = f else if (f > highest) highest = f
    size += 1
    size - 1
  }

  private def position(f: Long): Int = {
    val h = f * 0x9E3779B97F4A7C15L // Fibonacci hashing
    (h ^ (h >>> 32)).toInt & (index.length - 1)
  }

}

private[spark] object FrameTable {
  /** About what one core's cache holds besides the rest of a task's work: tables beyond it are slower to
    * add to at random than through deferred events.
    */
  val CacheBytes: Long = 2L << 20

  /** How many events a task's keys must have had on average before it defers events: the appends of keys
    * with few events each are as scattered as their tables.
    */
  val EventsPerKey = 64

  /** How many positions a direct index may have beyond four per frame held. */
  private val Slack = 4096

  /** What one task's tables may still hold: direct index positions beyond the density rule, and deferred
    * events (in longs: an event's time and numbers); and past how many bytes of tables (their frames,
    * numbers and indexes) and events per key a task defers events.
    */
  final class Budget(var left: Long = 4L << 20, var deferredLeft: Long = 4L << 20, val cacheBytes: Long = CacheBytes,
      val eventsPerKey: Int = EventsPerKey) {
    /** The bytes of the tables' frames, numbers and indexes. */
    var tableBytes = 0L
  }

  private val noneDeferred = Array.emptyLongArray

  /** An index with no slot in it. */
  private def free(capacity: Int): Array[Int] = { val index = new Array[Int](capacity); java.util.Arrays.fill(index, -1); index }
}


/** A key's frames in frame order, in stage 2: frame `i` is `frames(i)`, with its numbers from
  * `i * columns` and, per row column, its row. `capacity` frames fit; `size` are held.
  */
private[spark] final class FrameRun(capacity: Int, columns: Int, rowColumns: Int, val keyNumber: java.lang.Long) {
  var size = 0
  val frames = new Array[Long](capacity)
  val numbers = new Array[Long](capacity * columns)
  val rows: Array[Array[InternalRow]] = Array.fill(rowColumns)(new Array[InternalRow](capacity))

  /** This run, or a copy of it without the room it does not use where that is a quarter or more (a merge
    * makes room for both runs' frames, and runs share frames).
    */
  def trimmed: FrameRun = if (size * 4 > capacity * 3) this else from(0)

  /** A copy of this run's frames from its `first`-th on. */
  def from(first: Int): FrameRun = {
    val out = new FrameRun(size - first, columns, rowColumns, keyNumber)
    out.size = size - first
    System.arraycopy(frames, first, out.frames, 0, out.size)
    System.arraycopy(numbers, first * columns, out.numbers, 0, out.size * columns)
    for (c <- rows.indices) System.arraycopy(rows(c), first, out.rows(c), 0, out.size)
    out
  }

  /** How many of this run's frames are at or before frame `frame` (frames are in order). */
  def upTo(frame: Long): Int = {
    var i = 0
    while (i < size && frames(i) <= frame) i += 1
    i
  }
}
