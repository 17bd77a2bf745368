package io.jetspark.engine.spark.epoch

/** The time of a stream's epochs, kept on the driver. An epoch's time is the wall-clock time it starts at,
  * and at least 1 ms after the epoch before's. It is the one time every task of the epoch reads (idle
  * timeouts at the source, early-results periods at windows), so what is due at an epoch's end does not
  * depend on when or where its tasks run, and two epochs are never at the same time: a substream that
  * delivers nothing in an epoch has been quiet for at least 1 ms at its end (docs/streaming.md, rules 8, 6).
  */
final class EpochClock(now: () => Long = () => System.currentTimeMillis()) {
  private var last = Long.MinValue

  /** The time of the epoch that starts now. */
  def nextEpoch(): Long = synchronized {
    last = if (last == Long.MinValue) now() else math.max(now(), last + 1)
    last
  }
}
