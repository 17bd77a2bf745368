package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations, AnyOrdering}
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer
import scala.util.Random
import io.jetspark.core.testing.TestSeed

object SequenceOrderTest {
  final case class Row(op: String, key: String, value: Int)
}

class SequenceOrderTest extends AnyFunSuite {
  import SequenceOrderTest.Row

  private def item(substream: Int, offset: Long, value: Any) = Sequenced(SequenceId(substream, offset), value)
  private def passed(substream: Int, offset: Long, sender: Int) = SequencePassed(SequenceId(substream, offset), sender)
  private def fanned(offset: Long, path: Int*)(value: Any) = Sequenced(SequenceId(0, offset, path.toVector), value)

  // ---- SequenceRestoreProcessor ----

  test("restore: items are held until every sender passed them, then emitted in offset order") {
    //  arrives:  b@1(s1)  a@0(s0)  passed 1 by s0  passed 1 by s1  wm(5)  d@3(s1)  c@2(s0)  | edge complete
    //  emits:                                      a  b            wm(5)                     | c  d
    ProcessorVerifier(() => new SequenceRestoreProcessor(senderCount = 2))
      .input(Seq(item(0, 1, "b"), item(0, 0, "a"), passed(0, 1, 0), passed(0, 1, 1), Watermark(5), item(0, 3, "d"), item(0, 2, "c")))
      .expectOutput(Seq(item(0, 0, "a"), item(0, 1, "b"), Watermark(5), item(0, 2, "c"), item(0, 3, "d")))
      .verify()
  }

  test("restore: a watermark waits for the items that arrived before it") {
    //  arrives:  b@1  wm(5)  a@0  passed 1 by s0  passed 1 by s1
    //  emits:                                     a  b  wm(5)
    ProcessorVerifier(() => new SequenceRestoreProcessor(senderCount = 2))
      .input(Seq(item(0, 1, "b"), Watermark(5), item(0, 0, "a"), passed(0, 1, 0), passed(0, 1, 1)))
      .expectOutput(Seq(item(0, 0, "a"), item(0, 1, "b"), Watermark(5)))
      .verify()
  }

  test("restore: substreams are independent; a substream is released by its own progress only") {
    //  arrives:  x@(1,0)  a@(0,0)  passed (0,0) by s0  [sender count 1]  passed (1,5)
    //  emits:                      a                                     x
    ProcessorVerifier(() => new SequenceRestoreProcessor(senderCount = 1))
      .input(Seq(item(1, 0, "x"), item(0, 0, "a"), passed(0, 0, 0), passed(1, 5, 0)))
      .expectOutput(Seq(item(0, 0, "a"), item(1, 0, "x")))
      .verify()
  }

  test("restore: an item that arrives after every sender passed its offset is an error") {
    val e = intercept[IllegalStateException] {
      ProcessorVerifier(() => new SequenceRestoreProcessor(senderCount = 1))
        .input(Seq(passed(0, 4, 0), item(0, 3, "late"))).disableSnapshots.verify()
    }
    assert(e.getMessage.contains("passed offset 4"))
  }

