package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.aggregate.{AggregateOperations => ops}
import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class RollingAggregateProcessorTest extends AnyFunSuite {

  private val byFirst: Any => Any = _.asInstanceOf[(Any, Any)]._1
  private val bySecond: Any => Any = _.asInstanceOf[(Any, Any)]._2

  test("a global rolling aggregate emits the running result after every item") {
    ProcessorVerifier(() => RollingAggregateProcessor.global(ops.summing[Any](identity)))
      .input(Seq(1, 2, 3, 4))
      .expectOutput(Seq(1L, 3L, 6L, 10L))
      .verify()
  }

  test("a keyed rolling aggregate emits (key, running result of that key) after every item") {
    ProcessorVerifier(() => RollingAggregateProcessor.keyed(byFirst, ops.toList[Any]()))
      .input(Seq("a" -> 1, "b" -> 2, "a" -> 3, "b" -> 4, "c" -> 5))
      .expectOutput(Seq("a" -> List("a" -> 1), "b" -> List("b" -> 2), "a" -> List("a" -> 1, "a" -> 3),
        "b" -> List("b" -> 2, "b" -> 4), "c" -> List("c" -> 5)))
      .verify()
  }

  test("a rolling aggregate works with an operation that cannot combine, and maps its output") {
    val last = ops.of[Any, Array[Any], Any](() => Array[Any](null), (a, x) => { a(0) = x; a }, exportFn = _(0))
    ProcessorVerifier(() => new RollingAggregateProcessor(Some(byFirst), last, (key, result) => s"$key:$result"))
      .input(Seq("a" -> 1, "a" -> 2))
      .expectOutput(Seq("a:(a,1)", "a:(a,2)"))
      .verify()
    ProcessorVerifier(() => new RollingAggregateProcessor(None, ops.counting(), (key, result) => s"$key:$result"))
      .input(Seq("x")).expectOutput(Seq(s"${RollingAggregateProcessor.NoKey}:1")).verify()
  }

  /*  input:   1   2   wm(5)   3   wm(7)
   *  output:  1   3   wm(5)   6   wm(7)     (running sum; watermarks pass through in place)
   */
  test("watermarks are forwarded unchanged, in place among the running results") {
    ProcessorVerifier(() => RollingAggregateProcessor.global(ops.summing[Any](identity)))
      .input(Seq(1, 2, Watermark(5), 3, Watermark(7)))
      .expectOutput(Seq(1L, 3L, Watermark(5), 6L, Watermark(7)))
      .verify()
  }

  test("a global rolling state is restored by instance 0 only") {
    val outbox = new BufferedOutbox(1, Int.MaxValue)
    val first = RollingAggregateProcessor.global(ops.counting())
    first.init(outbox, ProcessorContext("rolling", 0, 1))
    val inbox = new ArrayDequeInbox
    inbox.addAll(Seq("x", "y"))
    first.process(0, inbox)
    assert(first.saveToSnapshot())
    val saved = outbox.drainSnapshot().map { case (k, v) => SnapshotEntry(k, v) }
    def runRestored(index: Int): Seq[Any] = {
      val out = new BufferedOutbox(1, Int.MaxValue)
      val p = RollingAggregateProcessor.global(ops.counting())
      p.init(out, ProcessorContext("rolling", index, 2))
      val restore = new ArrayDequeInbox
      restore.addAll(saved)
      p.restoreFromSnapshot(restore)
      val next = new ArrayDequeInbox
      next.add("z")
      p.process(0, next)
      out.drainBucket(0)
    }
    assert(runRestored(0) == Seq(3L))
    assert(runRestored(1) == Seq(1L))
  }

  test("a keyed rolling aggregate on random input equals running results computed by brute force") {
    val seed = TestSeed.base
    val random = new Random(seed)
    withClue(s"seed $seed:") {
      for (_ <- 1 to 5) {
        val items: Seq[Any] = Seq.fill(random.nextInt(20))(("k" + random.nextInt(3), random.nextInt(10)))
        val expected = items.indices.map { i =>
          val key = byFirst(items(i))
          val sameKeySoFar = items.take(i + 1).filter(byFirst(_) == key)
          key -> Seq(sameKeySoFar.size.toLong, sameKeySoFar.map(bySecond(_).asInstanceOf[Int]).max)
        }
        ProcessorVerifier(() => RollingAggregateProcessor.keyed(byFirst,
            ops.allOf[Any](ops.counting(), ops.andThen(ops.maxBy[Any, Int](bySecond(_).asInstanceOf[Int]))(_.map(bySecond).get))))
          .input(items).expectOutput(expected).verify()
      }
    }
  }
}
