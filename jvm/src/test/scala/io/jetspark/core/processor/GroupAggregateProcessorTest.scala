package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations => ops}
import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class GroupAggregateProcessorTest extends AnyFunSuite {

  private val byFirst: Any => Any = _.asInstanceOf[(Any, Any)]._1
  private val bySecond: Any => Any = _.asInstanceOf[(Any, Any)]._2
  private val valueAsLong: Any => Long = bySecond(_).asInstanceOf[Int].toLong

  private def accumulated[A](op: AggregateOperation[Any, A, _], items: Any*): A = items.foldLeft(op.create())(op.accumulate(_, _))

  /** Compares `(key, accumulator)` outputs by the accumulators' results, as multisets. */
  private def partialsCheckedBy(op: AggregateOperation[Any, _, Any]): (Seq[Any], Seq[Any]) => Boolean = {
    val exporting = op.asInstanceOf[AggregateOperation[Any, Any, Any]]
    (expected, actual) => ProcessorVerifier.sameMultiset(expected, actual.map {
      case (key, acc) => (key, exporting.exportResult(acc))
      case acc => exporting.exportResult(acc)
    })
  }

  private def assertNoStateLeft(p: Processor): Unit =
    assert(p.asInstanceOf[GroupAggregateProcessor].isStateEmpty, "state left after complete")

  // ---- single stage ----

  test("AggregateByKeyProcessor emits (key, result) per key in first-encounter order on complete") {
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), ops.summingLong(valueAsLong)))
      .input(Seq("a" -> 1, "b" -> 2, "a" -> 3, "c" -> 4, "b" -> 5))
      .expectOutput(Seq("a" -> 4L, "b" -> 7L, "c" -> 4L))
      .assertAfterComplete(assertNoStateLeft)
      .verify()
  }

  test("AggregateByKeyProcessor aggregates with an operation that cannot combine") {
    val concat = ops.of[Any, StringBuilder, String](() => new StringBuilder, (sb, item) => sb.append(bySecond(item)), exportFn = _.toString)
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), concat))
      .input(Seq("a" -> "x", "b" -> "y", "a" -> "z"))
      .expectOutput(Seq("a" -> "xz", "b" -> "y"))
      .verify()
  }

  test("an operation with immutable accumulators (accumulate returns a new value) aggregates too") {
    val immutableSum = ops.of[Any, Long, Long](() => 0L, (sum, item) => sum + valueAsLong(item), combine = Some(_ + _), exportFn = identity)
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), immutableSum))
      .input(Seq("a" -> 1, "b" -> 2, "a" -> 3))
      .expectOutput(Seq("a" -> 4L, "b" -> 2L))
      .verify()
    ProcessorVerifier(() => new CombineByKeyProcessor(immutableSum))
      .input(Seq("a" -> 1L, "a" -> 3L)).expectOutput(Seq("a" -> 4L)).verify()
  }

  test("a keyed aggregation of no input emits nothing") {
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), ops.counting()))
      .input(Seq.empty).expectOutput(Seq.empty).verify()
  }

  test("AggregateByKeyProcessor co-aggregates two inputs: ordinal 0 to op0, ordinal 1 to op1") {
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst, bySecond),
        ops.aggregateOperation2(ops.counting(), ops.toList[Any]())))
      .inputs(Seq(Seq("a" -> 1, "b" -> 2, "a" -> 3), Seq(10 -> "b", 11 -> "c", 12 -> "b")))
      .expectOutput(Seq("a" -> (2L, Nil), "b" -> (1L, List(10 -> "b", 12 -> "b")), "c" -> (0L, List(11 -> "c"))))
      .verify()
  }

  test("a null key (Python's None) is a key like any other") {
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), ops.counting()))
      .input(Seq((null, 1), "a" -> 2, (null, 3)))
      .expectOutput(Seq((null, 2L), "a" -> 1L))
      .verify()
  }

  test("AggregateProcessor co-aggregates two inputs globally") {
    ProcessorVerifier(() => new AggregateProcessor(ops.aggregateOperation2(ops.toSet[Any](), ops.summing[Any](identity))))
      .inputs(Seq(Seq("x", "y", "x"), Seq(1, 2.5)))
      .expectOutput(Seq((Set("x", "y"), 3.5)))
      .verify()
  }

  test("AggregateProcessor emits the one result, and the result of nothing when there was no input") {
    ProcessorVerifier(() => new AggregateProcessor(ops.averaging[Any](bySecond)))
      .input(Seq("a" -> 1, "b" -> 2, "c" -> 6)).expectOutput(Seq(3.0)).assertAfterComplete(assertNoStateLeft).verify()
    ProcessorVerifier(() => new AggregateProcessor(ops.counting()))
      .input(Seq.empty).expectOutput(Seq(0L)).verify()
  }

  test("aggregation processors forward watermarks unchanged, before the results") {
    ProcessorVerifier(() => new AggregateByKeyProcessor(IndexedSeq(byFirst), ops.counting()))
      .input(Seq("a" -> 1, Watermark(5), "a" -> 2, Watermark(9)))
      .expectOutput(Seq(Watermark(5), Watermark(9), "a" -> 2L))
      .verify()
    ProcessorVerifier(() => new CombineProcessor(ops.counting()))
      .input(Seq(Watermark(3))).expectOutput(Seq(Watermark(3), 0L)).verify()
  }

  // ---- two stages ----

  test("AccumulateByKeyProcessor emits (key, partial accumulator) per key") {
    val op = ops.summingLong(valueAsLong)
    ProcessorVerifier(() => new AccumulateByKeyProcessor(IndexedSeq(byFirst), op))
      .input(Seq("a" -> 1, "b" -> 2, "a" -> 3))
      .expectOutput(Seq("a" -> 4L, "b" -> 2L))
      .checkOutputWith(partialsCheckedBy(op))
      .assertAfterComplete(assertNoStateLeft)
      .verify()
  }

  test("CombineByKeyProcessor combines partial accumulators per key and emits (key, result)") {
    val op = ops.toSet[Any]()
    // The harness feeds these same accumulator objects to every variant: a processor that combined
    // into its input instead of a fresh accumulator would change later variants' input and fail.
    ProcessorVerifier(() => new CombineByKeyProcessor(op))
      .input(Seq("a" -> accumulated(op, 1, 2), "b" -> accumulated(op, 5), "a" -> accumulated(op, 2, 3), "b" -> op.create()))
      .expectOutput(Seq("a" -> Set(1, 2, 3), "b" -> Set(5)))
      .assertAfterComplete(assertNoStateLeft)
      .verify()
  }

  test("CombineByKeyProcessor with finish = false emits the combined accumulators") {
    val op = ops.counting()
    ProcessorVerifier(() => new CombineByKeyProcessor(op, finish = false))
      .input(Seq("a" -> accumulated(op, 1, 2), "a" -> accumulated(op, 3)))
      .expectOutput(Seq("a" -> 3L))
      .checkOutputWith(partialsCheckedBy(op))
      .verify()
  }

  test("AccumulateProcessor emits one partial accumulator, an empty one for no input") {
    val op = ops.summing[Any](bySecond)
    ProcessorVerifier(() => new AccumulateProcessor(op))
      .input(Seq("a" -> 1, "b" -> 2)).expectOutput(Seq(3L)).checkOutputWith(partialsCheckedBy(op)).verify()
    ProcessorVerifier(() => new AccumulateProcessor(op))
      .input(Seq.empty).expectOutput(Seq(0L)).checkOutputWith(partialsCheckedBy(op)).verify()
  }

  test("CombineProcessor combines partials into one result, the result of nothing when none arrive") {
    val op = ops.maxBy[Any, Int](_.asInstanceOf[Int])
    ProcessorVerifier(() => new CombineProcessor(op))
      .input(Seq(accumulated(op, 3, 9), op.create(), accumulated(op, 4)))
      .expectOutput(Seq(Some(9)))
      .assertAfterComplete(assertNoStateLeft)
      .verify()
    ProcessorVerifier(() => new CombineProcessor(ops.counting()))
      .input(Seq.empty).expectOutput(Seq(0L)).verify()
  }

  test("stages of two-stage aggregation refuse an operation that cannot combine") {
    val noCombine = ops.of[Any, Array[Int], Int](() => Array(0), (a, _) => a, exportFn = _(0))
    intercept[IllegalArgumentException](new AccumulateByKeyProcessor(IndexedSeq(byFirst), noCombine))
    intercept[IllegalArgumentException](new CombineByKeyProcessor(noCombine))
    intercept[IllegalArgumentException](new AccumulateProcessor(noCombine))
    intercept[IllegalArgumentException](new CombineProcessor(noCombine))
  }

  // ---- snapshots across instances ----

  /** Runs `p` on `items` with a roomy outbox; returns the snapshot entries it saves afterwards. */
  private def accumulateAndSave(p: Processor, index: Int, parallelism: Int, items: Seq[Any]): Seq[SnapshotEntry] = {
    val outbox = new BufferedOutbox(1, Int.MaxValue)
    p.init(outbox, ProcessorContext("stage", index, parallelism))
    val inbox = new ArrayDequeInbox
    inbox.addAll(items)
    p.process(0, inbox)
    assert(inbox.isEmpty && p.saveToSnapshot())
    outbox.drainSnapshot().map { case (k, v) => SnapshotEntry(k, v) }
  }

  /** A fresh instance restored from `entries`, completed; returns its output. */
  private def restoreAndComplete(p: Processor, index: Int, parallelism: Int, entries: Seq[SnapshotEntry]): Seq[Any] = {
    val outbox = new BufferedOutbox(1, Int.MaxValue)
    p.init(outbox, ProcessorContext("stage", index, parallelism))
    val inbox = new ArrayDequeInbox
    inbox.addAll(entries)
    p.restoreFromSnapshot(inbox)
    assert(p.finishSnapshotRestore() && p.complete())
    outbox.drainBucket(0)
  }

  test("a keyed snapshot saves one entry per key, and a restore combines a key's entries from several instances") {
    val op = ops.toList[Any]()
    val saved0 = accumulateAndSave(new AccumulateByKeyProcessor(IndexedSeq(byFirst), op), 0, 2, Seq("a" -> 1, "b" -> 2))
    val saved1 = accumulateAndSave(new AccumulateByKeyProcessor(IndexedSeq(byFirst), op), 1, 2, Seq("a" -> 3))
    assert((saved0 ++ saved1).map(_.key) == Seq("a", "b", "a"))
    // Repartitioned to one instance: it owns both keys and gets all three entries.
    val out = restoreAndComplete(new AccumulateByKeyProcessor(IndexedSeq(byFirst), op), 0, 1, saved0 ++ saved1)
    assert(partialsCheckedBy(op)(Seq("a" -> List("a" -> 1, "a" -> 3), "b" -> List("b" -> 2)), out))
  }

  test("a global snapshot entry is broadcast, and only instance 0 restores it, combining every instance's entry") {
    val op = ops.counting()
    val saved = Seq(Seq(1, 2, 3), Seq(4, 5)).zipWithIndex.flatMap { case (items, i) =>
      accumulateAndSave(new AccumulateProcessor(op), i, 2, items)
    }
    // Every instance receives every broadcast entry on restore.
    val outputs = (0 until 3).map(i => restoreAndComplete(new AccumulateProcessor(op), i, 3, saved))
    assert(partialsCheckedBy(op)(Seq(5L), outputs(0)))
    assert(partialsCheckedBy(op)(Seq(0L), outputs(1)) && partialsCheckedBy(op)(Seq(0L), outputs(2)))
  }

  // ---- randomized: two-stage aggregation against a brute-force group-by ----

  /** Brute-force group-by: per key, (count, sum, first item with the least value, distinct items). */
  private def groupByReference(items: Seq[Any]): Seq[(Any, Seq[Any])] =
    items.groupBy(byFirst).toSeq.map { case (key, group) =>
      val values = group.map(bySecond(_).asInstanceOf[Int])
      key -> Seq[Any](group.size.toLong, values.map(_.toLong).sum, group.find(g => values.forall(bySecond(g).asInstanceOf[Int] <= _)), group.toSet)
    }

  /*  items ──split at random──▶ AccumulateByKey ×k ──(key, acc)──partition by key──▶ CombineByKey ×m ──▶ (key, result)
   *  expected, at every instance of both stages: a plain group-by of the items that reached it.
   */
  test("two-stage aggregation on random partial stages equals a brute-force group-by") {
    val seed = TestSeed.base
    val random = new Random(seed)
    val op = ops.allOf[Any](ops.counting(), ops.summing[Any](bySecond), ops.minBy[Any, Int](bySecond(_).asInstanceOf[Int]), ops.toSet[Any]())
    withClue(s"seed $seed:") {
      for (_ <- 1 to 6) {
        val items: Seq[Any] = Seq.fill(random.nextInt(25))(("k" + random.nextInt(5), random.nextInt(7) - 3))
        val k = 1 + random.nextInt(3)
        val m = 1 + random.nextInt(2)
        def partitionOf(key: Any): Int = Math.floorMod(key.hashCode, m)
        val partials = items.groupBy(_ => random.nextInt(k)).values.toSeq.flatMap { part =>
          ProcessorVerifier(() => new AccumulateByKeyProcessor(IndexedSeq(byFirst), op))
            .input(part).expectOutput(groupByReference(part)).checkOutputWith(partialsCheckedBy(op)).verify().head
        }
        val results = partials.groupBy(partial => partitionOf(byFirst(partial))).toSeq.flatMap { case (partition, part) =>
          ProcessorVerifier(() => new CombineByKeyProcessor(op))
            .input(part).expectOutput(groupByReference(items).filter { case (key, _) => partitionOf(key) == partition }).anyOrder
            .verify().head
        }
        assert(ProcessorVerifier.sameMultiset(groupByReference(items), results), s"items $items, k $k, m $m")
      }
    }
  }
}