  /** Simulates design doc 015's reordering: a source reads `substreams`, numbers each substream's items,
    * deals them at random to `senders` (a round-robin edge), and at random epoch ends has every sender
    * announce the offsets reached so far. The receiver owns the even keys of a keyed shuffle and gets the
    * senders' streams merged in a random interleaving, with coalesced watermarks at random places.
    * Returns the receiver's input and its items in source order.
    */
  private def shuffledSequence(random: Random, senders: Int): (Seq[Any], Seq[Sequenced]) = {
    val substreams = 1 + random.nextInt(3)
    val remaining = Array.fill(substreams)(random.nextInt(8))
    val nextOffset = Array.fill(substreams)(0L)
    val senderStreams = Array.fill(senders)(ArrayBuffer.empty[Any])
    val sourceOrder = ArrayBuffer.empty[Sequenced]
    while (remaining.exists(_ > 0)) {
      val s = random.shuffle(remaining.indices.filter(remaining(_) > 0).toList).head
      val sequenced = item(s, nextOffset(s), (random.nextInt(4), s"$s/${nextOffset(s)}"))
      nextOffset(s) += 1
      remaining(s) -= 1
      sourceOrder += sequenced
      senderStreams(random.nextInt(senders)) += sequenced
      if (random.nextInt(4) == 0) // an epoch ends: every sender announces every substream's progress
        for (r <- 0 until senders; sub <- 0 until substreams if nextOffset(sub) > 0) senderStreams(r) += passed(sub, nextOffset(sub) - 1, r)
    }
    val mine: Any => Boolean = {
      case Sequenced(_, (key: Int, _)) => key % 2 == 0
      case _ => true
    }
    val streams = senderStreams.map(_.filter(mine).toList)
    val positions = Array.fill(senders)(0)
    val input = ArrayBuffer.empty[Any]
    var watermark = 0L
    while (streams.indices.exists(r => positions(r) < streams(r).size)) {
      val r = random.shuffle(streams.indices.filter(r => positions(r) < streams(r).size).toList).head
      input += streams(r)(positions(r))
      positions(r) += 1
      if (random.nextInt(5) == 0) { watermark += 1 + random.nextInt(3); input += Watermark(watermark) }
    }
    (input.toSeq, sourceOrder.filter(mine).toSeq)
  }

  /** Same items; each substream in source order; each watermark after every item that preceded it in the input. */
  private def restoredCorrectly(input: Seq[Any])(expected: Seq[Any], actual: Seq[Any]): Boolean = {
    def items(xs: Seq[Any]) = xs.collect { case s: Sequenced => s }
    def before(xs: Seq[Any], wm: Watermark) = items(xs.takeWhile(_ != wm)).toSet
    val substreams = items(expected).map(_.seq.substream).distinct
    items(actual).size == items(expected).size &&
    substreams.forall(s => items(actual).filter(_.seq.substream == s) == items(expected).filter(_.seq.substream == s)) &&
    actual.collect { case w: Watermark => w } == input.collect { case w: Watermark => w } &&
    input.collect { case w: Watermark => w }.forall(wm => before(input, wm).subsetOf(before(actual, wm)))
  }

