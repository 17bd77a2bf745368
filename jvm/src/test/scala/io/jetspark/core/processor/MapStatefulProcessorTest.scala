package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class MapStatefulProcessorTest extends AnyFunSuite {
  private def key(item: Any): Any = item.asInstanceOf[(String, Int)]._1
  private def value(item: Any): Int = item.asInstanceOf[(String, Int)]._2

  /** Keyed running sum, emitted as (key, sum) after each item. */
  private def runningSum = MapStatefulProcessor.keyed(
    key, () => 0L, (sum, k, item) => { val s = sum.asInstanceOf[Long] + value(item); (s, Some((k, s))) })

  test("keyed: each key's state is created on its first item and folded in encounter order") {
    ProcessorVerifier(() => runningSum)
      .input(Seq(("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)))
      .expectOutput(Seq(("a", 1L), ("b", 10L), ("a", 3L), ("a", 6L), ("b", 30L)))
      .assertAfterComplete(p => assert(p.asInstanceOf[MapStatefulProcessor].keyCount == 2))
      .verify()
  }

  test("an output of None emits nothing, but the state still changes") {
    // Emits the count of a key's items at every third item.
    def everyThird = MapStatefulProcessor.keyed(key, () => 0, (n, k, _) => {
      val c = n.asInstanceOf[Int] + 1
      (c, if (c % 3 == 0) Some((k, c)) else None)
    })
    ProcessorVerifier(() => everyThird)
      .input(Seq(("a", 0), ("a", 0), ("b", 0), ("a", 0), ("b", 0), ("a", 0), ("b", 0)))
      .expectOutput(Seq(("a", 3), ("b", 3)))
      .verify()
  }

  test("global: one state over all items; watermarks pass through in place") {
    //  in:  5   7   wm(3)   1   wm(9)
    //  out: 5   12  wm(3)   13  wm(9)      (running total)
    def total = MapStatefulProcessor.global(() => 0, (s, x) => { val t = s.asInstanceOf[Int] + x.asInstanceOf[Int]; (t, Some(t)) })
    ProcessorVerifier(() => total)
      .input(Seq(5, 7, Watermark(3), 1, Watermark(9)))
      .expectOutput(Seq(5, 12, Watermark(3), 13, Watermark(9)))
      .verify()
  }

  test("restoring a global state saved by several instances fails and says why") {
    val p = MapStatefulProcessor.global(() => 0, (s, x) => (s, Some(x)))
    p.init(new BufferedOutbox(1, 10), ProcessorContext("counter", 0, 1))
    val inbox = new ArrayDequeInbox
    inbox.addAll(Seq(
      SnapshotEntry(MapStatefulProcessor.GlobalStateKey, MapStatefulProcessor.KeyState(1)),
      SnapshotEntry(MapStatefulProcessor.GlobalStateKey, MapStatefulProcessor.KeyState(2))))
    val e = intercept[IllegalStateException](p.restoreFromSnapshot(inbox))
    assert(e.getMessage.contains("counter") && e.getMessage.contains("cannot be merged"))
  }

  test("random keyed items: the outputs are each key's running sum, as a plain fold computes it") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 20) withClue(s"seed $seed, trial $trial: ") {
      val input: Seq[Any] = Seq.fill(random.nextInt(25))((Seq("a", "b", "c", "d")(random.nextInt(4)), random.nextInt(100) - 50))
      val expected = input.foldLeft((Map.empty[Any, Long], Vector.empty[Any])) { case ((sums, out), item) =>
        val s = sums.getOrElse(key(item), 0L) + value(item)
        (sums.updated(key(item), s), out :+ ((key(item), s)))
      }._2
      ProcessorVerifier(() => runningSum).input(input).expectOutput(expected).verify()
    }
  }
}
