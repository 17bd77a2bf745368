package io.jetspark.core.window

/** When a window processor emits early results: with `periodMs > 0`, at most once per period by `clock`,
  * the first time one period after it starts ([[start]]). Its next time is part of the processor's
  * snapshot, so a processor restored at every step (the Spark epoch engine restores one every epoch)
  * still emits once per period, not at every step.
  */
private[window] final class EarlyResultsTimer(periodMs: Long, clock: () => Long) extends Serializable {
  if (periodMs < 0) throw new IllegalArgumentException(s"earlyResultsPeriodMs ($periodMs) must not be negative")

  private var nextAt = Long.MaxValue

  def enabled: Boolean = periodMs > 0

  def start(): Unit = if (enabled) nextAt = clock() + periodMs

  /** Whether early results are due now; if they are, the next ones are due one period from now. */
  def due(): Boolean = enabled && {
    val now = clock()
    now >= nextAt && { nextAt = now + periodMs; true }
  }

  /** What the processor with global index `processorIndex` saves, when early results are on. */
  def snapshotEntries(processorIndex: Int): Seq[(Any, Any)] =
    if (enabled) Seq(EarlyResultsKey(processorIndex) -> nextAt) else Nil

  def restore(savedNextAt: Long): Unit = nextAt = savedNextAt
}

/** Snapshot key of one window instance's next early-results time; restored by exactly one instance. */
final case class EarlyResultsKey(processorIndex: Int)
