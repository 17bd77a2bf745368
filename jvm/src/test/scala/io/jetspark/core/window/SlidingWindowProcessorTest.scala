package io.jetspark.core.window

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.testing.ProcessorVerifier
import io.jetspark.core.{Processor, Watermark}
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

import WindowTestSupport._
import io.jetspark.core.testing.TestSeed

class SlidingWindowProcessorTest extends AnyFunSuite {

  // ---- running one case over every variant -------------------------------------------------------------

  private def drained(expectedLate: Long)(p: Processor): Unit = {
    val w = p.asInstanceOf[SlidingWindowProcessor[_, _, _]]
    assert(w.keysWithState == 0, "state left after complete()")
    assert(w.lateEventsDropped == expectedLate, "late events counted")
  }

  /** Runs the events and watermarks of each upstream instance (`partitions`; one unless two-stage)
    * through a single-stage processor, or through first-stage processors whose merged output feeds one
    * second-stage processor, all under the verifier; the windows must equal `expected`.
    */
  private def runWindows[A, R](
      policy: SlidingWindowPolicy,
      op: AggregateOperation[Ev, A, R],
      keyed: Boolean,
      twoStage: Boolean,
      partitions: Seq[Seq[Any]],
      expected: Seq[Any],
      expectedLatePerPartition: Seq[Long],
      normalize: Any => Any = asIs,
  ): Unit = {
    val tsFn = (e: Ev) => e.ts
    if (!twoStage) {
      require(partitions.size == 1)
      ProcessorVerifier(() =>
        if (keyed) SlidingWindowProcessor.singleStage(policy, (e: Ev) => e.key, tsFn, op)
        else SlidingWindowProcessor.singleStageNonKeyed(policy, tsFn, op))
        .input(partitions.head)
        .expectOutput(expected).checkOutputWith(sameSegments(normalize))
        .assertAfterComplete(drained(expectedLatePerPartition.head))
        .verify()
    } else {
      val keyFn: Ev => Any = if (keyed) _.key else _ => NonKeyed
      val stageOneOutputs = partitions.zip(expectedLatePerPartition).map { case (items, late) =>
        val stageOne = ProcessorVerifier(() => SlidingWindowProcessor.accumulateFrames(policy, keyFn, tsFn, op))
          .input(items).assertAfterComplete(drained(late))
        val out = stageOne.verify().head
        // Every variant (back-pressure, snapshots) must send the same frames; `out` itself is checked by
        // the second stage against the expected windows.
        stageOne.expectOutput(out).checkOutputWith(sameSegments(asIs)).verify()
        out
      }
      ProcessorVerifier(() => SlidingWindowProcessor.combineFrames(policy, op, keyed))
        .input(mergeUpstreamOutputs(stageOneOutputs))
        .expectOutput(expected).checkOutputWith(sameSegments(normalize))
        .assertAfterComplete(drained(0))
        .verify()
    }
  }

  /** A spec case: non-keyed, over deduct / no deduct and single / two stages. */
  private def verifyCase(policy: SlidingWindowPolicy, op: Boolean => AggregateOperation[Ev, TestOps.LongAcc, Long],
                         input: Seq[Any], expected: Seq[Any], expectedLate: Long = 0): Unit =
    for (withDeduct <- Seq(true, false); twoStage <- Seq(false, true))
      withClue(s"[deduct=$withDeduct, twoStage=$twoStage] ") {
        runWindows(policy, op(withDeduct), keyed = false, twoStage, Seq(input), expected, Seq(expectedLate))
      }

  private val counting = (d: Boolean) => TestOps.counting[Ev](d)
  private val summing = (d: Boolean) => TestOps.summing[Ev](_.value, d)
  private def w(start: Long, end: Long, result: Long) = WindowResult(start, end, result)

  // ---- the policy -----------------------------------------------------------------------------------------

  test("size must be a positive multiple of slide, and the error names both") {
    val ex = intercept[IllegalArgumentException](SlidingWindowPolicy(5, 2))
    assert(ex.getMessage.contains("5") && ex.getMessage.contains("2"))
    intercept[IllegalArgumentException](SlidingWindowPolicy(0, 1))
    intercept[IllegalArgumentException](SlidingWindowPolicy(4, 0))
    assert(SlidingWindowPolicy(4, 4).isTumbling && !SlidingWindowPolicy(4, 2).isTumbling)
  }

