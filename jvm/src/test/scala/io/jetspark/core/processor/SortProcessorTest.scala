package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class SortProcessorTest extends AnyFunSuite {
  private val intOrdering: Ordering[Any] = Ordering.Int.on[Any](_.asInstanceOf[Int])
  private def byFirst(reverse: Boolean) = SortDefinition(Some(_.asInstanceOf[(Int, String)]._1), intOrdering, reverse)

  test("items are emitted on complete, sorted by key; equal keys keep their input order") {
    ProcessorVerifier(() => new SortProcessor(byFirst(reverse = false)))
      .input(Seq((2, "a"), (1, "b"), (2, "c"), (1, "d"), (0, "e")))
      .expectOutput(Seq((0, "e"), (1, "b"), (1, "d"), (2, "a"), (2, "c")))
      .verify()
  }

  test("reverse sorts descending and still keeps equal keys in input order") {
    ProcessorVerifier(() => new SortProcessor(byFirst(reverse = true)))
      .input(Seq((2, "a"), (1, "b"), (2, "c"), (1, "d"), (0, "e")))
      .expectOutput(Seq((2, "a"), (2, "c"), (1, "b"), (1, "d"), (0, "e")))
      .verify()
  }

  test("without a key the items themselves are compared") {
    ProcessorVerifier(() => new SortProcessor(SortDefinition(None, intOrdering, reverse = false)))
      .input(Seq(3, 1, 2)).expectOutput(Seq(1, 2, 3)).verify()
  }

  test("a watermark is held and the last one follows the sorted items") {
    //  in:  3  wm(1)  1  wm(2)  2   | complete
    //  out:                         | 1  2  3  wm(2)
    ProcessorVerifier(() => new SortProcessor(SortDefinition(None, intOrdering, reverse = false)))
      .input(Seq(3, Watermark(1), 1, Watermark(2), 2))
      .expectOutput(Seq(1, 2, 3, Watermark(2)))
      .verify()
  }

  test("random input: the output equals sorting by (key, input position)") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 20; reverse <- Seq(false, true)) withClue(s"seed $seed, trial $trial, reverse $reverse: ") {
      val input = Seq.fill(random.nextInt(25))((random.nextInt(6), random.alphanumeric.take(2).mkString))
      val expected = input.zipWithIndex
        .sortWith { case (((k1, _), i1), ((k2, _), i2)) => if (k1 != k2) (if (reverse) k1 > k2 else k1 < k2) else i1 < i2 }
        .map(_._1)
      ProcessorVerifier(() => new SortProcessor(byFirst(reverse))).input(input).expectOutput(expected).verify()
    }
  }

  test("sorted merge: emits the merge of sorted inputs, ties going to the lower input ordinal") {
    ProcessorVerifier(() => new SortedMergeProcessor(3, byFirst(reverse = false)))
      .inputs(Seq(
        Seq((1, "0a"), (3, "0b"), (3, "0c")),
        Seq((1, "1a"), (2, "1b"), (3, "1c")),
        Seq((0, "2a"), (3, "2b"))))
      .expectOutput(Seq((0, "2a"), (1, "0a"), (1, "1a"), (2, "1b"), (3, "0b"), (3, "0c"), (3, "1c"), (3, "2b")))
      .verify()
  }

  test("sorted merge: the result is the same whichever input arrives first") {
    for (order <- Seq(0, 1, 2).permutations.toSeq)
      ProcessorVerifier(() => new SortedMergeProcessor(3, SortDefinition(None, intOrdering, reverse = true)))
        .inputs(Seq[Seq[Any]](Seq(9, 4, 1), Seq(), Seq(8, 4, Watermark(7))))
        .feedInputsInOrder(order: _*)
        .expectOutput(Seq(9, 8, 4, 4, 1, Watermark(7)))
        .verify()
  }

  test("random sorted inputs: the merge equals a stable sort of the inputs concatenated in ordinal order") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 20) withClue(s"seed $seed, trial $trial: ") {
      val inputCount = 1 + random.nextInt(4)
      val inputs = Seq.tabulate(inputCount)(i => Seq.fill(random.nextInt(8))((random.nextInt(5), s"$i-${random.nextInt(100)}")).sortBy(_._1))
      val expected = inputs.flatten.zipWithIndex.sortBy { case ((k, _), position) => (k, position) }.map(_._1)
      ProcessorVerifier(() => new SortedMergeProcessor(inputCount, byFirst(reverse = false)))
        .inputs(inputs)
        .feedInputsInOrder(random.shuffle(inputs.indices.toList): _*)
        .expectOutput(expected)
        .verify()
    }
  }
}
