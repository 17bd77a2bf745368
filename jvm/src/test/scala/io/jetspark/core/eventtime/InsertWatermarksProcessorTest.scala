package io.jetspark.core.eventtime

import io.jetspark.core.{BufferedOutbox, IdleMessage, ProcessorContext, Watermark}
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

class InsertWatermarksProcessorTest extends AnyFunSuite {

  private val fixedClock: () => Long = () => 0L

  test("inserts the coalesced substream watermark before the event that raised it, in every harness variant") {
    //   p0: e10  e11 ................... e13
    //   p1: .......... e10  e11  e12 .......
    //   wm:                7    8   -     9    (lag 3)
    ProcessorVerifier(() => new InsertWatermarksProcessor[Long](EventTimePolicy(identity, 3), 2, fixedClock))
      .input(Seq(SubstreamItem(0, 10L), SubstreamItem(0, 11L), SubstreamItem(1, 10L), SubstreamItem(1, 11L),
        SubstreamItem(1, 12L), SubstreamItem(0, 13L)))
      .expectOutput(Seq(10L, 11L, Watermark(7), 10L, Watermark(8), 11L, 12L, Watermark(9), 13L))
      .verify()
  }

  test("throttled watermarks survive snapshot and restore without being emitted twice") {
    //   events:  3    7    12    15    29    31      (lag 0, frame 10)
    //   wm:      0    -    10    -     20    30
    ProcessorVerifier(() =>
      new InsertWatermarksProcessor[Long](EventTimePolicy(identity, 0, throttlingFrameSize = 10), 1, fixedClock))
      .input(Seq(3L, 7L, 12L, 15L, 29L, 31L).map(SubstreamItem(0, _)))
      .expectOutput(Seq(Watermark(0), 3L, 7L, Watermark(10), 12L, 15L, Watermark(20), 29L, Watermark(30), 31L))
      .verify()
  }

  test("tryProcess emits the idle message once every substream timed out, and keeps it through back-pressure") {
    var now = 0L
    val p = new InsertWatermarksProcessor[Long](EventTimePolicy(identity, 0, idleTimeoutMs = 100), 1, () => now)
    val outbox = new BufferedOutbox(1, 1)
    p.init(outbox, ProcessorContext("source", 0, 1))
    val inbox = new io.jetspark.core.ArrayDequeInbox
    inbox.add(SubstreamItem(0, 5L))
    p.process(0, inbox) // the outbox takes the watermark, refuses the item
    assert(outbox.drainBucket(0) == Seq(Watermark(5)) && inbox.size == 1)
    p.process(0, inbox)
    assert(outbox.drainBucket(0) == Seq(5L) && inbox.isEmpty)
    now = 99
    assert(p.tryProcess() && outbox.drainBucket(0).isEmpty)
    now = 100
    assert(p.tryProcess() && outbox.drainBucket(0) == Seq(IdleMessage))
    now = 200
    assert(p.tryProcess() && outbox.drainBucket(0).isEmpty)
  }

  test("a watermark from upstream is rejected: a source assigns its own") {
    val p = new InsertWatermarksProcessor[Long](EventTimePolicy(identity, 0), 1, fixedClock)
    p.init(new BufferedOutbox(1, 10), ProcessorContext("source", 0, 1))
    intercept[IllegalStateException](p.tryProcessWatermark(Watermark(1)))
  }
}
