package io.jetspark.core.processor

import io.jetspark.core.testing.TestSeed
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

class SequenceIdTest extends AnyFunSuite {

  private val pathOrder = Ordering.Implicits.seqOrdering[Vector, Int]
  private def sign(x: Int) = Integer.signum(x)
  private def sortedIds(ids: Seq[SequenceId]) = ids.sorted(SequenceId.withinSubstream)
  private def isPrefix(a: Vector[Int], b: Vector[Int]) = a.length < b.length && b.startsWith(a)

  test("before any merge ids order by offset, then path element by element, a prefix first") {
    val ids = Seq(SequenceId.of(0, 3), SequenceId.of(0, 3, Seq(0)), SequenceId.of(0, 3, Seq(0, 5)), SequenceId.of(0, 3, Seq(1)),
      SequenceId.of(0, 4))
    assert(sortedIds(ids.reverse) == ids)
  }

  test("a merge's ties: prefix-free, in the merge's order (path a prefix first, then branch, then earlier ties)") {
    val seed = TestSeed(1)
    val random = new Random(seed)
    def vector(max: Int) = Vector.fill(random.nextInt(4))(random.nextInt(max))
    val mergeOrder: Ordering[(Vector[Int], Int, Vector[Int])] = Ordering.Tuple3(pathOrder, Ordering.Int, pathOrder)
    for (_ <- 1 to 300) withClue(s"seed $seed: ") {
      // One merge's inputs: each branch's earlier ties all come from one merge before (of the same length
      // here, so prefix-free), or are all empty.
      val earlier = Vector.tabulate(3)(_ => if (random.nextBoolean()) 0 else 1 + random.nextInt(3))
      val inputs = Vector.fill(2 + random.nextInt(6)) {
        val lane = random.nextInt(3)
        (vector(3), lane, Vector.fill(earlier(lane))(random.nextInt(3)))
      }.distinct
      val ties = inputs.map { case (path, lane, before) => SequenceId.mergedTies(path, before, lane) }
      for (i <- inputs.indices; j <- inputs.indices if i != j) {
        assert(!isPrefix(ties(i), ties(j)), s"${inputs(i)} -> ${ties(i)} is a prefix of ${inputs(j)} -> ${ties(j)}")
        assert(sign(pathOrder.compare(ties(i), ties(j))) == sign(mergeOrder.compare(inputs(i), inputs(j))), s"${inputs(i)} vs ${inputs(j)}")
      }
    }
  }

  test("copies of one record merged from several branches come in branch order, whatever ties they brought") {
    //  branch 0: path [] tied [1] by an earlier merge; branch 1: path [] tied [0]: branch first
    val a = SequenceId.of(0, 0, ties = Seq(1)).tiedBy(0)
    val b = SequenceId.of(0, 0, ties = Seq(0)).tiedBy(1)
    assert(sortedIds(Seq(b, a)) == Seq(a, b))
    assert(a.path.isEmpty && b.path.isEmpty, "a merge keeps the path, which later merges compare")
  }

  test("a flat_map after a diamond's merge keeps each merged item's outputs together (the merge-ids repro)") {
    //  reference ids: 99 path [] (branch 1); the two -1s paths [0] and [1] (branch 0); merged: 99, -1, -1.
    //  The flat_map after it: 99 -> 99 [0], 100 [1]; -1 -> -1 [0,0], 0 [0,1]; -1 -> -1 [1,0], 0 [1,1].
    //  The stream's order is 99, 100, -1, 0, -1, 0; by path alone it would be 99, -1, 0, 100, -1, 0.
    val merged = Seq(SequenceId.of(0, 0).tiedBy(1) -> 99, SequenceId.of(0, 0, Seq(0)).tiedBy(0) -> -1,
      SequenceId.of(0, 0, Seq(1)).tiedBy(0) -> -1)
    assert(merged.sortBy(_._1)(SequenceId.withinSubstream) == merged)
    val flatMapped = merged.flatMap { case (id, x) => Seq(id.below(Seq(0)) -> x, id.below(Seq(1)) -> (x + 1)) }
    assert(flatMapped.map(_._2) == Seq(99, 100, -1, 0, -1, 0))
    assert(Random.shuffle(flatMapped).sortBy(_._1)(SequenceId.withinSubstream) == flatMapped)
  }

  /** The brute-force reference's streams (tests/reference.py) next to the ids the engines give: an item is
    * (its reference id below the offset, its engine id, a unique label); a stream is a list in the
    * reference's encounter order.
    */
  private type Item = (Vector[Int], SequenceId, Int)

  test("random flat_maps, filters and diamond merges: restoring by id gives each stream's order, merging by id the reference's") {
    val seed = TestSeed(2)
    val random = new Random(seed)
    var labels = 0
    def label() = { labels += 1; labels }
    def flatMap(stream: Vector[Item]): Vector[Item] = stream.flatMap { case (ref, id, _) =>
      Vector.tabulate(random.nextInt(3))(j => (ref :+ j, id.below(Seq(j)), label()))
    }
    def filter(stream: Vector[Item]): Vector[Item] = stream.filter(_ => random.nextInt(4) != 0)
    def relabel(stream: Vector[Item]): Vector[Item] = stream.map { case (ref, id, _) => (ref, id, label()) } // a map
    def branch(stream: Vector[Item]): Vector[Item] = random.nextInt(4) match {
      case 0 => relabel(stream)
      case 1 => flatMap(stream)
      case 2 => filter(relabel(stream))
      case _ => flatMap(flatMap(stream))
    }
    def merge(branches: Seq[Vector[Item]]): Vector[Item] = {
      // The reference: a stable sort by reference id (offset first) of the branches one after the other.
      val reference = branches.flatten.sortBy { case (ref, id, _) => (id.offset, ref) }(Ordering.Tuple2(Ordering.Long, pathOrder))
      // The engines: each item tied by its branch, then by id; equal ids keep their arrival.
      val merged = branches.zipWithIndex.flatMap { case (items, lane) => items.map { case (ref, id, l) => (ref, id.tiedBy(lane), l) } }
        .sortBy(_._2)(SequenceId.withinSubstream).toVector
      assert(merged.map(_._3) == reference.map(_._3), s"merge of ${branches.map(_.map(_._3))}")
      merged
    }
    for (round <- 1 to 300) withClue(s"seed $seed, round $round: ") {
      var stream: Vector[Item] = Vector.tabulate(1 + random.nextInt(3))(offset => (Vector.empty[Int], SequenceId.of(0, offset), label()))
      for (_ <- 1 to 1 + random.nextInt(5)) {
        stream = random.nextInt(3) match {
          case 0 => flatMap(stream)
          case 1 => filter(stream)
          case _ => merge(Seq.fill(2 + random.nextInt(2))(branch(stream)))
        }
        // A restore point: the stream's items in any order, sorted by id, are the stream.
        assert(random.shuffle(stream).sortBy(_._2)(SequenceId.withinSubstream).map(_._3) == stream.map(_._3),
          s"restore of ${stream.map(s => (s._3, s._2))}")
      }
    }
  }
}
