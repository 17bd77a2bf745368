package io.jetspark.engine.spark

import io.jetspark.core.processor.SequenceId
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class SequenceRestoreTest extends AnyFunSuite {

  /** The reference's order at a merge: by path (element by element, a prefix first), then by ties. */
  private val byPathThenTies: Ordering[(Vector[Int], Vector[Int])] = {
    val seq = Ordering.Implicits.seqOrdering[Vector, Int]
    Ordering.Tuple2(seq, seq)
  }

  test("path and ties in one fan-out path order as path, then ties, a prefix path first whatever the ties") {
    //  path [1] ties [5]  <  path [1, 0] ties []  <  path [1, 0] ties [0]  <  path [1, 0] ties [1]  <  path [2] ties []
    val ids = Seq((Vector(1), Vector(5)), (Vector(1, 0), Vector()), (Vector(1, 0), Vector(0)), (Vector(1, 0), Vector(1)),
      (Vector(2), Vector()))
    val encoded = ids.map { case (path, ties) => SequenceId(0, 7, SequenceRestore.fanOutOf(path.toArray, ties.toArray)) }
    assert(encoded.sorted(SequenceId.withinSubstream) == encoded)
  }

  test("random paths and ties: the encoded order equals the reference's order") {
    val seed = TestSeed.base
    val random = new Random(seed)
    def vector() = Vector.fill(random.nextInt(4))(random.nextInt(3))
    for (_ <- 1 to 500) withClue(s"seed $seed: ") {
      val (a, b) = ((vector(), vector()), (vector(), vector()))
      val encoded = Seq(a, b).map { case (path, ties) => SequenceId(0, 0, SequenceRestore.fanOutOf(path.toArray, ties.toArray)) }
      assert(Integer.signum(SequenceId.withinSubstream.compare(encoded(0), encoded(1))) == Integer.signum(byPathThenTies.compare(a, b)),
        s"$a vs $b")
    }
  }
}
