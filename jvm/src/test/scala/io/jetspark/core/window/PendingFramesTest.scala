package io.jetspark.core.window

import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class PendingFramesTest extends AnyFunSuite {

  /** Random puts, look-ups and removals of the least end, against a sorted map. Ends are drawn from a
    * few strides (multiples of a slide, colliding in the table) and from anywhere, so that probe runs
    * wrap around the table and removals shift entries back across the wrap.
    */
  test("look-ups, puts and taking the least end agree with a sorted map") {
    for (seed <- 1 to 200) {
      val random = new Random(TestSeed(seed))
      val frames = new PendingFrames[String]
      val reference = scala.collection.mutable.TreeMap.empty[Long, String]
      val slide = Seq(1L, 8L, 100L, 1L << 20)(random.nextInt(4))
      def anyEnd(): Long =
        if (random.nextInt(10) == 0) random.nextLong() else random.nextInt(64) * slide - 10 * slide
      for (step <- 0 until random.nextInt(400)) {
        random.nextInt(5) match {
          case 0 | 1 =>
            val end = anyEnd()
            frames.put(end, s"$step")
            reference(end) = s"$step"
          case 2 =>
            val end = anyEnd()
            assert(frames.get(end) == reference.getOrElse(end, null), s"seed $seed: get($end)")
          case _ if reference.nonEmpty =>
            assert(frames.firstEnd == reference.firstKey, s"seed $seed: first end")
            assert(frames.pollFirst() == reference.remove(reference.firstKey).get, s"seed $seed: taken")
          case _ =>
            assert(frames.isEmpty)
        }
        assert(frames.isEmpty == reference.isEmpty)
        reference.keysIterator.foreach(end => assert(frames.get(end) == reference(end), s"seed $seed: get($end) after step"))
      }
      assert(frames.inOrder == reference.toVector, s"seed $seed: in order")
    }
  }

  test("a null accumulator is held: it reads back as null, and its frame is taken in end order") {
    val frames = new PendingFrames[String]
    frames.put(20L, null)
    frames.put(10L, "ten")
    assert(frames.get(20L) == null && !frames.isEmpty)
    assert(frames.inOrder == Vector(10L -> "ten", 20L -> null))
    assert(frames.pollFirst() == "ten" && frames.firstEnd == 20L && frames.pollFirst() == null && frames.isEmpty)
  }

  test("the least end of no frames is an error, not a value") {
    intercept[NoSuchElementException](new PendingFrames[String].firstEnd)
  }
}