  test("restore: random interleavings of several senders give every substream in sequence order") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 30) withClue(s"seed $seed, trial $trial: ") {
      val senders = 1 + random.nextInt(3)
      val (input, expected) = shuffledSequence(random, senders)
      ProcessorVerifier(() => new SequenceRestoreProcessor(senders))
        .input(input)
        .checkOutputWith(restoredCorrectly(input))
        .expectOutput(expected)
        .verify()
    }
  }

  test("restore: the outputs one source item fanned out into come in fan-out path order, a prefix first") {
    //  source item 0 -> flat_map -> a@[0] b@[1];  item 1 -> c@[]   (b and c from sender 1, a from sender 0)
    //  arrives:  c@1  b@0[1]  a@0[0]  | complete
    //  emits:    a  b  c
    ProcessorVerifier(() => new SequenceRestoreProcessor(senderCount = 2))
      .input(Seq(fanned(1)("c"), fanned(0, 1)("b"), fanned(0, 0)("a")))
      .expectOutput(Seq(fanned(0, 0)("a"), fanned(0, 1)("b"), fanned(1)("c")))
      .verify()
  }

  // ---- OrderedMergeProcessor (the diamond) ----

  test("diamond: ids fanned out before the fork order the merge by fan-out path first, then by branch") {
    //  item 0 -> flat_map -> [0] [1] -> fork:  branch 0 maps both to x;  branch 1 (itself the merge of an
    //  earlier diamond) holds y[0] y[1] and, fanned out of [1], y[1,0] y[1,1]
    //  out:  x[0] y[0] x[1] y[1] y[1,0] y[1,1]   (a path before its extensions)
    ProcessorVerifier(() => new OrderedMergeProcessor(branchCount = 2))
      .inputs(Seq(Seq(fanned(0, 0)("x"), fanned(0, 1)("x")),
        Seq(fanned(0, 0)("y"), fanned(0, 1)("y"), fanned(0, 1, 0)("y"), fanned(0, 1, 1)("y"))))
      .feedInputsInOrder(1, 0)
      .expectOutput(Seq(fanned(0, 0)("x"), fanned(0, 0)("y"), fanned(0, 1)("x"), fanned(0, 1)("y"), fanned(0, 1, 0)("y"),
        fanned(0, 1, 1)("y")))
      .verify()
  }

  test("diamond: rows split by a condition into two branches merge back in input order (Triceps' example)") {
    //  A: value < 0 -> B (negative = 1), else -> C (negative = 0);  D merges B (ordinal 0) and C (ordinal 1)
    //  in:  INSERT 10 | DELETE 10 | INSERT 20 | DELETE 20 | INSERT -1
    //  D:   the same five rows in the same order, whichever branch arrives first
    val rows = Seq(Row("INSERT", "key1", 10), Row("DELETE", "key1", 10), Row("INSERT", "key1", 20),
      Row("DELETE", "key1", 20), Row("INSERT", "key1", -1))
    val sequenced = rows.zipWithIndex.map { case (r, i) => item(0, i.toLong, r) }
    val branchB = Sequenced.liftBranch { case r: Row if r.value < 0 => Seq((r, 1)); case _ => Nil }
    val branchC = Sequenced.liftBranch { case r: Row if r.value >= 0 => Seq((r, 0)); case _ => Nil }
    val expected = rows.zipWithIndex.map { case (r, i) => item(0, i.toLong, (r, if (r.value < 0) 1 else 0)) }
    for (order <- Seq(Seq(0, 1), Seq(1, 0)))
      ProcessorVerifier(() => new OrderedMergeProcessor(branchCount = 2))
        .inputs(Seq(sequenced.flatMap(branchB(_).iterator), sequenced.flatMap(branchC(_).iterator)))
        .feedInputsInOrder(order: _*)
        .expectOutput(expected)
        .verify()
  }

  test("diamond: outputs of one source item on several branches come in branch order; watermarks wait for earlier items") {
    //  branch 0: x@0  passed 0                 branch 1: y@0  passed 0  wm...
    //  fed branch 1 first (with the coalesced wm(7) after its items), then branch 0
    //  out: x@0  y@0  wm(7)
    ProcessorVerifier(() => new OrderedMergeProcessor(branchCount = 2))
      .inputs(Seq(Seq(item(0, 0, "x"), passed(0, 0, 0)), Seq(item(0, 0, "y"), passed(0, 0, 0), Watermark(7))))
      .feedInputsInOrder(1, 0)
      .expectOutput(Seq(item(0, 0, "x"), item(0, 0, "y"), Watermark(7)))
      .verify()
  }

  /** Feeds the branches in random chunks, switching branch at random (each branch's own order kept),
    * through an outbox of random small capacity; returns the output.
    */
  private def runInterleaved(random: Random, branches: Seq[Seq[Any]]): Seq[Any] = {
    val outbox = new BufferedOutbox(1, 1 + random.nextInt(3))
    val merge = new OrderedMergeProcessor(branches.size)
    merge.init(outbox, ProcessorContext("merge", 0, 1))
    val out = ArrayBuffer.empty[Any]
    def drain(): Unit = out ++= outbox.drainBucket(0)
    val positions = Array.fill(branches.size)(0)
    val open = branches.indices.to(ArrayBuffer)
    while (open.nonEmpty) {
      val b = open(random.nextInt(open.size))
      val chunk = branches(b).slice(positions(b), positions(b) + 1 + random.nextInt(4))
      positions(b) += chunk.size
      val inbox = new ArrayDequeInbox
      inbox.addAll(chunk)
      while (!inbox.isEmpty) { merge.process(b, inbox); drain() }
      if (positions(b) == branches(b).size) {
        while (!merge.completeEdge(b)) drain()
        open -= b
      }
      drain()
    }
    while (!merge.complete()) drain()
    drain()
    out.toSeq
  }

  test("diamond: random filters into branches with random delays merge to the surviving items in input order") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 30) withClue(s"seed $seed, trial $trial: ") {
      val branchCount = 2 + random.nextInt(2)
      val input = Seq.fill(random.nextInt(20))(random.nextInt(30))
      val sequenced = input.zipWithIndex.map { case (x, i) => item(0, i.toLong, x) }
      // Branch b keeps the items its random predicate accepts, tagged with b; some branches double them.
      val branchFns: Seq[Any => Seq[Any]] = Seq.tabulate(branchCount) { b =>
        val (m, r, copies) = (2 + random.nextInt(3), random.nextInt(2), 1 + random.nextInt(2))
        (x: Any) => if (x.asInstanceOf[Int] % m == r) Seq.fill(copies)((x, b)) else Nil
      }
      val branches = branchFns.map(fn => sequenced.flatMap(Sequenced.liftBranch(fn)(_).iterator))
      // In input order: each source item's outputs, branch by branch.
      val expected = sequenced.flatMap { case Sequenced(seq, x) => branchFns.flatMap(fn => fn(x).map(Sequenced(seq, _))) }
      assert(runInterleaved(random, branches) == expected)
      ProcessorVerifier(() => new OrderedMergeProcessor(branchCount))
        .inputs(branches)
        .feedInputsInOrder(random.shuffle(branches.indices.toList): _*)
        .expectOutput(expected)
        .verify()
    }
  }

  // ---- OrderedMergeProcessor with ties by branch, CarryingProcessor ----

  test("merge with ties by branch: copies of one record keep branch order before earlier merges' ties, and leave tied") {
    //  branch 0: a@0 tied [1] by an earlier merge;  branch 1: b@0 tied [0]
    //  by (path, ties): b (ties [0]) before a (ties [1]); by branch first: a before b. Each leaves with this
    //  merge's ties: its path shifted up by one and ended by 0 (here the empty path: [0]), its branch, its ties.
    val (a, b) = (Sequenced(SequenceId.of(0, 0, ties = Seq(1)), "a"), Sequenced(SequenceId.of(0, 0, ties = Seq(0)), "b"))
    ProcessorVerifier(() => new OrderedMergeProcessor(branchCount = 2, tieByBranch = true))
      .inputs(Seq(Seq(a), Seq(b)))
      .expectOutput(Seq(Sequenced(SequenceId.of(0, 0, ties = Seq(0, 0, 1)), "a"), Sequenced(SequenceId.of(0, 0, ties = Seq(0, 1, 0)), "b")))
      .verify()
  }

  test("carrying: each output of a rolling aggregate gets the id of the item it was emitted for; watermarks pass") {
    val sum = AggregateOperations.summingLong[Int](_.toLong).asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val ids = Seq(SequenceId.of(3, 7), SequenceId.of(3, 9, path = Seq(2)), SequenceId.of(4, 0))
    ProcessorVerifier(() => CarryingProcessor.sequenceIds(RollingAggregateProcessor.global(sum)))
      .input(Seq(Sequenced(ids(0), 5), Sequenced(ids(1), 1), Watermark(10), Sequenced(ids(2), 4)))
      .expectOutput(Seq(Sequenced(ids(0), 5L), Sequenced(ids(1), 6L), Watermark(10), Sequenced(ids(2), 10L)))
      .verify()
  }

  test("carrying: an item without its id, or an output emitted outside an item's processing, is an error") {
    assertThrows[IllegalArgumentException] {
      ProcessorVerifier(() => CarryingProcessor.sequenceIds(RollingAggregateProcessor.global(
        AggregateOperations.counting().asInstanceOf[AggregateOperation[Nothing, Any, Any]]))).input(Seq(1)).expectOutput(Nil).verify()
    }
    val emitsOnCompletion = () => CarryingProcessor.sequenceIds(new SortProcessor(SortDefinition(None, AnyOrdering, reverse = false)))
    val e = intercept[IllegalStateException] {
      ProcessorVerifier(emitsOnCompletion).input(Seq(Sequenced(SequenceId.of(0, 0), 1))).expectOutput(Nil).verify()
    }
    assert(e.getMessage.contains("outside the processing of an item"))
  }
}
