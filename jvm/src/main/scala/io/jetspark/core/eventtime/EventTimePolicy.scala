package io.jetspark.core.eventtime

/** How a source stage assigns event time and watermarks.
  *
  * @param timestampFn           the event time of an item, in ms
  * @param allowedLagMs          limiting lag: a substream's watermark is the highest timestamp seen on it
  *                              minus this; items up to this much out of order are not late
  * @param idleTimeoutMs         a substream that delivers nothing for this long is idle and stops
  *                              holding the watermark back, until it delivers again; 0 disables
  * @param throttlingFrameSize   watermarks are rounded down to a multiple of this (plus the offset), so
  *                              at most one is emitted per frame; use the downstream window's slide,
  *                              because a window can only close at a frame boundary anyway; 1 emits
  *                              every advance
  * @param throttlingFrameOffset where frames start: boundaries are `offset + k * frameSize`
  */
final case class EventTimePolicy[-T](
    timestampFn: T => Long,
    allowedLagMs: Long,
    idleTimeoutMs: Long = EventTimePolicy.DefaultIdleTimeoutMs,
    throttlingFrameSize: Long = 1,
    throttlingFrameOffset: Long = 0,
) {
  require(allowedLagMs >= 0, s"allowedLagMs must be >= 0, got $allowedLagMs")
  require(idleTimeoutMs >= 0, s"idleTimeoutMs must be >= 0 (0 disables idleness), got $idleTimeoutMs")
  require(throttlingFrameSize >= 1, s"throttlingFrameSize must be >= 1, got $throttlingFrameSize")
  require(
    throttlingFrameOffset >= 0 && throttlingFrameOffset < throttlingFrameSize,
    s"throttlingFrameOffset must be in [0, throttlingFrameSize = $throttlingFrameSize), got $throttlingFrameOffset")

  /** The watermark a substream may announce once it has seen `topTimestamp` (saturating at `Long.MinValue`). */
  def watermarkFor(topTimestamp: Long): Long =
    if (topTimestamp < Long.MinValue + allowedLagMs) Long.MinValue else topTimestamp - allowedLagMs

  /** `wm` rounded down to a frame boundary (saturating at `Long.MinValue`). */
  def throttle(wm: Long): Long = {
    // floorMod of the parts, so that `wm - offset` cannot overflow near Long.MinValue
    val intoFrame = Math.floorMod(Math.floorMod(wm, throttlingFrameSize) - throttlingFrameOffset, throttlingFrameSize)
    if (wm < Long.MinValue + intoFrame) Long.MinValue else wm - intoFrame
  }
}

object EventTimePolicy {
  /** Jet's and jetspark's default partition idle timeout (`JobConfig.partition_idle_timeout_ms`). */
  val DefaultIdleTimeoutMs: Long = 60000L
}
