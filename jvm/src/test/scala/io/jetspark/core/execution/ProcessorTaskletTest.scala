package io.jetspark.core.execution

import io.jetspark.core._
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

class ProcessorTaskletTest extends AnyFunSuite {
  private val ctx = ProcessorContext("t", 0, 1)

  /** Records every call it gets, tagged, and emits each item `copies` times (to exercise back-pressure). */
  private class Recorder(copies: Int = 1) extends AbstractProcessor {
    val calls = ArrayBuffer.empty[String]
    private var emission = Emission.Done
    override def process(ordinal: Int, inbox: Inbox): Unit =
      while (!inbox.isEmpty) {
        if (emission.isDone) emission = Emission(Seq.fill(copies)(s"$ordinal:${inbox.peek()}"))
        if (!emission.emitTo(outbox)) return
        calls += s"item $ordinal:${inbox.poll()}"
      }
    override def tryProcessWatermark(wm: Watermark): Boolean = { calls += s"wm ${wm.timestamp}"; outbox.offer(wm) }
    override def completeEdge(ordinal: Int): Boolean = { calls += s"completeEdge $ordinal"; true }
    override def complete(): Boolean = {
      if (emission.isDone) { calls += "complete"; emission = Emission(Seq("end")) }
      emission.emitTo(outbox)
    }
  }

  test("one input: items, watermarks in place, then completeEdge and complete") {
    val p = new Recorder
    val out = ProcessorTasklet(p, ctx, Iterator(1, 2, Watermark(5), 3)).toList
    assert(out == List("0:1", "0:2", Watermark(5), "0:3", "end"))
    assert(p.calls.toList == List("item 0:1", "item 0:2", "wm 5", "item 0:3", "completeEdge 0", "complete"))
  }

  test("a priority group is drained and completed before the next group starts") {
    val p = new Recorder
    val t = new ProcessorTasklet(p, ctx, IndexedSeq(Iterator("a", "b"), Iterator("x", "y")), Seq(Seq(1), Seq(0)))
    assert(t.toList == List("1:x", "1:y", "0:a", "0:b", "end"))
    assert(p.calls.indexOf("completeEdge 1") < p.calls.indexOf("item 0:a"))
  }

  test("inputs of one group are taken round-robin, batch by batch") {
    val p = new Recorder
    val t = new ProcessorTasklet(p, ctx, IndexedSeq(Iterator(1, 2, 3), Iterator(7, 8, 9)), Seq(Seq(0, 1)), batchSize = 2)
    assert(t.toList == List("0:1", "0:2", "1:7", "1:8", "0:3", "1:9", "end"))
  }

  test("output is pulled lazily and the outbox bounds what one call can pile up") {
    val p = new Recorder(copies = 10)
    val pulled = Iterator.from(1)
    val t = new ProcessorTasklet(p, ctx, IndexedSeq(pulled.take(1000000)), Seq(Seq(0)), batchSize = 4, outboxCapacity = 3)
    assert(t.take(5).toList == List.fill(5)("0:1"))
    // After five outputs, only the first batch of input was read: nothing runs ahead of the consumer.
    assert(pulled.next() == 5)
  }

  test("no input at all still completes the processor") {
    assert(ProcessorTasklet(new Recorder, ctx, Iterator.empty).toList == List("end"))
  }

  test("epochs: each restores what the one before saved; only the last completes") {
    // A running sum per key over two epochs must equal one run over both epochs' items.
    import io.jetspark.core.aggregate.AggregateOperations
    import io.jetspark.core.processor.RollingAggregateProcessor
    def rolling() = RollingAggregateProcessor.keyed(x => x.asInstanceOf[Int] % 2,
      AggregateOperations.summingLong((x: Int) => x.toLong).asInstanceOf[io.jetspark.core.aggregate.AggregateOperation[Nothing, _, Any]])
    val items = (1 to 10).toList
    val whole = ProcessorTasklet(rolling(), ctx, items.iterator).toList
    val first = new ProcessorTasklet(rolling(), ctx, IndexedSeq(items.take(4).iterator), Seq(Seq(0)),
      atEnd = () => ProcessorTasklet.SaveSnapshot)
    val out1 = first.toList
    assert(first.snapshot.nonEmpty)
    val second = new ProcessorTasklet(rolling(), ctx, IndexedSeq(items.drop(4).iterator), Seq(Seq(0)),
      restored = first.snapshot)
    assert(out1 ++ second.toList == whole)
  }

  test("the snapshot is there only once the epoch's output is") {
    val t = new ProcessorTasklet(new Recorder, ctx, IndexedSeq(Iterator(1, 2)), Seq(Seq(0)), atEnd = () => ProcessorTasklet.SaveSnapshot)
    assertThrows[IllegalStateException](t.snapshot)
    assert(t.toList == List("0:1", "0:2"))
    assert(t.snapshot.isEmpty) // the recorder keeps no state, and did not complete
  }
}
