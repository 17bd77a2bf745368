package io.jetspark.engine.spark.epoch

import io.jetspark.core.Processor
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.window._
import io.jetspark.engine.spark.rows.PartialCodec
import io.jetspark.engine.spark.window.{TimedEvent, TypedWindow, WindowRunner}
import io.jetspark.item.{DeadLetter, Extracted}
import io.jetspark.pipeline.definition.{SessionWindowDefinition, SlidingWindowDefinition}
import io.jetspark.plan.AggregationStage
import io.jetspark.plan.VertexDescription.WindowAggregate
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

/** The window stages of a stream's epoch: the core's window processors, as the batch engine runs them on
  * Python items ([[WindowRunner]]), kept from one epoch to the next by [[EpochStage]].
  *
  * Rows: where events enter (the single stage, or stage 1 of two) an extraction (key, values, item, ts,
  * ctl); between the stages one row per key of its frames (key, frame ends, accumulators, ctl); out of the
  * window each result's pickle with its time, `end - 1` (item, ts, ctl). A single-stage window (sliding,
  * tumbling or session) with early results emits them at an epoch's end at most once per period of the epochs' time
  * ([[EpochClock]]); the processor's snapshot keeps when they are next due.
  *
  * A window that routes its failures to a dead-letter sink (single-stage: the planner's
  * `AggregationStageRule`) sends each late event there too, as it comes: its rows out are (item, failure,
  * ts, ctl), a late event's item its [[DeadLetter]] and its failure the stage's name.
  */
object EpochWindows {

  /** The stage of window vertex `vertex`, whose operation the JVM runs as `op`, in the epoch of time
    * `epochTimeMs`. Where no reader takes its results (`unread`: noop sinks only), each leaves as an empty
    * item, counted and dropped, as [[WindowRunner]] leaves them; else as the pickle of its result, whose
    * items `resultItems` makes what Python reads (where they are rows read in the JVM, [[TypedWindow.rowItems]]).
    * `lateLetters`: the stage whose dead letters its late events are, where it routes its failures.
    */
  def stage(vertex: String, w: WindowAggregate, op: AggregateOperation[Extracted, Any, Any], unread: Boolean,
      epochTimeMs: Long, resultItems: Any => Any, lateLetters: Option[String] = None): EpochStage = {
    val keyed = w.key.isDefined
    val events = AggregateOperations.mapping((e: TimedEvent) => e.event)(op)
    val keyOf: TimedEvent => Any = if (keyed) _.event.key else _ => NonKeyed
    val tsOf: TimedEvent => Long = _.ts
    val timedEvents: Iterator[InternalRow] => Iterator[Any] = _.map(WindowRunner.pythonTimedEvent)
    val lateOut = lateLetters.isDefined
    val results: Iterator[Any] => Iterator[InternalRow] = _.map {
      case LateEvent(e: TimedEvent, watermark) =>
        val stage = lateLetters.get
        val letter = DeadLetter(e.event.item, stage,
          s"LateEvent: the event at ${e.ts} came after watermark $watermark of window stage '$stage' had closed its window")
        InternalRow(WindowRunner.resultPickle(letter), UTF8String.fromString(stage), e.ts)
      case r =>
        val end = r match {
          case k: KeyedWindowResult[_, _] => k.end
          case g: WindowResult[_] => g.end
          case other => throw new IllegalStateException(s"vertex '$vertex': a window emitted $other")
        }
        val item = if (unread) Array.emptyByteArray else WindowRunner.resultPickle(resultItems(r))
        if (lateOut) InternalRow(item, null, end - 1) else InternalRow(item, end - 1)
    }
    val width = if (lateOut) 4 else 3
    val slidingLate: Processor => Long = p => p.asInstanceOf[SlidingWindowProcessor[_, _, _]].lateEventsDropped
    (w.window, w.stage) match {
      case (s: SlidingWindowDefinition, AggregationStage.SingleStage) =>
        val (policy, early) = (SlidingWindowPolicy(s.sizeMs, s.slideMs), s.earlyResultsPeriodMs)
        val clock = () => epochTimeMs
        new EpochStage(vertex, () =>
          if (keyed) SlidingWindowProcessor.singleStage(policy, keyOf, tsOf, events, early, clock, lateOut)
          else SlidingWindowProcessor.singleStageNonKeyed(policy, tsOf, events, early, clock, lateOut),
          timedEvents, results, width, slidingLate)
      case (s: SlidingWindowDefinition, AggregationStage.Accumulate) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        new EpochStage(vertex, () => SlidingWindowProcessor.accumulateFrames(policy, keyOf, tsOf, events), timedEvents,
          WindowRunner.packFrames(new PartialCodec(vertex)), 4, slidingLate)
      case (s: SlidingWindowDefinition, AggregationStage.Combine) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        val frames = op.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        val unpack = WindowRunner.unpackFrames(keyed, new PartialCodec(vertex))
        new EpochStage(vertex, () => SlidingWindowProcessor.combineFrames(policy, frames, keyed), _.flatMap(unpack), results, width,
          slidingLate)
      case (s: SessionWindowDefinition, AggregationStage.SingleStage) =>
        val clock = () => epochTimeMs
        new EpochStage(vertex, () => new SessionWindowProcessor(s.timeoutMs, keyOf, tsOf, events, s.earlyResultsPeriodMs, clock,
          lateOut), timedEvents, results, width,
          p => p.asInstanceOf[SessionWindowProcessor[_, _, _, _]].lateEventsDropped)
      case (other, stage) => throw new IllegalStateException(s"vertex '$vertex': no ${stage.describe} for ${other.describe}")
    }
  }
}
