package io.jetspark.core.eventtime

import io.jetspark.core.{IdleMessage, Watermark}
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

class EventTimeMapperTest extends AnyFunSuite {
  import EventTimeMapperTest._

  private def policy(lag: Long, idleTimeout: Long = 0, frameSize: Long = 1, frameOffset: Long = 0) =
    EventTimePolicy[Long](identity, lag, idleTimeout, frameSize, frameOffset)

  test("the watermark is the minimum over substreams of top timestamp minus lag, emitted before its event") {
    //   p0: e10  e11 ................... e13
    //   p1: .......... e10  e11  e12 .......
    //   wm: (p1 has none)  7    8   -     9    (lag 3)
    val m = new EventTimeMapper(policy(lag = 3), 2, new ManualClock)
    assert(m.flatMapEvent(0, 10L) == List[Any](10L))
    assert(m.flatMapEvent(0, 11L) == List[Any](11L))
    assert(m.flatMapEvent(1, 10L) == List[Any](Watermark(7), 10L))
    assert(m.flatMapEvent(1, 11L) == List[Any](Watermark(8), 11L))
    assert(m.flatMapEvent(1, 12L) == List[Any](12L))
    assert(m.flatMapEvent(0, 13L) == List[Any](Watermark(9), 13L))
  }

  test("an out-of-order event neither lowers the watermark nor is dropped: lateness is the window's job") {
    val m = new EventTimeMapper(policy(lag = 0), 1, new ManualClock)
    assert(m.flatMapEvent(0, 10L) == List[Any](Watermark(10), 10L))
    assert(m.flatMapEvent(0, 4L) == List[Any](4L))
    assert(m.lastEmitted == 10)
  }

  test("a substream that delivers nothing for the idle timeout stops holding the watermark back") {
    //   time:  0     50     120          220     230    240     250
    //   p0:   e10 ................................... e11
    //   p1:         e5     e7 ..................................  e8
    //   out:  10   wm5,5  wm7,7 (p0 idle)  wm10,idle  -   wm11,11   8  (lag 0, timeout 100)
    val clock = new ManualClock
    val m = new EventTimeMapper(policy(lag = 0, idleTimeout = 100), 2, clock)
    assert(m.flatMapEvent(0, 10L) == List[Any](10L))
    clock.now = 50
    assert(m.flatMapEvent(1, 5L) == List[Any](Watermark(5), 5L))
    clock.now = 120
    assert(m.flatMapEvent(1, 7L) == List[Any](Watermark(7), 7L))
    clock.now = 200
    assert(m.flatMapIdle() == Nil)
    clock.now = 220
    assert(m.flatMapIdle() == List[Any](Watermark(10), IdleMessage))
    clock.now = 230
    assert(m.flatMapIdle() == Nil)
    clock.now = 240
    assert(m.flatMapEvent(0, 11L) == List[Any](Watermark(11), 11L))
    clock.now = 250
    assert(m.flatMapEvent(1, 8L) == List[Any](8L))
  }

  test("a substream that never delivers becomes idle one timeout after the mapper starts") {
    val clock = new ManualClock(1000)
    val m = new EventTimeMapper(policy(lag = 2, idleTimeout = 100), 2, clock)
    clock.now = 1050
    assert(m.flatMapEvent(0, 30L) == List[Any](30L))
    clock.now = 1100
    assert(m.flatMapEvent(0, 31L) == List[Any](Watermark(29), 31L))
  }

  test("throttling rounds the watermark down to frame boundaries and emits it once per frame") {
    //   events:  3    7    12    15    29    31      (lag 0, frame 10, offset 0)
    //   wm:      0    -    10    -     20    30
    val m = new EventTimeMapper(policy(lag = 0, frameSize = 10), 1, new ManualClock)
    assert(m.flatMapEvent(0, 3L) == List[Any](Watermark(0), 3L))
    assert(m.flatMapEvent(0, 7L) == List[Any](7L))
    assert(m.flatMapEvent(0, 12L) == List[Any](Watermark(10), 12L))
    assert(m.flatMapEvent(0, 15L) == List[Any](15L))
    assert(m.flatMapEvent(0, 29L) == List[Any](Watermark(20), 29L))
    assert(m.flatMapEvent(0, 31L) == List[Any](Watermark(30), 31L))
  }

