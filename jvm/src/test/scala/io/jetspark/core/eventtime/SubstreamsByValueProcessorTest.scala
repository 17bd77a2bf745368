package io.jetspark.core.eventtime

import io.jetspark.core.{ArrayDequeInbox, BufferedOutbox, IdleMessage, ProcessorContext, Watermark}
import io.jetspark.core.snapshot.SnapshotEntry
import org.scalatest.funsuite.AnyFunSuite

class SubstreamsByValueProcessorTest extends AnyFunSuite {
  /** Events (substream value, timestamp). */
  private def processor() = new SubstreamsByValueProcessor[(String, Long)](_._2, _._1, allowedLagMs = 5)

  private def run(p: SubstreamsByValueProcessor[(String, Long)], outbox: BufferedOutbox, events: (String, Long)*): Seq[Any] = {
    val inbox = new ArrayDequeInbox
    events.foreach(inbox.add)
    while (!inbox.isEmpty) { p.process(0, inbox); () }
    while (!p.tryProcess()) ()
    outbox.drainBucket(0)
  }

  /** `fresh`, initialised and restored from the snapshot `p` saves now into `outbox`; and its own outbox. */
  private def restoredCopy(p: SubstreamsByValueProcessor[(String, Long)], outbox: BufferedOutbox,
      fresh: SubstreamsByValueProcessor[(String, Long)]): (SubstreamsByValueProcessor[(String, Long)], BufferedOutbox) = {
    assert(p.saveToSnapshot())
    val saved = outbox.drainSnapshot()
    val after = new BufferedOutbox(1, 100)
    fresh.init(after, ProcessorContext("source", 0, 1))
    val inbox = new ArrayDequeInbox
    saved.foreach { case (k, v) => inbox.add(SnapshotEntry(k, v)) }
    fresh.restoreFromSnapshot(inbox)
    (fresh, after)
  }

  test("the watermark is the least of the substream values' own, never goes back, and survives a snapshot") {
    val p = processor()
    val outbox = new BufferedOutbox(1, 100)
    p.init(outbox, ProcessorContext("source", 0, 1))
    // a runs to 100, b to 40: the least is b's, 40 - 5.
    assert(run(p, outbox, "a" -> 100L, "b" -> 30L, "b" -> 40L, "a" -> 90L) ==
      Seq("a" -> 100L, "b" -> 30L, "b" -> 40L, "a" -> 90L, Watermark(35)))
    // c first appears behind: it lowers nothing; b moves past c, so c holds the watermark at 20 - 5.
    assert(run(p, outbox, "c" -> 20L, "b" -> 60L) == Seq("c" -> 20L, "b" -> 60L))
    assert(run(p, outbox, "c" -> 70L) == Seq("c" -> 70L, Watermark(55)))
    // No event: nothing to say.
    assert(run(p, outbox).isEmpty)
    val (restored, after) = restoredCopy(p, outbox, processor())
    // c (70) holds it back after the restore; then a null substream value is one of its own.
    assert(run(restored, after, "b" -> 80L) == Seq("b" -> 80L, Watermark(65)))
    assert(run(restored, after, (null, 200L), "a" -> 300L, "c" -> 300L, "b" -> 300L) ==
      Seq((null, 200L), "a" -> 300L, "c" -> 300L, "b" -> 300L, Watermark(195)))
  }

  test("a value quiet for the idle timeout is left out of the least watermark until its next item; all idle, the greatest") {
    var now = 0L
    def idling() = new SubstreamsByValueProcessor[(String, Long)](_._2, _._1, allowedLagMs = 5, idleTimeoutMs = 10, () => now)
    val p = idling()
    val outbox = new BufferedOutbox(1, 100)
    p.init(outbox, ProcessorContext("source", 0, 1))
    assert(run(p, outbox, "a" -> 100L, "b" -> 40L) == Seq("a" -> 100L, "b" -> 40L, Watermark(35)))
    // 9 ms on, b has not timed out; at 10 ms, a's new item keeps a active and b is left out.
    now = 9
    assert(run(p, outbox, "a" -> 110L) == Seq("a" -> 110L))
    now = 10
    assert(run(p, outbox, "a" -> 120L) == Seq("a" -> 120L, Watermark(115)))
    // b delivers again, behind: active at its own watermark, which lowers nothing.
    assert(run(p, outbox, "b" -> 50L) == Seq("b" -> 50L))
    // Both quiet for 10 ms: the greatest of theirs, then idle, said once.
    now = 20
    assert(run(p, outbox) == Seq(IdleMessage))
    assert(run(p, outbox).isEmpty)
    // After a restore (as every epoch does), the timers run on and idleness is said again.
    val (restored, after) = restoredCopy(p, outbox, idling())
    assert(run(restored, after) == Seq(IdleMessage))
    now = 25
    assert(run(restored, after, "c" -> 300L) == Seq("c" -> 300L, Watermark(295)))
  }
}
