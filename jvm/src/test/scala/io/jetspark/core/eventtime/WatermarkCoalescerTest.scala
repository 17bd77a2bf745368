package io.jetspark.core.eventtime

import io.jetspark.core.{ControlItem, IdleMessage, Watermark}
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class WatermarkCoalescerTest extends AnyFunSuite {
  import WatermarkCoalescerTest._

  test("the coalesced watermark is the minimum over the inputs, emitted only when it rises") {
    //   q0: wm1 ........ wm3
    //   q1: ...... wm2 ....... wm4
    //   out: -      1     2     3
    val c = new WatermarkCoalescer(2)
    assert(c.observeWatermark(0, 1) == Nil)
    assert(c.observeWatermark(1, 2) == List(Watermark(1)))
    assert(c.observeWatermark(0, 3) == List(Watermark(2)))
    assert(c.observeWatermark(1, 4) == List(Watermark(3)))
  }

  test("an idle input does not hold the watermark back, and all-idle is forwarded once") {
    val c = new WatermarkCoalescer(2)
    assert(c.observeIdle(0) == Nil)
    assert(c.observeWatermark(1, 100) == List(Watermark(100)))
    assert(c.observeIdle(1) == List(IdleMessage))
    assert(c.observeIdle(1) == Nil)
    assert(c.observeIdle(0) == Nil)
  }

  test("when the last active input goes idle, the watermark moves to the highest input watermark, then idle") {
    //   q0: wm10 ............ idle
    //   q1: ..... wm11  idle
    //   out:       10     -    11, idle
    val c = new WatermarkCoalescer(2)
    assert(c.observeWatermark(0, 10) == Nil)
    assert(c.observeWatermark(1, 11) == List(Watermark(10)))
    assert(c.observeIdle(1) == Nil)
    assert(c.observeIdle(0) == List(Watermark(11), IdleMessage))
  }

  test("a watermark that goes back on an input is an error naming the input and both values") {
    val c = new WatermarkCoalescer(2)
    c.observeWatermark(1, 20)
    val e = intercept[IllegalStateException](c.observeWatermark(1, 19))
    assert(e.getMessage.contains("input 1") && e.getMessage.contains("19") && e.getMessage.contains("20"))
  }

  test("a watermark after the input is done is an error naming the input and both values") {
    val c = new WatermarkCoalescer(2)
    c.observeWatermark(0, 7)
    c.observeDone(0)
    val e = intercept[IllegalStateException](c.observeWatermark(0, 8))
    assert(e.getMessage.contains("input 0") && e.getMessage.contains("8") && e.getMessage.contains("7"))
    intercept[IllegalStateException](c.observeItem(0))
    intercept[IllegalStateException](c.observeIdle(0))
    intercept[IllegalStateException](c.observeDone(0))
  }

  test("a done input stops holding the watermark back; when all are done nothing is emitted") {
    val c = new WatermarkCoalescer(2)
    assert(c.observeWatermark(0, 5) == Nil)
    assert(c.observeWatermark(1, 10) == List(Watermark(5)))
    assert(c.observeDone(0) == List(Watermark(10)))
    assert(c.observeDone(1) == Nil)
  }

  test("an item re-activates an idle input at its last watermark") {
    //   q0: wm5 idle ............ item ........ wm15
    //   q1: ............ wm10 ........ wm20
    //   out:              10            -        15
    val c = new WatermarkCoalescer(2)
    c.observeWatermark(0, 5)
    c.observeIdle(0)
    assert(c.observeWatermark(1, 10) == List(Watermark(10)))
    c.observeItem(0)
    assert(c.observeWatermark(1, 20) == Nil)
    assert(c.observeWatermark(0, 15) == List(Watermark(15)))
  }

  test("after restore the coalescer never emits a watermark at or below the one it emitted, even on replay") {
    val before = new WatermarkCoalescer(2)
    before.observeWatermark(0, 10)
    assert(before.observeWatermark(1, 12) == List(Watermark(10)))
    val after = new WatermarkCoalescer(2)
    after.restore(before.state)
    // at-least-once replay: the upstreams restart behind what was seen before the snapshot
    assert(after.observeWatermark(0, 3) == Nil)
    assert(after.observeWatermark(1, 4) == Nil)
    assert(after.observeWatermark(0, 10) == Nil)
    assert(after.observeWatermark(1, 11) == Nil)
    assert(after.observeWatermark(0, 14) == List(Watermark(11)))
  }

  test("random histories of watermarks, idles, items and dones coalesce like the brute-force reference") {
    val seed = TestSeed.base
    val random = new Random(seed)
    withClue(s"seed $seed: ") {
      for (_ <- 1 to 300) {
        val inputs = 1 + random.nextInt(4)
        val history = randomHistory(random, inputs, 1 + random.nextInt(40))
        val c = new WatermarkCoalescer(inputs)
        history.indices.foreach { step =>
          val actual = history(step) match {
            case (i, Wm(ts)) => c.observeWatermark(i, ts)
            case (i, Idle) => c.observeIdle(i)
            case (i, Item) => c.observeItem(i); Nil
            case (i, Done) => c.observeDone(i)
          }
          assert(actual == ReferenceCoalescing.emittedAt(history, inputs, step), s"history $history, step $step")
        }
      }
    }
  }

  private def randomHistory(random: Random, inputs: Int, length: Int): Vector[(Int, Event)] = {
    val wms = Array.fill(inputs)(random.nextInt(5).toLong)
    val done = Array.fill(inputs)(false)
    val events = Vector.newBuilder[(Int, Event)]
    for (_ <- 0 until length if done.contains(false)) {
      val i = Iterator.continually(random.nextInt(inputs)).find(!done(_)).get
      val event = random.nextInt(10) match {
        case 0 => done(i) = true; Done
        case 1 | 2 => Idle
        case 3 | 4 => Item
        case _ => wms(i) += random.nextInt(4); Wm(wms(i))
      }
      events += ((i, event))
    }
    events.result()
  }
}