  test("throttling with an offset uses the boundaries offset + k * frame") {
    //   events:  3    7    14    15    26      (lag 0, frame 10, offset 5: boundaries ..., -5, 5, 15, 25)
    //   wm:     -5    5    -     15    25
    val m = new EventTimeMapper(policy(lag = 0, frameSize = 10, frameOffset = 5), 1, new ManualClock)
    assert(m.flatMapEvent(0, 3L) == List[Any](Watermark(-5), 3L))
    assert(m.flatMapEvent(0, 7L) == List[Any](Watermark(5), 7L))
    assert(m.flatMapEvent(0, 14L) == List[Any](14L))
    assert(m.flatMapEvent(0, 15L) == List[Any](Watermark(15), 15L))
    assert(m.flatMapEvent(0, 26L) == List[Any](Watermark(25), 26L))
  }

  test("after restore the mapper never emits a watermark at or below the one it emitted before") {
    //   time: 0         100            (snapshot, restore)      ...
    //   p0:   e10 ..... idle                      e15     e22
    //   p1:   e20 ...... idle           e25 (p0 back at 10 holds it)
    //   out:  wm10      wm20, idle       25        15   wm22, 22    (lag 0, timeout 100)
    val clock = new ManualClock
    val before = new EventTimeMapper(policy(lag = 0, idleTimeout = 100), 2, clock)
    assert(before.flatMapEvent(0, 10L) == List[Any](10L))
    assert(before.flatMapEvent(1, 20L) == List[Any](Watermark(10), 20L))
    clock.now = 100
    assert(before.flatMapIdle() == List[Any](Watermark(20), IdleMessage))
    val after = new EventTimeMapper(policy(lag = 0, idleTimeout = 100), 2, clock)
    after.restore(before.state)
    clock.now = 110
    assert(after.flatMapEvent(1, 25L) == List[Any](25L))
    assert(after.flatMapEvent(0, 15L) == List[Any](15L))
    assert(after.flatMapEvent(0, 22L) == List[Any](Watermark(22), 22L))
  }

  test("idle timers restart after restore, or run on from the saved events where they survive restore") {
    //   time:  0          50     | snapshot, restore at 120 | quiet call at 120
    //   p0:   e10 ................................................ (quiet 120 >= 100: idle, if the timer ran on)
    //   p1:   e20         e25 ........................................ (quiet 70)
    def history(clock: ManualClock, survive: Boolean): EventTimeMapper[Long] = {
      val before = new EventTimeMapper(policy(lag = 0, idleTimeout = 100), 2, clock, survive)
      assert(before.flatMapEvent(0, 10L) == List[Any](10L))
      assert(before.flatMapEvent(1, 20L) == List[Any](Watermark(10), 20L))
      clock.now = 50
      assert(before.flatMapEvent(1, 25L) == List[Any](25L))
      clock.now = 120
      val after = new EventTimeMapper(policy(lag = 0, idleTimeout = 100), 2, clock, survive)
      after.restore(before.state)
      after
    }
    assert(history(new ManualClock, survive = false).flatMapIdle() == Nil) // Jet: the timers restart at 120
    val survived = history(new ManualClock, survive = true)
    assert(survived.flatMapIdle() == List[Any](Watermark(25)))
    assert(survived.flatMapEvent(0, 11L) == List[Any](11L)) // p0 delivers again: active, at 10, below what was emitted
  }

  test("after restore each substream continues from its saved top timestamp") {
    //   p0: e10 | restore | e30
    //   p1: e20 |         |          (p1 still holds the watermark at 20)
    //   out: 10, wm10, 20 | wm20, 30                   (lag 0)
    val clock = new ManualClock
    val before = new EventTimeMapper(policy(lag = 0), 2, clock)
    before.flatMapEvent(0, 10L)
    assert(before.flatMapEvent(1, 20L) == List[Any](Watermark(10), 20L))
    val after = new EventTimeMapper(policy(lag = 0), 2, clock)
    after.restore(before.state)
    assert(after.flatMapEvent(0, 30L) == List[Any](Watermark(20), 30L))
  }

