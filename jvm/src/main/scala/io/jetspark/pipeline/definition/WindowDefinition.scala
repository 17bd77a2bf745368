package io.jetspark.pipeline.definition

import PipelineDefinitionError._

/** A window over event time, validated on construction.
  *
  * Windows are aligned to timestamp 0 and cover `[end - size, end)`; only non-empty windows are emitted.
  * Example: `sliding(10, 5)` puts an event at t = 12 into windows `[5, 15)` and `[10, 20)`; `tumbling(10)`
  * into `[10, 20)`. `session(10)` opens a session `[t, t + 10)` per event and merges overlapping ones.
  * With an early-results period `p > 0`, a window not yet closed by the watermark is also emitted every
  * `p` ms of processing time, marked early.
  */
sealed trait WindowDefinition extends Serializable {
  def earlyResultsPeriodMs: Long
  def setEarlyResultsPeriod(periodMs: Long): WindowDefinition
  def describe: String

  protected def earlyText: String = if (earlyResultsPeriodMs > 0) s", early results every ${earlyResultsPeriodMs}ms" else ""
  protected def requirePositive(call: String, what: String, value: Long): Unit =
    if (value <= 0) throw new PipelineDefinitionError(call, PositiveWindowValues, s"$what must be positive, was $value")
  protected def requireEarlyPeriod(call: String): Unit =
    if (earlyResultsPeriodMs < 0)
      throw new PipelineDefinitionError(call, PositiveWindowValues, s"the early-results period must be >= 0 (0: none), was $earlyResultsPeriodMs")
}

/** Sliding window of `sizeMs`, advancing by `slideMs`; tumbling when the two are equal. */
final case class SlidingWindowDefinition(sizeMs: Long, slideMs: Long, earlyResultsPeriodMs: Long = 0)
    extends WindowDefinition {
  private def call = s"WindowDefinition.sliding($sizeMs, $slideMs)"
  requirePositive(call, "size", sizeMs)
  requirePositive(call, "slide", slideMs)
  requireEarlyPeriod(call)
  // Frames are slide-long; a window must consist of whole frames.
  if (sizeMs % slideMs != 0)
    throw new PipelineDefinitionError(call, SlidingSizeMultipleOfSlide, s"size $sizeMs is not a multiple of slide $slideMs")

  def isTumbling: Boolean = sizeMs == slideMs
  override def setEarlyResultsPeriod(periodMs: Long): SlidingWindowDefinition = copy(earlyResultsPeriodMs = periodMs)
  override def describe: String =
    (if (isTumbling) s"tumbling(${sizeMs}ms" else s"sliding(${sizeMs}ms, slide ${slideMs}ms") + earlyText + ")"
}

/** Session window: an event opens `[t, t + timeoutMs)`; overlapping intervals (not touching ones) merge. */
final case class SessionWindowDefinition(timeoutMs: Long, earlyResultsPeriodMs: Long = 0) extends WindowDefinition {
  private def call = s"WindowDefinition.session($timeoutMs)"
  requirePositive(call, "timeout", timeoutMs)
  requireEarlyPeriod(call)

  override def setEarlyResultsPeriod(periodMs: Long): SessionWindowDefinition = copy(earlyResultsPeriodMs = periodMs)
  override def describe: String = s"session(timeout ${timeoutMs}ms$earlyText)"
}

object WindowDefinition {
  def tumbling(sizeMs: Long): SlidingWindowDefinition = SlidingWindowDefinition(sizeMs, sizeMs)
  def sliding(sizeMs: Long, slideMs: Long): SlidingWindowDefinition = SlidingWindowDefinition(sizeMs, slideMs)
  def session(timeoutMs: Long): SessionWindowDefinition = SessionWindowDefinition(timeoutMs)
}
