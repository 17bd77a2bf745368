package io.jetspark.core.testing

import io.jetspark.core._
import io.jetspark.core.snapshot.SnapshotEntry
import org.scalatest.funsuite.AnyFunSuite

/** The harness itself: it must pass a correct processor and catch the faults it exists to catch. */
class ProcessorVerifierTest extends AnyFunSuite {

  /** Emits a running count after each item, and the count again at each watermark, before it. */
  private class RunningCount(saveState: Boolean = true) extends AbstractProcessor {
    private var count = 0L
    private var emission = Emission.Done
    override def process(ordinal: Int, inbox: Inbox): Unit =
      while (!inbox.isEmpty) {
        if (emission.isDone) { count += 1; emission = Emission(Seq(count)) }
        if (!emission.emitTo(outbox)) return
        inbox.remove() // only once its output is accepted: the contract's "fully handled"
      }
    override def tryProcessWatermark(wm: Watermark): Boolean = {
      if (emission.isDone) emission = Emission(Seq(s"at ${wm.timestamp}: $count", wm))
      emission.emitTo(outbox)
    }
    override def saveToSnapshot(): Boolean = !saveState || outbox.offerToSnapshot("count", count)
    override def restoreFromSnapshot(inbox: Inbox): Unit =
      while (!inbox.isEmpty) { count = inbox.poll().asInstanceOf[SnapshotEntry].value.asInstanceOf[Long] }
  }

  test("a correct processor passes every variant") {
    ProcessorVerifier(() => new RunningCount())
      .input(Seq("a", "b", Watermark(5), "c"))
      .expectOutput(Seq(1L, 2L, "at 5: 2", Watermark(5), 3L))
      .verify()
  }

  test("state that is not saved is caught by the snapshot variants") {
    val e = intercept[AssertionError] {
      ProcessorVerifier(() => new RunningCount(saveState = false))
        .input(Seq("a", "b")).expectOutput(Seq(1L, 2L)).verify()
    }
    assert(e.getMessage.contains("snapshot+restore"))
  }

  test("a call that makes no progress is caught") {
    class Stuck extends AbstractProcessor {
      override def process(ordinal: Int, inbox: Inbox): Unit = ()
      override def tryProcessWatermark(wm: Watermark): Boolean = true
    }
    val e = intercept[AssertionError] { ProcessorVerifier(() => new Stuck).input(Seq(1)).verify() }
    assert(e.getMessage.contains("made no progress"))
  }

  test("an item refused by the outbox and then dropped is caught by the tiny outbox") {
    class Lossy extends AbstractProcessor {
      override def process(ordinal: Int, inbox: Inbox): Unit = { outbox.offer(inbox.poll()); () }
      override def tryProcessWatermark(wm: Watermark): Boolean = true
    }
    val e = intercept[AssertionError] { ProcessorVerifier(() => new Lossy).input(Seq(1, 2, 3, 4)).expectOutput(Seq(1, 2, 3, 4)).verify() }
    assert(e.getMessage.contains("capacity 1"))
  }
}
