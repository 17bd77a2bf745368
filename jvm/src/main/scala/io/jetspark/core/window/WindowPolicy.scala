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
  * Timestamps are assumed to lie at least one window away from `Long.MinValue` and `Long.MaxValue`.
  */
final case class SlidingWindowPolicy(size: Long, slide: Long) {
  if (slide <= 0 || size <= 0 || size % slide != 0)
    throw new IllegalArgumentException(
      s"sliding window size ($size ms) must be a positive multiple of its slide ($slide ms)")

  def isTumbling: Boolean = size == slide

  /** The end of the frame that holds an event at `ts`. */
  def frameEnd(ts: Long): Long = Math.floorDiv(ts, slide) * slide + slide

  /** The highest frame (and window) end that is at or before `ts`: every window ending there is complete
    * once the watermark reaches `ts`. Saturates at `Long.MinValue` instead of overflowing.
    */
  def lastEndAtOrBefore(ts: Long): Long = {
    val q = Math.floorDiv(ts, slide)
    if (q < Long.MinValue / slide) Long.MinValue else q * slide
  }

  def windowStart(windowEnd: Long): Long = windowEnd - size
}

/** A session window: an event at `ts` spans `[ts, ts + timeout)`; events whose spans overlap (touching is
  * not overlapping) fall in one session, which ends `timeout` after its last event.
  */
final case class SessionWindowPolicy(timeout: Long) {
  if (timeout <= 0) throw new IllegalArgumentException(s"session timeout ($timeout ms) must be positive")
}
