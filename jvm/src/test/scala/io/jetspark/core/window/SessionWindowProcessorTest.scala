package io.jetspark.core.window

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.testing.ProcessorVerifier
import io.jetspark.core.{Processor, Watermark}
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

import WindowTestSupport._
import io.jetspark.core.testing.TestSeed

class SessionWindowProcessorTest extends AnyFunSuite {

  private def drained(expectedLate: Long)(p: Processor): Unit = {
    val s = p.asInstanceOf[SessionWindowProcessor[_, _, _, _]]
    assert(s.keysWithState == 0, "state left after complete()")
    assert(s.lateEventsDropped == expectedLate, "late events counted")
  }

  private def verifySessions[A, R](timeout: Long, op: AggregateOperation[Ev, A, R], input: Seq[Any], expected: Seq[Any],
                                   expectedLate: Long = 0, normalize: Any => Any = asIs): Unit =
    ProcessorVerifier(() => new SessionWindowProcessor(timeout, (e: Ev) => e.key, (e: Ev) => e.ts, op))
      .input(input)
      .expectOutput(expected).checkOutputWith(sameSegments(normalize))
      .assertAfterComplete(drained(expectedLate))
      .verify()

  private val counting = TestOps.counting[Ev](withDeduct = false)
  private def s(start: Long, end: Long, count: Long, key: String = "a") = KeyedWindowResult(start, end, key, count)

  /*  timeout 10, key a
   *  events  1  6    12            30  35  40
   *  spans   [1,11) [6,16) [12,22)  [30,40) [35,45) [40,50)
   *  wm(100) -> [1,22)=3, [30,50)=3, wm(100)
   */
  test("case 7: events whose spans overlap form one session that ends timeout after its last event") {
    verifySessions(10, counting, Seq(e(1), e(6), e(12), e(30), e(35), e(40), wm(100)),
      Seq(s(1, 22, 3), s(30, 50, 3), wm(100)))
  }

  /*  timeout 10
   *  e(0) [0,10)   e(10) [10,20): touching, not overlapping -> two sessions [0,10)=1, [10,20)=1
   */
  test("case 8: touching spans do not merge") {
    verifySessions(10, counting, Seq(e(0), e(10)), Seq(s(0, 10, 1), s(10, 20, 1)))
  }

  /*  timeout 10
   *  e(1) [1,11)   e(15) [15,25)   e(8) [8,18) bridges both -> one session [1,25)=3
   */
  test("case 8: an event that bridges two sessions merges them") {
    verifySessions(10, counting, Seq(e(1), e(15), e(8)), Seq(s(1, 25, 3)))
  }

  /*  timeout 10
   *  wm(20), then e(19): older than the watermark -> dropped and counted
   */
  test("case 9: an event older than the watermark is late") {
    verifySessions(10, counting, Seq(wm(20), e(19)), Seq(wm(20)), expectedLate = 1)
  }

  test("case 9, late events out: a late event is emitted as it comes, against the watermark then, and counted") {
    ProcessorVerifier(() => new SessionWindowProcessor(10, (e: Ev) => e.key, (e: Ev) => e.ts, counting, lateEventsOut = true))
      .input(Seq(wm(20), e(19), e(25), e(3)))
      .expectOutput(Seq(wm(20), LateEvent(e(19), 20), LateEvent(e(3), 20), s(25, 35, 1)))
      .assertAfterComplete(drained(2))
      .verify()
  }

  /*  timeout 10
   *  e(1) [1,11)   wm(11): session still open    wm(12): [1,11)=1 emitted, then wm(12)
   */
  test("case 9: a session is emitted by the first watermark past its end, not by one equal to it") {
    verifySessions(10, counting, Seq(e(1), wm(11), wm(12)), Seq(wm(11), s(1, 11, 1), wm(12)))
  }

  /*  timeout 5, keys a and b
   *  a: 0 (session [0,5))   b: 2 (session [2,7))   a: 20
   *  wm(10) -> [0,5) a, [2,7) b in end order, wm(10); complete -> [20,25) a
   */
  test("sessions of several keys come in end order; keys never mix") {
    verifySessions(5, counting, Seq(Ev(2, "b"), Ev(0, "a"), Ev(20, "a"), wm(10)),
      Seq(s(0, 5, 1), s(2, 7, 1, "b"), wm(10), s(20, 25, 1)))
  }

  /*  timeout 10, at the ends of the 64-bit range
   *  e(MinValue) [MinValue, MinValue + 10)      e(MaxValue - 10) [MaxValue - 10, MaxValue): both representable
   *  e(MaxValue - 9): its session would end at MaxValue + 1 -> WindowOutOfRangeException naming the timestamp
   */
  test("sessions at the ends of the 64-bit range are emitted; one that would end beyond it fails naming the event") {
    verifySessions(10, counting, Seq(e(Long.MaxValue - 10), e(Long.MinValue), e(Long.MinValue + 3)),
      Seq(s(Long.MinValue, Long.MinValue + 13, 2), s(Long.MaxValue - 10, Long.MaxValue, 1)))
    val ex = intercept[WindowOutOfRangeException](
      processAll(new SessionWindowProcessor(10, (e: Ev) => e.key, (e: Ev) => e.ts, counting), e(Long.MaxValue - 9)))
    assert(ex.ts == Long.MaxValue - 9 && ex.getMessage.contains("9223372036854775808") &&
      ex.getMessage.contains("window-in-64-bit-range"))
  }

