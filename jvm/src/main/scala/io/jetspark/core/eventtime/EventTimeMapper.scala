package io.jetspark.core.eventtime

import io.jetspark.core.{IdleMessage, Watermark}

/** Assigns event time on a source with `substreamCount` substreams (source partitions) and decides which
  * watermarks to insert into its output.
  *
  *  - A substream's watermark is the highest timestamp seen on it minus `allowedLagMs` (limiting lag);
  *    a substream that has delivered nothing has none (`Long.MinValue`) and holds everything back.
  *  - The source watermark is the minimum over substreams that are not idle ([[WatermarkCoalescer]] with
  *    one input per substream). A substream is idle once it delivered nothing for `idleTimeoutMs` by
  *    `clock` (counted from construction or restore for one that never delivered); idleness is decided
  *    on every call, so call [[flatMapIdle]] when there is no event. Its next event makes it active.
  *    When every substream is idle, [[IdleMessage]] is emitted once.
  *  - A watermark is emitted before the event that raised it, rounded down to the policy's frame
  *    (throttling), and only when it is higher than every watermark emitted before; at most one per call.
  *
  * Lateness is not decided here: an event behind its substream's watermark is passed on unchanged, and
  * the window downstream decides.
  *
  * Snapshot: [[state]] holds each substream's highest timestamp, the last emitted watermark and when each
  * substream last delivered. After [[restore]] every substream is active and no watermark at or below the
  * restored one is emitted again. Its idle timer restarts, as in Jet after a job restarts, unless
  * `idleTimersSurviveRestore`: then it runs on from the saved time of its last event. An engine that
  * restores the same mapper's state at every step (the Spark epoch engine, every epoch) asks for that,
  * or no substream could ever stay quiet long enough to be idle.
  */
final class EventTimeMapper[T](policy: EventTimePolicy[T], substreamCount: Int, clock: () => Long,
    idleTimersSurviveRestore: Boolean = false) {
  require(substreamCount >= 1, s"substreamCount must be >= 1, got $substreamCount")

  private val topTimestamps = Array.fill(substreamCount)(Long.MinValue)
  private val lastEventAt = Array.fill(substreamCount)(clock())
  private var coalescer = new WatermarkCoalescer(substreamCount)
  private var lastEmittedWm = Long.MinValue

  /** The items to emit for `event` arriving on `substream`: possibly a [[Watermark]], then the event. */
  def flatMapEvent(substream: Int, event: T): List[Any] = {
    require(substream >= 0 && substream < substreamCount, s"substream $substream is not in [0, $substreamCount)")
    val now = clock()
    coalescer.observeItem(substream) // an idle substream is active again
    lastEventAt(substream) = now
    // other substreams may have timed out meanwhile; decide that before this event's watermark
    val fromIdleness = idleTransitions(now)
    val timestamp = policy.timestampFn(event)
    val fromEvent =
      if (timestamp <= topTimestamps(substream)) Nil
      else {
        val before = policy.watermarkFor(topTimestamps(substream))
        topTimestamps(substream) = timestamp
        val after = policy.watermarkFor(timestamp)
        if (after > before) coalescer.observeWatermark(substream, after) else Nil
      }
    toEmit(fromIdleness ::: fromEvent) :+ event
  }

  /** What to emit when there is no event: a watermark or [[IdleMessage]] if substreams went idle. */
  def flatMapIdle(): List[Any] = toEmit(idleTransitions(clock()))

  /** The highest watermark emitted so far (`Long.MinValue` before the first). */
  def lastEmitted: Long = lastEmittedWm

  def state: EventTimeMapperState = EventTimeMapperState(topTimestamps.toVector, lastEmittedWm, lastEventAt.toVector)

  def restore(saved: EventTimeMapperState): Unit = {
    require(
      saved.topTimestamps.size == substreamCount,
      s"snapshot has ${saved.topTimestamps.size} substreams, this mapper has $substreamCount")
    val now = clock()
    coalescer = new WatermarkCoalescer(substreamCount)
    for (s <- 0 until substreamCount) {
      topTimestamps(s) = saved.topTimestamps(s)
      lastEventAt(s) = if (idleTimersSurviveRestore && saved.lastEventAt.nonEmpty) saved.lastEventAt(s) else now
      // Dropping what this yields loses nothing: the minimum over all substreams never exceeds the last
      // coalesced watermark before the snapshot, so its throttled value is at most the restored one.
      coalescer.observeWatermark(s, policy.watermarkFor(topTimestamps(s)))
    }
    lastEmittedWm = math.max(lastEmittedWm, saved.lastEmittedWm)
  }

  private def idleTransitions(now: Long): List[Any] =
    if (policy.idleTimeoutMs == 0) Nil
    else {
      var out: List[Any] = Nil
      for (s <- 0 until substreamCount if !coalescer.isIdle(s) && now - lastEventAt(s) >= policy.idleTimeoutMs) {
        out = out ::: coalescer.observeIdle(s)
      }
      out
    }

  /** Applies throttling and the never-go-back rule to what the coalescer reported during one call. Of
    * several watermarks (substreams timing out one after another, then the event's own) only the last,
    * highest one is emitted: they would all precede the same event.
    */
  private def toEmit(coalesced: List[Any]): List[Any] = {
    val highest = coalesced.collect { case Watermark(ts) => ts }.lastOption.map(policy.throttle)
    val wm = highest.filter(_ > lastEmittedWm).map { ts => lastEmittedWm = ts; Watermark(ts) }
    wm.toList ++ coalesced.filter(_ == IdleMessage)
  }
}

/** What an [[EventTimeMapper]] saves: the highest timestamp seen on each substream (`Long.MinValue` for
  * none), the last watermark it emitted, and by its clock when each substream last delivered (or the
  * mapper started, for one that never did; empty in a state saved before this was kept).
  */
final case class EventTimeMapperState(topTimestamps: Vector[Long], lastEmittedWm: Long,
    lastEventAt: Vector[Long] = Vector.empty)
