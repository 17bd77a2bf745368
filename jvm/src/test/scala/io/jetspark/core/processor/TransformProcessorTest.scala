package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer
import scala.util.Random
import io.jetspark.core.testing.TestSeed

class TransformProcessorTest extends AnyFunSuite {
  private def int(x: Any): Int = x.asInstanceOf[Int]

  test("a map/filter chain emits each surviving item's result in input order") {
    val chain = Step.fuse(Seq(Step.map(x => int(x) * 10), Step.filter(x => int(x) != 20), Step.map(x => int(x) + 1)))
    ProcessorVerifier(() => new TransformProcessor(chain))
      .input(Seq(1, 2, 3, 4))
      .expectOutput(Seq(11, 31, 41))
      .verify()
  }

  test("flat_map emits every element of each result, in order, and nothing for an empty result") {
    val chain = Step.fuse(Seq(Step.flatMap(x => Seq.fill(int(x))(x)), Step.map(x => s"v$x")))
    ProcessorVerifier(() => new TransformProcessor(chain))
      .input(Seq(2, 0, 3))
      .expectOutput(Seq("v2", "v2", "v3", "v3", "v3"))
      .verify()
  }

  test("watermarks pass through after the outputs of the items before them") {
    //  in:  1   2   wm(10)   3   wm(20)
    //  out: a1  a2  wm(10)   a3  wm(20)    (map x -> "a" + x)
    ProcessorVerifier(() => new TransformProcessor(Step.fuse(Seq(Step.map(x => s"a$x")))))
      .input(Seq(1, 2, Watermark(10), 3, Watermark(20)))
      .expectOutput(Seq("a1", "a2", Watermark(10), "a3", Watermark(20)))
      .verify()
  }

  test("an empty chain is the identity") {
    ProcessorVerifier(() => new TransformProcessor(Step.fuse(Nil))).input(Seq(1, "b", 3.0)).expectOutput(Seq(1, "b", 3.0)).verify()
  }

  test("peek sees every item exactly once per run, also when the outbox refuses, on both paths") {
    for (withFlatMap <- Seq(false, true)) {
      val seen = ArrayBuffer.empty[Any]
      val steps = Seq(Step.peek(seen += _), Step.map(x => int(x) + 1)) ++ (if (withFlatMap) Seq(Step.flatMap(Seq(_))) else Nil)
      val input = Seq(5, 6, 7, 8)
      ProcessorVerifier(() => new TransformProcessor(Step.fuse(steps))).input(input).expectOutput(Seq(6, 7, 8, 9)).verify()
      val runs = seen.size / input.size
      assert(runs >= 1 && seen.toSeq == Seq.fill(runs)(input).flatten, s"flat_map=$withFlatMap: peeked $seen")
    }
  }

  test("a chain without flat_map takes the one-to-one path; with one it does not") {
    assert(Step.fuse(Seq(Step.map(identity), Step.filter(_ => true), Step.peek(_ => ()))).oneToOne.isDefined)
    assert(Step.fuse(Seq(Step.map(identity), Step.flatMap(Seq(_)))).oneToOne.isEmpty)
  }

  test("a fused chain survives Java serialization, as the engine ships it to executors") {
    val chain = Step.fuse(Seq(Step.map(x => x.asInstanceOf[Int] + 1), Step.flatMap(x => Seq(x, x))))
    val bytes = new java.io.ByteArrayOutputStream()
    new java.io.ObjectOutputStream(bytes).writeObject(chain)
    val copy = new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray)).readObject()
    assert(copy.asInstanceOf[FusedSteps](1).iterator.toList == List(2, 2))
  }

  /** A reference for a step chain: each step applied to the whole list with plain collection operations. */
  private def reference(steps: Seq[Step], input: Seq[Any]): Seq[Any] = steps.foldLeft(input) {
    case (items, Step.Map(f)) => items.map(f)
    case (items, Step.Filter(p)) => items.filter(p)
    case (items, Step.FlatMap(f)) => items.flatMap(x => f(x).iterator.toSeq)
    case (items, Step.Peek(_)) => items
  }

  test("random chains give what applying the steps one by one to the whole input gives") {
    val seed = TestSeed.base
    val random = new Random(seed)
    val choices: Seq[() => Step] = Seq(
      () => { val k = random.nextInt(5) - 2; Step.map(x => int(x) * 3 + k) },
      () => { val m = 2 + random.nextInt(3); Step.filter(x => Math.floorMod(int(x), m) != 0) },
      () => { val n = random.nextInt(3); Step.flatMap(x => Seq.tabulate(n)(i => int(x) + i)) },
      () => Step.peek(_ => ()),
    )
    for (trial <- 1 to 25) withClue(s"seed $seed, trial $trial: ") {
      val steps = Seq.fill(random.nextInt(5))(choices(random.nextInt(choices.size))())
      val input: Seq[Any] = Seq.fill(random.nextInt(12))(random.nextInt(40) - 20)
      val withWatermarks = input.zipWithIndex.flatMap { case (x, i) => if (i % 4 == 3) Seq(x, Watermark(i.toLong)) else Seq(x) }
      val expected = withWatermarks.foldLeft(Vector.empty[Any]) {
        case (out, wm: Watermark) => out :+ wm
        case (out, x) => out ++ reference(steps, Seq(x))
      }
      assert(expected.filterNot(_.isInstanceOf[Watermark]) == reference(steps, input))
      val fused = Step.fuse(steps)
      ProcessorVerifier(() => new TransformProcessor(fused)).input(withWatermarks).expectOutput(expected).verify()
      // The same chain behind a plain function takes the general path.
      ProcessorVerifier(() => new TransformProcessor(x => fused(x))).input(withWatermarks).expectOutput(expected).verify()
    }
  }
}
