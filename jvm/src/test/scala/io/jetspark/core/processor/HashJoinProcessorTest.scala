package io.jetspark.core.processor

import io.jetspark.core._
import io.jetspark.core.testing.ProcessorVerifier
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

/** The build sides are not saved in snapshots (the engine delivers them again after a restart), so the
  * harness runs without its snapshot variants here; the last tests check the restart contract itself.
  */
class HashJoinProcessorTest extends AnyFunSuite {
  private def k(item: Any): Any = item.asInstanceOf[(Int, String)]._1
  private val byKey = JoinClause(k, k)
  private val pair: (Any, Seq[Option[Any]]) => Any = (left, rights) => (left +: rights).toList

  test("outer: every left item is emitted once per match, with None where a side has no match") {
    //  build (ordinal 1): (1,x) (2,y) (1,z)     left (ordinal 0): (1,a) (3,b) wm(4) (2,c)
    ProcessorVerifier(() => new HashJoinProcessor(Seq(byKey), pair, outer = true))
      .inputs(Seq(Seq((1, "a"), (3, "b"), Watermark(4), (2, "c")), Seq((1, "x"), (2, "y"), (1, "z"))))
      .feedInputsInOrder(1, 0)
      .disableSnapshots
      .expectOutput(Seq(
        List((1, "a"), Some((1, "x"))), List((1, "a"), Some((1, "z"))),
        List((3, "b"), None),
        Watermark(4),
        List((2, "c"), Some((2, "y")))))
      .verify()
  }

  test("inner: a left item without a match on some side is dropped") {
    ProcessorVerifier(() => new HashJoinProcessor(Seq(byKey, byKey), pair, outer = false))
      .inputs(Seq(Seq((1, "a"), (2, "b"), (3, "c")), Seq((1, "x"), (2, "y")), Seq((1, "p"), (3, "q"))))
      .feedInputsInOrder(1, 2, 0)
      .disableSnapshots
      .expectOutput(Seq(List((1, "a"), Some((1, "x")), Some((1, "p")))))
      .verify()
  }

  test("several sides with several matches give every combination, the last side varying fastest") {
    ProcessorVerifier(() => new HashJoinProcessor(Seq(byKey, byKey), pair, outer = true))
      .inputs(Seq(Seq((1, "a")), Seq((1, "x1"), (1, "x2")), Seq((1, "p1"), (1, "p2"))))
      .feedInputsInOrder(2, 1, 0)
      .disableSnapshots
      .expectOutput(Seq(
        List((1, "a"), Some((1, "x1")), Some((1, "p1"))), List((1, "a"), Some((1, "x1")), Some((1, "p2"))),
        List((1, "a"), Some((1, "x2")), Some((1, "p1"))), List((1, "a"), Some((1, "x2")), Some((1, "p2")))))
      .verify()
  }

  test("the left and right keys are extracted by their own functions") {
    val clause = JoinClause(left => left.asInstanceOf[String].length, right => right.asInstanceOf[Int])
    ProcessorVerifier(() => new HashJoinProcessor(Seq(clause), (l, r) => (l, r.head), outer = true))
      .inputs(Seq(Seq("ab", "abc"), Seq(2)))
      .feedInputsInOrder(1, 0)
      .disableSnapshots
      .expectOutput(Seq(("ab", Some(2)), ("abc", None)))
      .verify()
  }

  test("a left item before the build sides are complete is an error that names the rule") {
    val e = intercept[IllegalStateException] {
      ProcessorVerifier(() => new HashJoinProcessor(Seq(byKey), pair, outer = true))
        .inputs(Seq(Seq((1, "a")), Seq((1, "x")))).feedInputsInOrder(0, 1).disableSnapshots.verify()
    }
    assert(e.getMessage.contains("priority"))
  }

  test("a snapshot holds nothing, and an instance fed the build side again after restore joins as before") {
    val outbox = new BufferedOutbox(1, 100)
    val p = new HashJoinProcessor(Seq(byKey), pair, outer = false)
    p.init(outbox, ProcessorContext("join", 0, 1))
    val build = new ArrayDequeInbox
    build.addAll(Seq((1, "x")))
    p.process(1, build)
    assert(p.completeEdge(1))
    assert(p.saveToSnapshot())
    assert(outbox.drainSnapshot().isEmpty)

    val restored = new HashJoinProcessor(Seq(byKey), pair, outer = false)
    restored.init(outbox, ProcessorContext("join", 0, 1))
    assert(restored.finishSnapshotRestore())
    val replay = new ArrayDequeInbox
    replay.addAll(Seq((1, "x")))
    restored.process(1, replay)
    assert(restored.completeEdge(1))
    val left = new ArrayDequeInbox
    left.addAll(Seq((1, "a"), (2, "b")))
    restored.process(0, left)
    assert(left.isEmpty && outbox.drainBucket(0) == Seq(List((1, "a"), Some((1, "x")))))
  }

  test("random inputs: the join equals a nested-loop join") {
    val seed = TestSeed.base
    val random = new Random(seed)
    for (trial <- 1 to 25; outer <- Seq(false, true)) withClue(s"seed $seed, trial $trial, outer $outer: ") {
      val sides = 1 + random.nextInt(3)
      def items(n: Int, tag: String) = Seq.fill(random.nextInt(n))((random.nextInt(5), s"$tag${random.nextInt(100)}"))
      val left = items(10, "l")
      val builds = Seq.tabulate(sides)(i => items(6, s"r$i"))
      // Nested loops: for each left item, for each side in order, every right item with an equal key.
      val expected = left.flatMap { l =>
        builds.foldLeft(Seq(List[Any](l))) { (rows, build) =>
          val matches: Seq[Any] = build.filter(r => r._1 == l._1).map(Some(_))
          val options = if (matches.nonEmpty) matches else if (outer) Seq(None) else Seq.empty
          for (row <- rows; m <- options) yield row :+ m
        }
      }
      ProcessorVerifier(() => new HashJoinProcessor(Seq.fill(sides)(byKey), pair, outer))
        .inputs(left +: builds)
        .feedInputsInOrder((random.shuffle((1 to sides).toList) :+ 0): _*)
        .disableSnapshots
        .expectOutput(expected)
        .verify()
    }
  }
}
