package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class DistinctProcessorTest extends AnyFunSuite {
  test("the first item of each key is emitted when it arrives; later items of the key are dropped") {
    //  in:  a1  b1  a2  wm(5)  c1  b2
    //  out: a1  b1      wm(5)  c1
    ProcessorVerifier(() => new DistinctProcessor(_.asInstanceOf[String].take(1)))
      .input(Seq("a1", "b1", "a2", Watermark(5), "c1", "b2"))
      .expectOutput(Seq("a1", "b1", Watermark(5), "c1"))
      .verify()
  }

  test("keys compare by value") {
    ProcessorVerifier(() => new DistinctProcessor(identity))
      .input(Seq(List(1, 2), Vector(1, 2), (1, "x"), (1, "x")))
      .expectOutput(Seq(List(1, 2), (1, "x")))
      .verify()
  }

  test("random items: the output is the input filtered to first occurrences") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 20) withClue(s"seed $seed, trial $trial: ") {
      val input: Seq[Any] = Seq.fill(random.nextInt(30))(random.nextInt(40))
      val keyOf = (x: Any) => x.asInstanceOf[Int] % 7
      val expected = input.zipWithIndex.collect { case (x, i) if !input.take(i).exists(y => keyOf(y) == keyOf(x)) => x }
      ProcessorVerifier(() => new DistinctProcessor(keyOf)).input(input).expectOutput(expected).verify()
    }
  }
}
