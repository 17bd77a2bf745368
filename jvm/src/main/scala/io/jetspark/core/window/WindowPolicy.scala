package io.jetspark.core.window

/** A sliding window that hops by `slide` ms and covers `size` ms; tumbling when `size == slide`.
  *
  * The time axis is cut into frames of `slide` ms aligned to timestamp 0. A frame is named by its end:
  * the event at `ts` belongs to the frame `[end - slide, end)` with `end = floorDiv(ts, slide) * slide + slide`
  * (negative timestamps included). The window ending at `end` covers `[end - size, end)`, that is the
  * `size / slide` frames whose ends lie in `(end - size, end]`.
  *
  * {{{
  *   SlidingWindowPolicy(size = 4, slide = 2)
  *   ts:      0   1 | 2   3 | 4   5 | 6
  *   frames:  [0,2) | [2,4) | [4,6)        frame ends 2, 4, 6
  *   windows: [0,4) end 4 = frames 2, 4;   [2,6) end 6 = frames 4, 6
  * }}}
  * Every window an event falls in must be representable: its start at least `Long.MinValue`, its end at
  * most `Long.MaxValue` (an end is exclusive, so a window may end at `Long.MaxValue`). An event whose
  * windows are not all representable fails with a [[WindowOutOfRangeException]] where its frame is taken
  * ([[frameEnd]]) instead of giving windows whose bounds wrapped around.
  */
final case class SlidingWindowPolicy(size: Long, slide: Long) {
  if (slide <= 0 || size <= 0 || size % slide != 0)
    throw new IllegalArgumentException(
      s"sliding window size ($size ms) must be a positive multiple of its slide ($slide ms)")

  def isTumbling: Boolean = size == slide

  // The frames `q` (of `[q * slide, (q + 1) * slide)`) whose windows are representable: the first window
  // holding frame q starts at (q + 1) * slide - size, the last ends at q * slide + size.
  private val lowestFrame = Math.floorDiv(Long.MinValue + (size - slide) + (slide - 1), slide) // ceil
  private val highestFrame = Math.floorDiv(Long.MaxValue - size, slide)

  /** The end of the frame that holds an event at `ts`; throws [[WindowOutOfRangeException]] where a window
    * holding `ts` would start before `Long.MinValue` or end after `Long.MaxValue`.
    */
  def frameEnd(ts: Long): Long = frameNumber(ts) * slide

  /** The frame that holds an event at `ts` counted in slides, `frameEnd(ts) / slide`; throws as [[frameEnd]]. */
  def frameNumber(ts: Long): Long = {
    val q = Math.floorDiv(ts, slide)
    if (q < lowestFrame || q > highestFrame) {
      val (start, end) = (BigInt(q) * slide + slide - size, BigInt(q) * slide + size)
      throw new WindowOutOfRangeException(ts, s"its windows span [$start, $end) of sliding windows of $size ms by $slide ms")
    }
    q + 1
  }

  /** The highest frame (and window) end that is at or before `ts`: every window ending there is complete
    * once the watermark reaches `ts`. Saturates at `Long.MinValue` instead of overflowing.
    */
  def lastEndAtOrBefore(ts: Long): Long = {
    val q = lastFrameAtOrBefore(ts)
    if (q < Long.MinValue / slide) Long.MinValue else q * slide
  }

  /** [[lastEndAtOrBefore]] counted in slides, as [[frameNumber]] counts frames: an event is late once the
    * watermark is `wm` where its frame number is at most `lastFrameAtOrBefore(wm)` (and `wm` is not
    * `Long.MinValue`, which closes nothing).
    */
  def lastFrameAtOrBefore(ts: Long): Long = Math.floorDiv(ts, slide)

  /** The start of the window ending at `windowEnd`, saturated at `Long.MinValue`: a window that would start
    * lower holds no frame (see [[frameEnd]]), so it compares with frame ends as this bound does.
    */
  def windowStart(windowEnd: Long): Long = if (windowEnd < Long.MinValue + size) Long.MinValue else windowEnd - size

  /** The end of the window after the one ending at `windowEnd`, if a frame can end there (see [[frameEnd]]). */
  def nextEnd(windowEnd: Long): Option[Long] = if (windowEnd > Long.MaxValue - slide) None else Some(windowEnd + slide)
}

/** A session window: an event at `ts` spans `[ts, ts + timeout)`; events whose spans overlap (touching is
  * not overlapping) fall in one session, which ends `timeout` after its last event.
  */
final case class SessionWindowPolicy(timeout: Long) {
  if (timeout <= 0) throw new IllegalArgumentException(s"session timeout ($timeout ms) must be positive")

  /** The end of the span of an event at `ts`; throws [[WindowOutOfRangeException]] where it is after
    * `Long.MaxValue`.
    */
  def spanEnd(ts: Long): Long = {
    if (ts > Long.MaxValue - timeout)
      throw new WindowOutOfRangeException(ts, s"its session would end at ${BigInt(ts) + timeout} (timeout $timeout ms)")
    ts + timeout
  }
}

/** An event whose window (or session) would start or end beyond the 64-bit range of timestamps: the
  * window stage fails on it rather than emit a window whose bounds wrapped around.
  */
final class WindowOutOfRangeException(val ts: Long, detail: String)
    extends ArithmeticException(s"the event at timestamp $ts falls in a window that 64-bit timestamps cannot hold: " +
      s"$detail, beyond [${Long.MinValue}, ${Long.MaxValue}] (rule 'window-in-64-bit-range')")
