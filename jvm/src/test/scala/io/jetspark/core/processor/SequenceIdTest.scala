package io.jetspark.core.processor

import io.jetspark.core.testing.TestSeed
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

class SequenceIdTest extends AnyFunSuite {

  /** The reference's order at a merge: by path (element by element, a prefix first), then by ties. */
  private val byPathThenTies: Ordering[(Vector[Int], Vector[Int])] = {
    val seq = Ordering.Implicits.seqOrdering[Vector, Int]
    Ordering.Tuple2(seq, seq)
  }

  private def sign(x: Int) = Integer.signum(x)

  test("path and ties in one fan-out path order as path, then ties, a prefix path first whatever the ties") {
    //  path [1] ties [5]  <  path [1, 0] ties []  <  path [1, 0] ties [0]  <  path [1, 0] ties [1]  <  path [2] ties []
    val ids = Seq((Vector(1), Vector(5)), (Vector(1, 0), Vector()), (Vector(1, 0), Vector(0)), (Vector(1, 0), Vector(1)),
      (Vector(2), Vector()))
    val encoded = ids.map { case (path, ties) => SequenceId.of(0, 7, path, ties) }
    assert(encoded.sorted(SequenceId.withinSubstream) == encoded)
  }

  test("random paths and ties, extended below and tied by lanes: the encoded order equals the reference's order") {
    val seed = TestSeed.base
    val random = new Random(seed)
    def vector() = Vector.fill(random.nextInt(4))(random.nextInt(3))
    for (_ <- 1 to 500) withClue(s"seed $seed: ") {
      val (a, b) = ((vector(), vector()), (vector(), vector()))
      val encoded = Seq(a, b).map { case (path, ties) => SequenceId.of(0, 0, path, ties) }
      assert(sign(SequenceId.withinSubstream.compare(encoded(0), encoded(1))) == sign(byPathThenTies.compare(a, b)), s"$a vs $b")
      // What a flat_map and an ordered merge do to an id is what they do to its path and ties.
      val (extra, lane) = (vector(), random.nextInt(3))
      assert(encoded(0).below(extra) == SequenceId.of(0, 0, a._1 ++ extra, a._2), s"$a below $extra")
      assert(encoded(0).tiedBy(lane) == SequenceId.of(0, 0, a._1, lane +: a._2), s"$a tied by $lane")
    }
  }
}
