package io.jetspark.core.eventtime

import io.jetspark.core.{ControlItem, IdleMessage, Watermark}

/** Merges the watermarks of `inputCount` inputs (the upstream queues of an edge, or the substreams of a
  * source) into one watermark that never goes back.
  *
  * Each input is in one of three states:
  *  - active: it holds the coalesced watermark back to its last watermark (`Long.MinValue` before its
  *    first one);
  *  - idle: it sent [[IdleMessage]] and is left out until it sends a watermark or an item again
  *    (an item makes it active at its last watermark, because that item may be as old as that);
  *  - done: it is exhausted and left out for good.
  *
  * The coalesced watermark is the minimum over active inputs. When no input is active but some are idle,
  * nothing holds time back any more: the coalesced watermark moves to the maximum of the idle inputs'
  * watermarks and [[IdleMessage]] is forwarded, once, until some input becomes active again. When every
  * input is done nothing is emitted (the receiver's `complete` closes what remains).
  *
  * Every `observe*` call returns what to forward downstream, in order: a [[Watermark]] only when the
  * coalesced value rises above everything emitted so far, then possibly [[IdleMessage]].
  *
  * Errors: a watermark lower than the previous one on the same input, or anything after an input is
  * done, throws `IllegalStateException` naming the input and the values.
  *
  * Snapshot: [[state]] holds only the highest watermark emitted. The per-input positions are not saved
  * on purpose: after a restart every upstream replays from its own snapshot and announces its watermark
  * again, and under at-least-once that replayed watermark can be lower than what this coalescer saw
  * after the barrier; keeping the old positions would turn a legal replay into a "watermark went back"
  * error. The saved floor is what keeps the output from going back.
  */
final class WatermarkCoalescer(val inputCount: Int) {
  require(inputCount >= 1, s"a coalescer needs at least one input, got $inputCount")

  private val inputWms = Array.fill(inputCount)(Long.MinValue)
  private val idle = Array.fill(inputCount)(false)
  private val done = Array.fill(inputCount)(false)
  private var lastEmittedWm = Long.MinValue
  private var idleForwarded = false

  /** The highest watermark emitted so far (`Long.MinValue` before the first). */
  def lastEmitted: Long = lastEmittedWm

  /** A data item arrived on `input`: an idle input becomes active again at its last watermark. Adding
    * an input can only lower the minimum, so there is never anything to emit.
    */
  def observeItem(input: Int): Unit = {
    checkNotDone(input, "an item")
    if (idle(input)) {
      idle(input) = false
      idleForwarded = false
    }
  }

  def observeWatermark(input: Int, timestamp: Long): List[ControlItem] = {
    checkNotDone(input, s"watermark $timestamp")
    if (timestamp < inputWms(input))
      throw new IllegalStateException(
        s"watermark went back on input $input: received $timestamp after ${inputWms(input)}")
    inputWms(input) = timestamp
    idle(input) = false
    coalesce()
  }

  def observeIdle(input: Int): List[ControlItem] = {
    checkNotDone(input, "an idle message")
    idle(input) = true
    coalesce()
  }

  def observeDone(input: Int): List[ControlItem] = {
    checkNotDone(input, "a second done")
    done(input) = true
    idle(input) = false
    coalesce()
  }

  def isDone(input: Int): Boolean = done(input)

  def isIdle(input: Int): Boolean = idle(input)

  def state: WatermarkCoalescerState = WatermarkCoalescerState(lastEmittedWm)

  /** Restores the emitted floor into a fresh coalescer: inputs start active with no watermark. */
  def restore(saved: WatermarkCoalescerState): Unit = {
    lastEmittedWm = math.max(lastEmittedWm, saved.lastEmittedWm)
  }

  private def checkNotDone(input: Int, what: String): Unit =
    if (done(input))
      throw new IllegalStateException(
        s"input $input sent $what after it was done (its last watermark was ${inputWms(input)})")

  private def coalesce(): List[ControlItem] = {
    var minActive = Long.MaxValue
    var maxLive = Long.MinValue
    var anyActive = false
    var anyLive = false
    var i = 0
    while (i < inputCount) {
      if (!done(i)) {
        anyLive = true
        maxLive = math.max(maxLive, inputWms(i))
        if (!idle(i)) {
          anyActive = true
          minActive = math.min(minActive, inputWms(i))
        }
      }
      i += 1
    }
    if (anyActive) {
      idleForwarded = false
      advanceTo(minActive)
    } else if (anyLive && !idleForwarded) {
      idleForwarded = true
      advanceTo(maxLive) :+ IdleMessage
    } else Nil
  }

  private def advanceTo(wm: Long): List[ControlItem] =
    if (wm > lastEmittedWm) {
      lastEmittedWm = wm
      List(Watermark(wm))
    } else Nil
}

/** What a [[WatermarkCoalescer]] saves: the highest watermark it emitted. */
final case class WatermarkCoalescerState(lastEmittedWm: Long)
