package io.jetspark.engine.spark

import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable
import scala.util.Random

/** A frame table finds each frame's slot again however its index is kept (direct, hashed, switching
  * between them as frames arrive), and lists its slots in frame order; checked against a map of the
  * frames it was given.
  */
class FrameTableTest extends AnyFunSuite {
  private def table(budget: Long) = new FrameTable(new PickledKey(Array[Byte](1)), columns = 1, rowColumns = 0, new FrameTable.Budget(budget))

  private def check(frames: Seq[Long], budget: Long): Unit = {
    val t = table(budget)
    val slots = mutable.LinkedHashMap.empty[Long, Int]
    for (f <- frames) {
      val slot = t.slotOf(f)
      // a new frame takes the next slot; a frame seen before keeps its own
      assert(slot == slots.getOrElseUpdate(f, slots.size), s"frame $f")
      assert(t.frames(slot) == f)
    }
    assert(t.size == slots.size)
    assert(t.slotsInOrder.toSeq == slots.toSeq.sortBy(_._1).map(_._2))
  }

  private val random = new Random(20261124)
  private val shapes: Seq[(String, () => Seq[Long])] = Seq(
    "dense, in random order" -> (() => Seq.fill(5000)(random.nextInt(2000).toLong)),
    "in time order" -> (() => (0L until 3000L).map(_ * 3)),
    "in reverse time order" -> (() => (0L until 3000L).reverse.map(_ - 1500)),
    "sparse, far apart" -> (() => Seq.fill(3000)(random.nextInt(100).toLong * 1000003L - 50000000L)),
    "dense at first, then one far away, then dense again" ->
      (() => Seq.fill(500)(random.nextInt(600).toLong) ++ Seq(1L << 40) ++ Seq.fill(3000)(random.nextInt(800).toLong)),
  )

  for ((name, frames) <- shapes; (budgetName, budget) <- Seq("no budget" -> 0L, "a budget" -> (4L << 20))) {
    test(s"frames $name, $budgetName") { check(frames(), budget) }
  }
}