  test("frames are aligned to 0 and named by their end, negative timestamps included") {
    //  ts:     -3  -2  -1 | 0   1 | 2
    //  frame:  [-4,-2) [-2,0) [0,2) [2,4)      (slide 2)
    val p = SlidingWindowPolicy(4, 2)
    assert(Seq(-3L, -2L, -1L, 0L, 1L, 2L).map(p.frameEnd) == Seq(-2L, 0L, 0L, 2L, 2L, 4L))
    assert(p.lastEndAtOrBefore(-1) == -2 && p.lastEndAtOrBefore(4) == 4 && p.lastEndAtOrBefore(5) == 4)
    assert(p.lastEndAtOrBefore(Long.MinValue) == Long.MinValue)
  }

  /*  sliding(4, 2) at the ends of the 64-bit range (Min = Long.MinValue, Max = Long.MaxValue, odd)
   *  lowest frame whose windows fit: [Min+2, Min+4), in windows [Min, Min+4) and [Min+2, Min+6)
   *  highest: [Max-5, Max-3), in windows [Max-7, Max-3) and [Max-5, Max-1)
   *  an event at Min+1 (window [Min-2, Min+2)) or at Max-3 (window [Max-3, Max+1)) cannot be windowed
   */
  test("windows at the ends of the 64-bit range are emitted whole; an event in one beyond it fails naming it") {
    val (min, max) = (Long.MinValue, Long.MaxValue)
    val p = SlidingWindowPolicy(4, 2)
    assert(p.frameEnd(min + 2) == min + 4 && p.frameEnd(max - 4) == max - 3)
    for (ts <- Seq(min, min + 1, max - 3, max)) {
      val ex = intercept[WindowOutOfRangeException](p.frameEnd(ts))
      assert(ex.ts == ts && ex.getMessage.contains(ts.toString) && ex.getMessage.contains("window-in-64-bit-range"))
    }
    verifyCase(p, counting, Seq(e(max - 5), e(min + 3), e(min + 2), e(max - 4)),
      Seq(w(min, min + 4, 2), w(min + 2, min + 6, 2), w(max - 7, max - 3, 2), w(max - 5, max - 1, 2)))
    // a window may end at Long.MaxValue itself (an end is exclusive): tumbling by 7, which divides it
    verifyCase(SlidingWindowPolicy(7, 7), counting, Seq(e(max - 1), e(min + 1)),
      Seq(w(min + 1, min + 8, 1), w(max - 7, max, 1)))
    val single = SlidingWindowProcessor.singleStageNonKeyed(p, (e: Ev) => e.ts, counting(false))
    assert(intercept[WindowOutOfRangeException](processAll(single, e(0), e(max - 3))).ts == max - 3)
  }

  // ---- spec cases ---------------------------------------------------------------------------------------

  /*  sliding(4, 1), counting
   *  events   0 1 2 3 4
   *  wm         1 2 3 4 5 6 7 8
   *  windows  end 1:[-3,1)=1  end 2=2  end 3=3  end 4:[0,4)=4  end 5=4  end 6=3  end 7=2  end 8:[4,8)=1
   *  each emitted just before the watermark equal to its end
   */
  private val case1Expected =
    Seq(w(-3, 1, 1), wm(1), w(-2, 2, 2), wm(2), w(-1, 3, 3), wm(3), w(0, 4, 4), wm(4),
      w(1, 5, 4), wm(5), w(2, 6, 3), wm(6), w(3, 7, 2), wm(7), w(4, 8, 1), wm(8))
  private val case1Watermarks = (1L to 8L).map(wm)

  test("case 1: each window is emitted when the watermark reaches its end, before the watermark") {
    verifyCase(SlidingWindowPolicy(4, 1), counting, (0L to 4L).map(e) ++ case1Watermarks, case1Expected)
  }

  test("case 1: the same windows from reversed input") {
    verifyCase(SlidingWindowPolicy(4, 1), counting, (0L to 4L).reverse.map(e) ++ case1Watermarks, case1Expected)
  }