  /*  timeout 10, counting, earlyResultsPeriodMs = 100, clock under test control, outbox capacity 1
   *  events a@1 a@6 b@3 a@30        open: a [1,16)=2, b [3,13)=1, a [30,40)=1
   *  t=99   tryProcess: nothing (the period has not passed)
   *  t=100  tryProcess: early b [3,13)=1, a [1,16)=2, a [30,40)=1, in end order
   *  t=150  tryProcess: nothing (once per period)
   *  a@12 extends a's first session to [1,22)=3; wm(20) closes b [3,13)
   *  snapshot, restore into a fresh instance (whose own period would start at 150)
   *  t=200  tryProcess: early a [1,22)=3, a [30,40)=1
   *  complete: a [1,22)=3, a [30,40)=1, final
   */
  test("early results: every open session so far, at most once per period, marked early; the period survives a snapshot") {
    var now = 0L
    def instance() = new Driver(new SessionWindowProcessor(10, (e: Ev) => e.key, (e: Ev) => e.ts, counting,
      earlyResultsPeriodMs = 100, clock = () => now), outboxCapacity = 1)
    def early(start: Long, end: Long, count: Long, key: String = "a") = KeyedWindowResult(start, end, key, count, isEarly = true)
    var d = instance()
    d.process(e(1), e(6), Ev(3, "b"), e(30))
    now = 99
    assert(d.run(_.tryProcess()) == Nil)
    now = 100
    assert(d.run(_.tryProcess()) == Seq(early(3, 13, 1, "b"), early(1, 16, 2), early(30, 40, 1)))
    now = 150
    assert(d.run(_.tryProcess()) == Nil)
    d.process(e(12))
    assert(d.run(_.tryProcessWatermark(wm(20))) == Seq(s(3, 13, 1, "b"), wm(20)))
    val saved = d.snapshot()
    d = instance()
    d.restore(saved)
    now = 200
    assert(d.run(_.tryProcess()) == Seq(early(1, 22, 3), early(30, 40, 1)))
    assert(d.run(_.complete()) == Seq(s(1, 22, 3), s(30, 40, 1)))
  }

  test("early results off or not yet due change nothing in any delivery variant, with snapshots") {
    ProcessorVerifier(() => new SessionWindowProcessor(10, (e: Ev) => e.key, (e: Ev) => e.ts, counting,
      earlyResultsPeriodMs = 1000, clock = () => 0L))
      .input(Seq(e(1), e(6), e(12), wm(30), e(35)))
      .expectOutput(Seq(s(1, 22, 3), wm(30), s(35, 45, 1))).checkOutputWith(sameSegments(asIs))
      .verify()
  }

  test("an operation without combineFn is refused: bridging events must merge accumulators") {
    val noCombine = TestOps.withoutCombine[Ev]
    val ex = intercept[IllegalArgumentException](new SessionWindowProcessor(10, (e: Ev) => e.key, (e: Ev) => e.ts, noCombine))
    assert(ex.getMessage.contains("combineFn") && ex.getMessage.contains("merge"))
    intercept[IllegalArgumentException](new SessionWindowProcessor(0, (e: Ev) => e.key, (e: Ev) => e.ts, counting))
  }

  /** Brute force: keeps the accepted events not yet emitted; at each watermark rebuilds every session from
    * them (sort by time, extend while the next event starts before the current end) and emits those that
    * end before the watermark. An event older than the watermark is late.
    */
  private def reference(timeout: Long, items: Seq[Any], result: Seq[Ev] => Any): (Seq[Any], Long) = {
    var open = Vector.empty[Ev]
    var current = Long.MinValue
    var late = 0L
    val out = Vector.newBuilder[Any]
    def closeBefore(limit: Long): Unit = {
      val sessions = open.groupBy(_.key).toSeq.flatMap { case (key, evs) =>
        evs.sortBy(_.ts).foldLeft(List.empty[(Long, Long, Vector[Ev])]) {
          case ((start, end, in) :: done, ev) if ev.ts < end => (start, math.max(end, ev.ts + timeout), in :+ ev) :: done
          case (done, ev) => (ev.ts, ev.ts + timeout, Vector(ev)) :: done
        }.map { case (start, end, in) => (key, start, end, in) }
      }
      val closing = sessions.filter(_._3 < limit)
      closing.sortBy(_._3).foreach { case (key, start, end, in) => out += KeyedWindowResult(start, end, key, result(in)) }
      val emitted = closing.flatMap(_._4).toSet
      open = open.filterNot(emitted)
    }
    items.foreach {
      case ev: Ev => if (ev.ts < current) late += 1 else open :+= ev
      case w: Watermark => current = math.max(current, w.timestamp); closeBefore(current); out += w
      case other => fail(s"not an event or a watermark: $other")
    }
    closeBefore(Long.MaxValue)
    (out.result(), late)
  }

  test("randomized: the sessions and late events of a brute-force reference") {
    val seed = TestSeed.base
    val rnd = new Random(seed)
    for (trial <- 1 to 60) {
      // distinct events, so that the reference's bookkeeping by identity is exact
      val items = randomEventsAndWatermarks(rnd, Seq("a", "b", "c")).distinct
      val timeout = 1L + rnd.nextInt(12)
      withClue(s"seed $seed, trial $trial: timeout $timeout, input ${items.mkString(", ")}\n") {
        if (rnd.nextBoolean()) {
          val (expected, late) = reference(timeout, items, _.size.toLong)
          verifySessions(timeout, counting, items, expected, late)
        } else {
          val (expected, late) = reference(timeout, items, _.toList)
          verifySessions(timeout, TestOps.toList[Ev], items, expected, late, sortListResults)
        }
      }
    }
  }
}
