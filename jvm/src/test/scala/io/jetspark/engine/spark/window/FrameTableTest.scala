package io.jetspark.engine.spark.window

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers._

import scala.collection.mutable
import scala.util.Random
import io.jetspark.core.testing.TestSeed
import io.jetspark.item.PickledKey

/** A frame table finds each frame's slot again however its index is kept (direct, hashed, switching
  * between them as frames arrive, made ready for a batch of deferred events), and lists its slots in
  * frame order; checked against a map of the frames it was given.
  */
class FrameTableTest extends AnyFunSuite {
  private def table(budget: Long) = new FrameTable(new PickledKey(Array[Byte](1)), columns = 1, rowColumns = 0, deferredColumns = 1,
    new FrameTable.Budget(budget))

  /** Finds the slots of `frames` as they come or, with `deferred`, in batches of that many deferred events
    * (the table made room for each batch first), each deferred by a time of its frame: `f * timesPerFrame`
    * and up to `timesPerFrame - 1` more.
    */
  private def check(frames: Seq[Long], budget: Long, deferred: Option[Int] = None, timesPerFrame: Int = 1): Unit = {
    val t = table(budget)
    val slots = mutable.LinkedHashMap.empty[Long, Int]
    def found(f: Long): Unit = {
      val slot = t.slotOf(f)
      // a new frame takes the next slot; a frame seen before keeps its own
      assert(slot == slots.getOrElseUpdate(f, slots.size), s"frame $f")
      assert(t.frames(slot) == f)
    }
    deferred match {
      case None => frames.foreach(found)
      case Some(batch) =>
        for (group <- frames.grouped(batch)) {
          def frameOf(time: Long) = Math.floorDiv(time, timesPerFrame.toLong)
          for (f <- group) {
            val time = f * timesPerFrame + random.nextInt(timesPerFrame)
            val at = t.defer(time)
            t.deferred(at - 1) should be (time)
          }
          t.reserveForDeferred(frameOf)
          val reserved = t.frames // the batch's frames fit: adding them grows nothing
          (0 until t.deferredEvents).foreach(e => found(frameOf(t.deferred(e * 2))))
          assert(t.frames eq reserved)
          t.clearDeferred()
        }
    }
    assert(t.size == slots.size)
    assert(t.slotsInOrder.toSeq == slots.toSeq.sortBy(_._1).map(_._2))
  }

  private val random = new Random(TestSeed.base)
  private val shapes: Seq[(String, () => Seq[Long])] = Seq(
    "dense, in random order" -> (() => Seq.fill(5000)(random.nextInt(2000).toLong)),
    "in time order" -> (() => (0L until 3000L).map(_ * 3)),
    "in reverse time order" -> (() => (0L until 3000L).reverse.map(_ - 1500)),
    "sparse, far apart" -> (() => Seq.fill(3000)(random.nextInt(100).toLong * 1000003L - 50000000L)),
    "dense at first, then one far away, then dense again" ->
      (() => Seq.fill(500)(random.nextInt(600).toLong) ++ Seq(1L << 40) ++ Seq.fill(3000)(random.nextInt(800).toLong)),
    "at the ends of the longs" -> (() => random.shuffle(Seq(Long.MinValue, Long.MinValue + 1, -1L, 0L, 1L, Long.MaxValue - 1, Long.MaxValue) ++
      (0L until 500L))),
    "the greatest, then the least" -> (() => Seq(Long.MaxValue, Long.MinValue, Long.MaxValue - 1, Long.MinValue + 1)),
  )

  for ((name, frames) <- shapes; (budgetName, budget) <- Seq("no budget" -> 0L, "a budget" -> (4L << 20))) {
    test(s"frames $name, $budgetName") { check(frames(), budget) }
    test(s"frames $name, $budgetName, deferred in batches") { check(frames(), budget, deferred = Some(700)) }
  }

  // Events deferred by times, several to a frame, negative ones too (frames far from the ends of the longs,
  // whose times would overflow).
  for ((name, frames) <- shapes.take(5); (budgetName, budget) <- Seq("no budget" -> 0L, "a budget" -> (4L << 20))) {
    test(s"frames $name, $budgetName, deferred in batches by times of three to a frame") {
      check(frames(), budget, deferred = Some(700), timesPerFrame = 3)
    }
  }
}
