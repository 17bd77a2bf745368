package io.jetspark.engine.spark.window

import io.jetspark.core.window.SlidingWindowPolicy
import org.apache.spark.sql.catalyst.InternalRow

/** The slide of a columnar window ([[ColumnarFrames]]) over a key's frames: which frames a task must send
  * on ([[winners]]), and the windows over a key's merged frames in O(1) per window ([[windows]]): a
  * running count, and for a pick a queue of the frames that can still win (a frame leaves it once a later
  * frame beats it).
  */
private[spark] final class FrameSlide(layout: FrameLayout) extends Serializable {
  import FrameLayout._
  import layout._

  /** Of `t`'s slots in frame order, those stage 2 needs: all of them where a part counts; where every part
    * picks, only the frames that win a window of this task's events for some pick.
    *
    * Why: at small slides a window spans many frames and few of them ever win one (of random values, 2 in
    * 100 at 100 frames per window), so the rest need not cross the shuffle. No window's result changes:
    * its winner over every task's frames is the value and item of the first task (in the order stage 2
    * merges them) whose frame holds that value, and among that task's own frames nothing beats it and
    * nothing before it ties it, so that task keeps it; the tasks before it hold less in that frame, and
    * the other frames of the window, kept or not, nothing that beats it or ties it from before. A window
    * with an event in some task holds that task's winner, so the same windows are non-empty. (Frame `i`
    * wins a window unless the nearest frame before it that beats or ties it and the nearest after it that
    * beats it lie no more than a window apart: then every window holding `i` holds one of them.)
    */
  def winners(t: FrameTable, framesPerWindow: Long): Array[Int] = {
    val order = t.slotsInOrder
    if (framesPerWindow == 1 || parts.contains(Count)) return order
    val n = order.length
    val wins = new Array[Boolean](n)
    val stack = new Array[Int](n) // frames not yet beaten by a later one, of values that fall (or tie) towards the top
    var i = 0
    var p = 0
    while (p < parts.length) {
      val (pick, greatest) = (p, parts(p).asInstanceOf[Pick].greatest)
      def value(i: Int) = t.numbers(order(i) * numberColumns + pick)
      def frame(i: Int) = t.frames(order(i))
      /** Whether a window holds a frame between `before` and `after` but neither of them (-1: none). */
      def fitsBetween(before: Int, after: Int): Boolean = before < 0 || after < 0 || {
        val gap = frame(after) - frame(before)
        gap < 0 || gap > framesPerWindow // (negative: overflowed, farther apart than any window)
      }
      var top = -1
      i = 0
      while (i < n) {
        while (top >= 0 && beats(value(i), value(stack(top)), greatest)) {
          val beaten = stack(top)
          top -= 1
          wins(beaten) ||= fitsBetween(if (top >= 0) stack(top) else -1, i)
        }
        top += 1
        stack(top) = i
        i += 1
      }
      while (top >= 0) { wins(stack(top)) ||= fitsBetween(if (top > 0) stack(top - 1) else -1, -1); top -= 1 }
      p += 1
    }
    val kept = new Array[Int](n)
    var k = 0
    i = 0
    while (i < n) { if (wins(i)) { kept(k) = order(i); k += 1 }; i += 1 }
    java.util.Arrays.copyOf(kept, k)
  }

  /** What `emit` makes of each of a key's non-empty windows (its end and its result), in end order; without
    * `emit`, an empty row for each. Windows are counted in slides as frames are: window `w` ends at
    * `w * slide` and holds frames `w - size / slide + 1` to `w`. Only windows `from` to `until` (a stream's
    * epoch: those its watermark completes).
    */
  def windows(run: FrameRun, policy: SlidingWindowPolicy, emit: Option[(Long, Any) => InternalRow], from: Long = Long.MinValue,
      until: Long = Long.MaxValue): Iterator[InternalRow] = {
    val made = emit.orNull
    val (n, frames, numbers, framesPerWindow) = (run.size, run.frames, run.numbers, policy.size / policy.slide)
    val sums = new Array[Long](parts.length)
    // Per pick, the frames that may still win a window, best first: a frame enters at the back once every
    // frame it beats has left from there (ties stay: the earlier wins).
    val queues = Array.fill(parts.length)(new Array[Int](n))
    val heads = new Array[Int](parts.length)
    val tails = new Array[Int](parts.length)
    var entered = 0 // the window's frames are left until entered
    var left = 0
    var w = if (n == 0) 0L else math.max(frames(0), from)
    def enter(frame: Int): Unit = {
      var p = 0
      while (p < parts.length) {
        parts(p) match {
          case Count => sums(p) += numbers(frame * numberColumns + p)
          case Pick(_, _, greatest) =>
            while (tails(p) > heads(p) &&
              beats(numbers(frame * numberColumns + p), numbers(queues(p)(tails(p) - 1) * numberColumns + p), greatest)) tails(p) -= 1
            queues(p)(tails(p)) = frame
            tails(p) += 1
        }
        p += 1
      }
    }
    def leave(frame: Int): Unit = {
      var p = 0
      while (p < parts.length) {
        parts(p) match {
          case Count => sums(p) -= numbers(frame * numberColumns + p)
          case _: Pick => if (queues(p)(heads(p)) == frame) heads(p) += 1
        }
        p += 1
      }
    }
    def resultOf(s: Shape): Any = s match {
      case Leaf(p) => parts(p) match {
        case Count => Long.box(sums(p))
        case _: Pick =>
          val frame = queues(p)(heads(p))
          Some(if (itemsAsNumbers) new KeptFields(numbers, frame * numberColumns, layouts(picks(p)), fieldTypes, run.keyNumber)
            else run.rows(picks(p))(frame))
      }
      case AllOf(of) => of.map(resultOf).toArray[Any]
    }
    new Iterator[InternalRow] {
      private var nextResult: InternalRow = advance()

      def hasNext: Boolean = nextResult != null
      def next(): InternalRow = { val r = nextResult; nextResult = advance(); r }

      private def advance(): InternalRow = {
        while (left < n && w <= until) {
          while (entered < n && frames(entered) <= w) { enter(entered); entered += 1 }
          while (left < entered && frames(left) <= w - framesPerWindow) { leave(left); left += 1 }
          if (left < entered) {
            val result = if (made == null) InternalRow.empty else made(w * policy.slide, resultOf(shape))
            w += 1
            return result
          }
          if (entered < n) w = frames(entered) // no frame in this window: on to the next that has one
        }
        null
      }
    }
  }
}