  test("case 1: the same windows from shuffled input") {
    val shuffled = new Random(TestSeed.base).shuffle((0L to 4L).toList)
    verifyCase(SlidingWindowPolicy(4, 1), counting, shuffled.map(e) ++ case1Watermarks, case1Expected)
  }

  /*  sliding(4, 1): no events
   *  wm      1
   *  output  wm(1) only: empty windows are never emitted
   */
  test("case 2: a watermark with no data emits only the watermark") {
    verifyCase(SlidingWindowPolicy(4, 1), counting, Seq(wm(1)), Seq(wm(1)))
  }

  /*  sliding(4, 1), counting; input ends without any watermark
   *  events  0 1
   *  complete -> end 1=1, end 2=2, end 3=2, end 4=2, end 5:[1,5)=1
   */
  test("case 3: when the input ends every remaining window is emitted") {
    verifyCase(SlidingWindowPolicy(4, 1), counting, Seq(e(0), e(1)),
      Seq(w(-3, 1, 1), w(-2, 2, 2), w(-1, 3, 2), w(0, 4, 2), w(1, 5, 1)))
  }

  /*  sliding(4, 1), summing
   *  wm      10
   *  events      6 7 8 9 (late: their frames ended at or before 10)  10 (value 123)
   *  complete -> ends 11, 12, 13, 14 each 123
   */
  test("case 4: events whose frame is complete are dropped and counted") {
    val input = Seq(wm(10)) ++ (6L to 9L).map(t => Ev(t, value = 1000)) :+ Ev(10, value = 123)
    verifyCase(SlidingWindowPolicy(4, 1), summing, input,
      Seq(wm(10), w(7, 11, 123), w(8, 12, 123), w(9, 13, 123), w(10, 14, 123)), expectedLate = 4)
  }

