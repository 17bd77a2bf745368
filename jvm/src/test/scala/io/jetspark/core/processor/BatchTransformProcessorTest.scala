package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

class BatchTransformProcessorTest extends AnyFunSuite {
  private def int(x: Any): Int = x.asInstanceOf[Int]
  /** Each item's outputs, batch by batch: what a per-item flat_map would give. */
  private val twiceUnlessOdd: IndexedSeq[Any] => IterableOnce[Any] = _.flatMap(x => if (int(x) % 2 == 1) Nil else Seq(x, int(x) * 10))

  test("emits every batch's outputs in order, under every inbox and outbox variant") {
    ProcessorVerifier(() => new BatchTransformProcessor(twiceUnlessOdd))
      .input(Seq(1, 2, 3, 4, 6))
      .expectOutput(Seq(2, 20, 4, 40, 6, 60))
      .verify()
  }

  test("watermarks pass through after the outputs of the items before them") {
    //  in:  2  wm(5)  4  wm(9)
    //  out: 2 20 wm(5) 4 40 wm(9)
    ProcessorVerifier(() => new BatchTransformProcessor(twiceUnlessOdd))
      .input(Seq(2, Watermark(5), 4, Watermark(9)))
      .expectOutput(Seq(2, 20, Watermark(5), 4, 40, Watermark(9)))
      .verify()
  }

  test("the function runs once per batch, with the whole inbox, also when the outbox refuses") {
    val batches = ArrayBuffer.empty[IndexedSeq[Any]]
    val outbox = new BufferedOutbox(1, 1)
    val p = new BatchTransformProcessor(batch => { batches += batch; batch.map(x => int(x) + 1) })
    p.init(outbox, ProcessorContext("batch", 0, 1))
    val inbox = new ArrayDequeInbox
    inbox.addAll(Seq(1, 2, 3))
    val emitted = ArrayBuffer.empty[Any]
    var calls = 0
    while (!inbox.isEmpty) { p.process(0, inbox); emitted ++= outbox.drainBucket(0); calls += 1 }
    assert(batches.toSeq == Seq(IndexedSeq(1, 2, 3)))
    assert(emitted.toSeq == Seq(2, 3, 4))
    assert(calls == 3, "one output accepted per call with a capacity-1 outbox; the items stay until all are out")
  }
}
