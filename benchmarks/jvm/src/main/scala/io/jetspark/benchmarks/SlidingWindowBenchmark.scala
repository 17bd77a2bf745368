package io.jetspark.benchmarks

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.window.{FrameQueue, SlidingWindowPolicy, SlidingWindowProcessor}
import io.jetspark.core.{ArrayDequeInbox, BufferedOutbox, ProcessorContext, Watermark}

import java.util.ArrayDeque
import scala.jdk.CollectionConverters._

/** Per-event cost of sliding windows as the number of frames per window grows.
  *
  * Feeds `EventsPerRun` events (`Keys` keys, `EventsPerFrame` events per frame, in time order) into a keyed
  * single-stage [[SlidingWindowProcessor]], with a watermark after every frame, so every key slides one
  * step per frame. For 10, 50, 100 and 500 frames per window it measures, after a warm-up run, the ns per
  * event of (the best of `Repeats` runs, as other processes share the machine; the windows left when the
  * input ends are not timed, so that every size runs the same number of slide steps):
  *  - counting, which deducts (running accumulator);
  *  - max, which cannot deduct (two stacks);
  *  - max recombining every frame of the window at each step, as Jet does: the baseline, run through the
  *    same processor with a different frame queue.
  * It prints the figures and, per strategy, cost(500 frames) / cost(10 frames). Not a test: nothing is
  * asserted. Run: `dev/sbt "benchmarks/runMain io.jetspark.benchmarks.SlidingWindowBenchmark"`.
  */
object SlidingWindowBenchmark {
  private val Keys = 300
  private val EventsPerFrame = 1200 // 4 per key
  private val Repeats = 3
  private val EventsPerRun = 2000000
  private val Slide = 10L
  private val FramesPerWindow = Seq(10, 50, 100, 500)

  final class LongAcc(var value: Long) extends Serializable

  private final class LongOp(identity: Long, add: (Long, Long) => Long, subtract: Option[(Long, Long) => Long], itemValue: Long => Long)
      extends AggregateOperation[Long, LongAcc, Long] {
    override def arity: Int = 1
    override def create(): LongAcc = new LongAcc(identity)
    override def accumulate(acc: LongAcc, ordinal: Int, item: Long): LongAcc = { acc.value = add(acc.value, itemValue(item)); acc }
    override val combineFn: Option[(LongAcc, LongAcc) => LongAcc] = Some((a, b) => { a.value = add(a.value, b.value); a })
    override val deductFn: Option[(LongAcc, LongAcc) => LongAcc] = subtract.map(f => (a: LongAcc, b: LongAcc) => { a.value = f(a.value, b.value); a })
    override def exportResult(acc: LongAcc): Long = acc.value
    override def finishResult(acc: LongAcc): Long = acc.value
  }

  // An event is one Long: its index. Timestamp, key and value derive from it.
  private def tsOf(i: Long): Long = (i / EventsPerFrame) * Slide + (i % Slide)
  private def keyOf(i: Long): Int = (i % Keys).toInt
  private def valueOf(i: Long): Long = (i * 0x9e3779b97f4a7c15L) >>> 40

  private val counting = new LongOp(0, _ + _, Some(_ - _), _ => 1L)
  private val max = new LongOp(Long.MinValue, math.max, None, valueOf)

  /** Jet's strategy for operations without deduct: keep the window's frames and combine all of them
    * for every window emitted.
    */
  private final class RecombiningFrameQueue(op: LongOp) extends FrameQueue[LongAcc] {
    private val held = new ArrayDeque[(Long, LongAcc)]()
    override def isEmpty: Boolean = held.isEmpty
    override def oldestEnd: Long = held.peekFirst()._1
    override def push(frameEnd: Long, acc: LongAcc): Unit = held.addLast((frameEnd, acc))
    override def dropOldest(): Unit = { held.removeFirst(); () }
    override def aggregate: LongAcc = {
      val acc = op.create()
      val combine = op.combineFn.get
      held.forEach(f => combine(acc, f._2))
      acc
    }
    override def frames: Iterator[(Long, LongAcc)] = held.iterator().asScala
  }

  private sealed abstract class Strategy(val name: String) {
    def processor(policy: SlidingWindowPolicy): SlidingWindowProcessor[Long, LongAcc, Long]
  }
  private final class Builtin(name: String, op: LongOp) extends Strategy(name) {
    override def processor(policy: SlidingWindowPolicy) = SlidingWindowProcessor.singleStage(policy, keyOf, tsOf, op)
  }
  private object Recombining extends Strategy("max, recombine all frames (Jet, baseline)") {
    override def processor(policy: SlidingWindowPolicy) =
      new SlidingWindowProcessor[Long, LongAcc, Long](policy, SlidingWindowProcessor.Events(keyOf, tsOf), emitsFrames = false,
        keyed = true, max, 0, () => 0L, () => new RecombiningFrameQueue(max))
  }
  private val strategies = Seq(new Builtin("counting, deduct", counting), new Builtin("max, two stacks", max), Recombining)

  /** Runs `events` events through a fresh processor; returns ns per event up to the last watermark, and
    * the windows emitted by then.
    */
  private def run(strategy: Strategy, framesPerWindow: Int, events: Int): (Double, Long) = {
    val p = strategy.processor(SlidingWindowPolicy(framesPerWindow * Slide, Slide))
    val outbox = new BufferedOutbox(1, Int.MaxValue)
    p.init(outbox, ProcessorContext("benchmark", 0, 1))
    val inbox = new ArrayDequeInbox
    var windows = 0L
    val start = System.nanoTime()
    var i = 0L
    while (i < events) {
      val frameEnd = i + EventsPerFrame
      while (i < frameEnd && i < events) { inbox.add(i); i += 1 }
      p.process(0, inbox)
      p.tryProcessWatermark(Watermark(tsOf(i - 1) / Slide * Slide + Slide))
      windows += outbox.buckets(0).size - 1
      outbox.buckets(0).clear()
    }
    ((System.nanoTime() - start).toDouble / events, windows)
  }

  def main(args: Array[String]): Unit = {
    println(s"sliding windows: $EventsPerRun events, $Keys keys, $EventsPerFrame events per frame, a watermark per frame")
    println(f"${"strategy"}%-44s ${"frames/window"}%13s ${"ns/event"}%9s ${"windows"}%9s")
    for (strategy <- strategies; frames <- FramesPerWindow) run(strategy, frames, EventsPerRun / 4) // warm-up
    val costs = for (strategy <- strategies; frames <- FramesPerWindow) yield {
      val runs = Seq.fill(Repeats)(run(strategy, frames, EventsPerRun))
      val (ns, windows) = runs.minBy(_._1)
      println(f"${strategy.name}%-44s $frames%13d $ns%9.1f $windows%9d")
      (strategy.name, frames) -> ns
    }
    val cost = costs.toMap
    println()
    for (s <- strategies)
      println(f"${s.name}%-44s cost(${FramesPerWindow.last} frames) / cost(${FramesPerWindow.head} frames) = ${cost((s.name, FramesPerWindow.last)) / cost((s.name, FramesPerWindow.head))}%.2f")
    for (frames <- FramesPerWindow)
      println(f"max at $frames%3d frames per window: recombining / two stacks = ${cost((Recombining.name, frames)) / cost(("max, two stacks", frames))}%.2f")
  }
}