  // The same input; a window asked to pass its late events on emits each as it comes, against the
  // watermark 10 it had then, and still counts it (back-pressure and snapshots included).
  test("case 4, late events out: each late event is emitted as it comes, and counted") {
    val input = Seq(wm(10)) ++ (6L to 9L).map(t => Ev(t, value = 1000)) :+ Ev(10, value = 123)
    val late = (6L to 9L).map(t => LateEvent(Ev(t, value = 1000), 10))
    for (withDeduct <- Seq(true, false); keyed <- Seq(true, false)) withClue(s"[deduct=$withDeduct, keyed=$keyed] ") {
      val op = summing(withDeduct)
      ProcessorVerifier(() =>
        if (keyed) SlidingWindowProcessor.singleStage(SlidingWindowPolicy(4, 1), (e: Ev) => e.key, (e: Ev) => e.ts, op,
          lateEventsOut = true)
        else SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(4, 1), (e: Ev) => e.ts, op, lateEventsOut = true))
        .input(input)
        .expectOutput(Seq(wm(10)) ++ late ++ Seq(7L, 8L, 9L, 10L).map(s =>
          if (keyed) KeyedWindowResult(s, s + 4, "a", 123L) else w(s, s + 4, 123)))
        .assertAfterComplete(drained(4))
        .verify()
    }
  }

  /*  sliding(4, 2)        frames [8,10) [10,12)
   *  wm(11): window end 10 = frames 8, 10 is complete; frame 12 is not
   *  e(10) -> frame 12: accepted        e(9) -> frame 10: late
   *  complete -> end 12:[8,12)=1, end 14:[10,14)=1
   */
  test("case 5: an event is late exactly when its frame went into a complete window") {
    verifyCase(SlidingWindowPolicy(4, 2), counting, Seq(wm(11), e(10), e(9)),
      Seq(wm(11), w(8, 12, 1), w(10, 14, 1)), expectedLate = 1)
  }

  /*  two-stage sliding(16, 4), stage 1, summing (value 1)
   *  events 0 1 | wm 4 | 4 5 8 8 | wm 8 | 8 | wm 12 | wm 16 | wm 20
   *  output frame(end 4)=2, wm 4, frame(8)=2, wm 8, frame(12)=3, wm 12, wm 16, wm 20
   */
  test("case 6: the first stage emits each frame when the watermark reaches its end") {
    for (withDeduct <- Seq(true, false)) {
      val op = TestOps.summing[Ev](_.value, withDeduct)
      val frame = (end: Long, sum: Long) => KeyedFrame(end, NonKeyed, TestOps.LongAcc(sum))
      ProcessorVerifier(() => SlidingWindowProcessor.accumulateFrames(SlidingWindowPolicy(16, 4), (_: Ev) => NonKeyed, (e: Ev) => e.ts, op))
        .input(Seq(e(0), e(1), wm(4), e(4), e(5), e(8), e(8), wm(8), e(8), wm(12), wm(16), wm(20)))
        .expectOutput(Seq(frame(4, 2), wm(4), frame(8, 2), wm(8), frame(12, 3), wm(12), wm(16), wm(20)))
        .assertAfterComplete(drained(0))
        .verify()
    }
  }

  // ---- more behaviour -----------------------------------------------------------------------------------

  /*  sliding(3, 1), counting; ten billion ms between the two events
   *  events  0                                  10^10
   *  wm             5*10^9 (closes 0's windows)                 complete
   *  output  ends 1, 2, 3 for e(0); wm; ends 10^10+1 .. 10^10+3 for e(10^10): the gap costs no steps
   */
  test("a long stretch without frames is skipped, not stepped through") {
    val far = 10000000000L
    verifyCase(SlidingWindowPolicy(3, 1), counting, Seq(e(0), e(far), wm(far / 2)),
      Seq(w(-2, 1, 1), w(-1, 2, 1), w(0, 3, 1), wm(far / 2), w(far - 2, far + 1, 1), w(far - 1, far + 2, 1), w(far, far + 3, 1)))
  }

  /*  tumbling(10), keyed counting
   *  a: 0 5          b: 100
   *  wm(50): a's window [0,10) emitted; a holds no frame any more, b still does
   */
  test("a key whose windows are all emitted is forgotten") {
    val d = new Driver(SlidingWindowProcessor.singleStage(SlidingWindowPolicy(10, 10), (e: Ev) => e.key, (e: Ev) => e.ts,
      TestOps.counting[Ev](true)))
    d.process(Ev(0, "a"), Ev(5, "a"), Ev(100, "b"))
    assert(d.processor.keysWithState == 2)
    assert(d.run(_.tryProcessWatermark(wm(50))) == Seq(KeyedWindowResult(0, 10, "a", 2L), wm(50)))
    assert(d.processor.keysWithState == 1)
  }

  /*  sliding(6, 2), counting, one event per key
   *  a: 1        b: 5
   *  wm(20): a -> ends 2, 4, 6; b -> ends 6, 8, 10; emitted by end, keys interleaved
   */
  test("windows of several keys closed by one watermark come in end order") {
    val d = new Driver(SlidingWindowProcessor.singleStage(SlidingWindowPolicy(6, 2), (e: Ev) => e.key, (e: Ev) => e.ts,
      TestOps.counting[Ev](false)))
    d.process(Ev(5, "b"), Ev(1, "a"))
    val ends = d.run(_.tryProcessWatermark(wm(20))).collect { case r: KeyedWindowResult[_, _] => (r.end, r.key) }
    assert(ends.map(_._1) == Seq(2L, 4L, 6L, 6L, 8L, 10L))
    assert(ends.toSet == Set((2L, "a"), (4L, "a"), (6L, "a"), (6L, "b"), (8L, "b"), (10L, "b")))
  }

  /*  sliding(4, 1), counting, earlyResultsPeriodMs = 100, clock under test control
   *  events 0 1 3           frames end 1:1  2:1  4:1
   *  t=99   tryProcess: nothing (the period has not passed)
   *  t=100  tryProcess: early ends 1..7 ([-3,1)=1 [-2,2)=2 [-1,3)=2 [0,4)=3 [1,5)=2 [2,6)=1 [3,7)=1)
   *  t=150  tryProcess: nothing (once per period)
   *  wm(2): final ends 1, 2, then wm(2)
   *  t=200  tryProcess: early ends 3..7 only
   */
  test("early results: the partial windows with data, at most once per period, marked early") {
    var now = 0L
    val d = new Driver(SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(4, 1), (e: Ev) => e.ts,
      TestOps.counting[Ev](true), earlyResultsPeriodMs = 100, clock = () => now), outboxCapacity = 1)
    d.process(e(0), e(1), e(3))
    def early(s: Long, e: Long, r: Long) = WindowResult(s, e, r, isEarly = true)
    now = 99
    assert(d.run(_.tryProcess()) == Nil)
    now = 100
    assert(d.run(_.tryProcess()) ==
      Seq(early(-3, 1, 1), early(-2, 2, 2), early(-1, 3, 2), early(0, 4, 3), early(1, 5, 2), early(2, 6, 1), early(3, 7, 1)))
    now = 150
    assert(d.run(_.tryProcess()) == Nil)
    assert(d.run(_.tryProcessWatermark(wm(2))) == Seq(w(-3, 1, 1), w(-2, 2, 2), wm(2)))
    now = 200
    assert(d.run(_.tryProcess()) == Seq(early(-1, 3, 2), early(0, 4, 3), early(1, 5, 2), early(2, 6, 1), early(3, 7, 1)))
  }

  test("early results: when they are next due is part of the snapshot, so a processor restored at every step " +
    "still emits them once per period") {
    var now = 0L
    def instance() = new Driver(SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(4, 1), (e: Ev) => e.ts,
      TestOps.counting[Ev](true), earlyResultsPeriodMs = 100, clock = () => now))
    var d = instance() // due at 100
    d.process(e(0))
    def step(at: Long): Seq[Any] = {
      now = at
      val saved = d.snapshot()
      d = instance() // would be due one period after `at`, without the saved time
      d.restore(saved)
      d.run(_.tryProcess())
    }
    assert(step(60) == Nil)
    assert(step(100).nonEmpty) // due at 100 as the first instance said; next due at 200
    assert(step(150) == Nil)
    assert(step(200).map(_.asInstanceOf[WindowResult[_]].isEarly) == Seq(true, true, true, true))
  }

  /*  sliding(4, 2), keyed counting, two instances before a restart
   *  instance 0: a@1 a@3 | wm(3) | a@1 late          instance 1: b@2 | wm(3) | b@0 late, b@5
   *  snapshot both -> restore every entry into one fresh instance -> complete
   *  output  a: end 4:[0,4)=2, end 6:[2,6)=1 ; b: end 4:[0,4)=1, end 6=2, end 8:[4,8)=1 ; late 3
   */
  test("a fresh instance restores the state that several instances saved, counters summed") {
    def newProcessor() = SlidingWindowProcessor.singleStage(SlidingWindowPolicy(4, 2), (e: Ev) => e.key, (e: Ev) => e.ts,
      TestOps.counting[Ev](false))
    val (first, second) = (new Driver(newProcessor(), instance = 0), new Driver(newProcessor(), instance = 1))
    first.process(Ev(1, "a"), Ev(3, "a"))
    second.process(Ev(2, "b"))
    assert(first.run(_.tryProcessWatermark(wm(3))) == Seq(KeyedWindowResult(-2, 2, "a", 1L), wm(3)))
    assert(second.run(_.tryProcessWatermark(wm(3))) == Seq(wm(3)))
    first.process(Ev(1, "a"))
    second.process(Ev(0, "b"), Ev(5, "b"))
    val restored = new Driver(newProcessor())
    restored.restore(first.snapshot() ++ second.snapshot())
    assert(restored.processor.lateEventsDropped == 2)
    restored.process(Ev(1, "b")) // still late after the restore: the watermark was restored too
    val out = restored.run(_.complete())
    assert(out.toSet == Set(KeyedWindowResult(0, 4, "a", 2L), KeyedWindowResult(2, 6, "a", 1L),
      KeyedWindowResult(0, 4, "b", 1L), KeyedWindowResult(2, 6, "b", 2L), KeyedWindowResult(4, 8, "b", 1L)) && out.size == 5)
    assert(restored.processor.lateEventsDropped == 3 && restored.processor.keysWithState == 0)
  }

  /*  sliding(F, 1) for F = 10 and 500 frames per window, max without deduct
   *  events: one per frame, 0 .. 1999;  a watermark after every frame
   *  the combines per slide step stay bounded by a constant, whatever F
   */
  test("without deduct, sliding costs a bounded number of combines per step, whatever the frames per window") {
    def combinesPerStep(framesPerWindow: Int): Double = {
      var combines = 0L
      val max = TestOps.max[Ev](_.value)
      val countingCombines = new TestOps.TestOp[Ev, TestOps.LongAcc, Long](
        () => max.create(), (a, t) => max.accumulate(a, t),
        (a, b) => { combines += 1; max.combineFn.get(a, b) }, None, max.exportResult)
      val d = new Driver(SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(framesPerWindow, 1), (e: Ev) => e.ts, countingCombines))
      val steps = 2000
      for (t <- 0 until steps) {
        d.process(Ev(t, value = (t * 7919) % 1000))
        d.run(_.tryProcessWatermark(wm(t + 1)))
      }
      combines.toDouble / steps
    }
    val (few, many) = (combinesPerStep(10), combinesPerStep(500))
    assert(many <= 6.0, s"$many combines per step with 500 frames per window")
    assert(many <= few * 1.5 + 0.5, s"$few combines per step with 10 frames, $many with 500")
  }

  test("an operation without combineFn is refused with a message that says why") {
    val noCombine = TestOps.withoutCombine[Ev]
    val ex = intercept[IllegalArgumentException](SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(2, 1), (e: Ev) => e.ts, noCombine))
    assert(ex.getMessage.contains("combineFn"))
  }

  /*  tumbling(2), summing without combineFn, keys a and b
   *  events    a@0 (1)  b@-1 (20)  a@1 (2)  b@1 (10) | wm 2 | a@5 (4)
   *  wm 2      -> b [-2,0)=20, a [0,2)=3, b [0,2)=10, then wm 2
   *  complete  -> a [4,6)=4
   */
  test("a tumbling window needs no combineFn (Jet's rule): each window is its one frame, accumulated") {
    val sum = TestOps.summingWithoutCombine[Ev](_.value)
    val input = Seq(Ev(0, "a", 1), Ev(-1, "b", 20), Ev(1, "a", 2), Ev(1, "b", 10), wm(2), Ev(5, "a", 4))
    val expected = Seq(KeyedWindowResult(-2, 0, "b", 20L), KeyedWindowResult(0, 2, "a", 3L), KeyedWindowResult(0, 2, "b", 10L),
      wm(2), KeyedWindowResult(4, 6, "a", 4L))
    runWindows(SlidingWindowPolicy(2, 2), sum, keyed = true, twoStage = false, Seq(input), expected, Seq(0L))
    // Early results show a window's one frame, left as it is.
    var now = 0L
    val d = new Driver(SlidingWindowProcessor.singleStageNonKeyed(SlidingWindowPolicy(2, 2), (e: Ev) => e.ts, sum,
      earlyResultsPeriodMs = 10, clock = () => now))
    d.process(Ev(0, value = 1), Ev(3, value = 5), Ev(1, value = 2))
    now = 10
    assert(d.run(_.tryProcess()) == Seq(WindowResult(0, 2, 3L, isEarly = true), WindowResult(2, 4, 5L, isEarly = true)))
    assert(d.run(_.complete()) == Seq(w(0, 2, 3), w(2, 4, 5)))
    // Frames that cross a shuffle are combined at the other end: two stages still need combineFn.
    intercept[IllegalArgumentException](SlidingWindowProcessor.accumulateFrames(SlidingWindowPolicy(2, 2), (e: Ev) => e.key,
      (e: Ev) => e.ts, sum))
  }

  // ---- randomized, against a brute-force reference --------------------------------------------------------

  /** Brute force: keeps every accepted event; at each watermark recomputes every window that the
    * watermark completes from scratch. An event is late when a watermark before it completed its frame.
    * `result` receives a window's events ordered by frame, in arrival order within a frame.
    */
  private def reference(size: Long, slide: Long, keyed: Boolean, items: Seq[Any], result: Seq[Ev] => Any): (Seq[Any], Long) = {
    def frameEnd(ts: Long) = Math.floorDiv(ts, slide) * slide + slide
    val accepted = Vector.newBuilder[Ev]
    var closed: Option[Long] = None
    var late = 0L
    val out = Vector.newBuilder[Any]
    def closeTo(newClosed: Long): Unit = {
      val evs = accepted.result()
      if (evs.nonEmpty) {
        val first = evs.map(e => frameEnd(e.ts)).min
        val last = evs.map(e => frameEnd(e.ts)).max + size - slide
        var end = math.max(first, closed.fold(first)(_ + slide))
        while (end <= math.min(newClosed, last)) {
          for ((key, keyEvs) <- evs.groupBy(e => if (keyed) e.key else "")) {
            val in = keyEvs.filter(e => e.ts >= end - size && e.ts < end).sortBy(e => frameEnd(e.ts))
            if (in.nonEmpty)
              out += (if (keyed) KeyedWindowResult(end - size, end, key, result(in)) else WindowResult(end - size, end, result(in)))
          }
          end += slide
        }
      }
      closed = Some(newClosed)
    }
    items.foreach {
      case ev: Ev => if (closed.exists(frameEnd(ev.ts) <= _)) late += 1 else accepted += ev
      case w: Watermark =>
        val c = Math.floorDiv(w.timestamp, slide) * slide
        if (closed.forall(c > _)) closeTo(c)
        out += w
      case other => fail(s"not an event or a watermark: $other")
    }
    closeTo(Long.MaxValue / 2)
    (out.result(), late)
  }

  private def lateIn(size: Long, slide: Long, items: Seq[Any]): Long = reference(size, slide, keyed = false, items, _.size)._2

  private sealed abstract class RandomOp(val name: String, val result: Seq[Ev] => Any) {
    def run(policy: SlidingWindowPolicy, keyed: Boolean, twoStage: Boolean, partitions: Seq[Seq[Any]],
            expected: Seq[Any], late: Seq[Long]): Unit
  }
  private final class RandomOpOf[A, R](name: String, op: AggregateOperation[Ev, A, R], result: Seq[Ev] => Any, orderMatters: Boolean)
      extends RandomOp(name, result) {
    override def run(policy: SlidingWindowPolicy, keyed: Boolean, twoStage: Boolean, partitions: Seq[Seq[Any]],
                     expected: Seq[Any], late: Seq[Long]): Unit =
      runWindows(policy, op, keyed, twoStage, partitions, expected, late,
        if (orderMatters && !twoStage) asIs else sortListResults)
  }
  private val randomOps: Seq[RandomOp] = Seq(
    new RandomOpOf("counting with deduct", TestOps.counting[Ev](true), _.size.toLong, orderMatters = false),
    new RandomOpOf("counting without deduct", TestOps.counting[Ev](false), _.size.toLong, orderMatters = false),
    new RandomOpOf("summing with deduct", TestOps.summing[Ev](_.value, true), _.map(_.value).sum, orderMatters = false),
    new RandomOpOf("max", TestOps.max[Ev](_.value), _.map(_.value).max, orderMatters = false),
    new RandomOpOf("to-list", TestOps.toList[Ev], _.toList, orderMatters = true),
  )

  private def randomized(twoStage: Boolean, trials: Int): Unit = {
    val seed = TestSeed.base
    val rnd = new Random(seed)
    for (trial <- 1 to trials) {
      val slide = 1L + rnd.nextInt(5)
      val size = slide * (1 + rnd.nextInt(6))
      val keyed = rnd.nextBoolean()
      val op = randomOps(rnd.nextInt(randomOps.size))
      val items = randomEventsAndWatermarks(rnd, if (keyed) Seq("a", "b", "c") else Seq("a"))
      val partitions = if (twoStage) partition(rnd, items, 2) else Seq(items)
      val (expected, _) = reference(size, slide, keyed, items, op.result)
      withClue(s"seed $seed, trial $trial: sliding($size, $slide), ${op.name}, keyed=$keyed, twoStage=$twoStage, input ${partitions.mkString(" | ")}\n") {
        op.run(SlidingWindowPolicy(size, slide), keyed, twoStage, partitions, expected, partitions.map(lateIn(size, slide, _)))
      }
    }
  }

  test("randomized single stage: the windows and late events of a brute-force reference") {
    randomized(twoStage = false, trials = 60)
  }

  test("randomized two stages over two upstream instances: the windows and late events of a brute-force reference") {
    randomized(twoStage = true, trials = 30)
  }
}