  test("a policy with a negative lag, a zero frame or an offset outside the frame is rejected") {
    intercept[IllegalArgumentException](policy(lag = -1))
    intercept[IllegalArgumentException](policy(lag = 0, idleTimeout = -1))
    intercept[IllegalArgumentException](policy(lag = 0, frameSize = 0))
    intercept[IllegalArgumentException](policy(lag = 0, frameSize = 10, frameOffset = 10))
  }

  test("timestamps near Long.MinValue saturate instead of overflowing") {
    val p = policy(lag = 10, frameSize = 7, frameOffset = 3)
    assert(p.watermarkFor(Long.MinValue + 5) == Long.MinValue)
    assert(p.throttle(Long.MinValue + 1) == Long.MinValue)
  }

  test("random events and quiet periods give the watermarks of the brute-force reference") {
    val seed = TestSeed.base
    val random = new Random(seed)
    withClue(s"seed $seed: ") {
      for (_ <- 1 to 300) {
        val substreams = 1 + random.nextInt(3)
        val p = policy(
          lag = random.nextInt(4).toLong,
          idleTimeout = Seq(0L, 5L, 20L)(random.nextInt(3)),
          frameSize = Seq(1L, 3L, 5L)(random.nextInt(3)))
        val pol = p.copy(throttlingFrameOffset = random.nextLong(p.throttlingFrameSize))
        val clock = new ManualClock
        val m = new EventTimeMapper(pol, substreams, clock)
        val steps = Vector.fill(1 + random.nextInt(30)) {
          val at = random.nextInt(4).toLong
          if (random.nextInt(4) == 0) Step(at, None) else Step(at, Some((random.nextInt(substreams), random.nextInt(40).toLong)))
        }
        val times = steps.scanLeft(0L)(_ + _.advance).tail
        steps.indices.foreach { i =>
          clock.now = times(i)
          val actual = steps(i).event match {
            case Some((s, ts)) => m.flatMapEvent(s, ts)
            case None => m.flatMapIdle()
          }
          val expected = reference(pol, substreams, steps.zip(times), i)
          assert(actual == expected, s"policy $pol, ${substreams} substreams, steps ${steps.zip(times)}, step $i")
        }
      }
    }
  }

  /** What the mapper should emit at `step`, recomputed from the whole history: slow and plain. */
  private def reference(p: EventTimePolicy[Long], substreams: Int, history: Vector[(Step, Long)], step: Int): List[Any] = {
    def stateAfter(k: Int): (Option[Long], Boolean) =
      if (k < 0) (None, false)
      else {
        val now = history(k)._2
        val perSubstream = (0 until substreams).map { s =>
          val own = history.take(k + 1).collect { case (Step(_, Some((`s`, ts))), at) => (ts, at) }
          val wm = p.watermarkFor((Long.MinValue +: own.map(_._1)).max)
          val lastEventAt = (0L +: own.map(_._2)).max
          (wm, p.idleTimeoutMs > 0 && now - lastEventAt >= p.idleTimeoutMs)
        }
        val active = perSubstream.filterNot(_._2)
        if (active.nonEmpty) (Some(active.map(_._1).min), false)
        else (Some(perSubstream.map(_._1).max), true)
      }
    val highestBefore = (Long.MinValue +: (0 until step).flatMap(k => stateAfter(k)._1.map(p.throttle))).max
    val (candidate, allIdle) = stateAfter(step)
    val wm = candidate.map(p.throttle).filter(_ > highestBefore).map(Watermark(_)).toList
    val idle = if (allIdle && !stateAfter(step - 1)._2) List(IdleMessage) else Nil
    wm ++ idle ++ history(step)._1.event.map(_._2).toList
  }
}

object EventTimeMapperTest {
  /** A clock the test moves by hand. */
  final class ManualClock(var now: Long = 0L) extends (() => Long) {
    override def apply(): Long = now
  }

  /** After `advance` ms: an event `(substream, timestamp)`, or a quiet call. */
  final case class Step(advance: Long, event: Option[(Int, Long)])
}