object WatermarkCoalescerTest {
  /** One step of an input's history. */
  sealed trait Event
  final case class Wm(ts: Long) extends Event
  case object Idle extends Event
  case object Item extends Event
  case object Done extends Event

  /** Recomputes everything from the history prefix, step by step: slow and plain. */
  object ReferenceCoalescing {
    private case class InputState(wm: Long, idle: Boolean, done: Boolean)

    private def inputsAfter(history: Vector[(Int, Event)], inputs: Int, step: Int): Seq[InputState] =
      (0 until inputs).map { i =>
        val own = history.take(step + 1).collect { case (`i`, e) => e }
        val wm = (Long.MinValue +: own.collect { case Wm(ts) => ts }).max
        val idle = own.filter(_ != Done).lastOption.contains(Idle)
        InputState(wm, idle, own.contains(Done))
      }

    /** The watermark the inputs allow after `step` (None: nothing to say), and whether all live inputs are idle. */
    private def candidateAfter(history: Vector[(Int, Event)], inputs: Int, step: Int): (Option[Long], Boolean) =
      if (step < 0) (None, false)
      else {
        val live = inputsAfter(history, inputs, step).filterNot(_.done)
        val active = live.filterNot(_.idle)
        if (active.nonEmpty) (Some(active.map(_.wm).min), false)
        else if (live.nonEmpty) (Some(live.map(_.wm).max), true)
        else (None, false)
      }

    def emittedAt(history: Vector[(Int, Event)], inputs: Int, step: Int): List[ControlItem] = {
      val emittedBefore = (0 until step).flatMap(s => candidateAfter(history, inputs, s)._1)
      val highestBefore = (Long.MinValue +: emittedBefore).max
      val (candidate, allIdle) = candidateAfter(history, inputs, step)
      val wm = candidate.filter(_ > highestBefore).map(Watermark(_)).toList
      val idle = if (allIdle && !candidateAfter(history, inputs, step - 1)._2) List(IdleMessage) else Nil
      wm ++ idle
    }
  }
}
