package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.snapshot.JavaSerialization
import io.jetspark.core.window._
import io.jetspark.pipeline.{PythonAggregateSpec, SessionWindowDefinition, SlidingWindowDefinition}
import io.jetspark.plan.VertexDescription.WindowAggregate
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType}

/** Window aggregations of a batch on the Spark engine, with the core's window processors inside the
  * Spark tasks (through [[ProcessorStage]]).
  *
  * A batch is one epoch: no watermark arrives inside it, and its end acts as a final watermark of
  * +infinity (the processors' `complete()`), so no item is late and every non-empty window is emitted
  * once, complete. Early results would be partial results before a watermark, and there is none: a
  * window definition's early-results period is ignored.
  *
  * Where items enter the window (the single stage, or stage 1 of two), one Arrow UDF per input extracts
  * in Python the grouping key, the operation's values and the timestamp (`extract:<vertex>:0`, see
  * [[pythonExtractions]]); rows are then [[SparkBatchEngine.ExtractedSchema]] plus a `ts` column.
  *  - Sliding and tumbling, two stages: `accumulateFrames` emits one partial accumulator per (key, frame),
  *    Java-serialized, which cross the shuffle by key (or to one partition) to `combineFrames`.
  *  - Sliding and tumbling, single stage (an operation that cannot combine is refused by the processor
  *    anyway; order-sensitive operations under preserved order, rebalanced keyed input, early results):
  *    events cross the shuffle and one processor per partition builds the windows.
  *  - Sessions: always single stage (sessions merge across partial results).
  * Results leave as pickles of `jetspark.window.WindowResult` / `KeyedWindowResult` (see [[PythonValues]]),
  * one per window: frames never reach Python.
  */
object WindowStages {
  val Ts = "ts"
  /** An extraction at a window's input: key, values, item, then the item's timestamp in ms. */
  val TimedSchema: StructType = StructType(SparkBatchEngine.ExtractedSchema.fields :+ StructField(Ts, LongType, nullable = false))
  /** A partial frame on its way from stage 1 to stage 2 (the key empty for a global window). */
  val FrameSchema: StructType = StructType(Seq(StructField(SparkBatchEngine.Key, BinaryType), StructField("frame_end", LongType),
    StructField("acc", BinaryType)))

  /** Fails, naming the vertex, for what this engine cannot run: an operation not from
    * `AggregateOperations`, or items whose timestamps it cannot read.
    */
  def requireSupported(vertex: String, w: WindowAggregate): Unit = {
    if (!w.op.isInstanceOf[PythonAggregateSpec])
      throw new UnsupportedOperationException(s"vertex '$vertex' (${w.describe}): the Spark batch engine runs the " +
        "Python AggregateOperations only")
    if (w.timestamp.isEmpty)
      throw new UnsupportedOperationException(s"vertex '$vertex' (${w.describe}): its items carry no timestamp the " +
        "Spark batch engine can read; give them timestamps with add_timestamps(ts)")
  }

  /** The window vertices where items enter, with what Python extracts from each item of input 0: the
    * grouping key (None: a global window), the operation's values in slot order and the timestamp.
    */
  def pythonExtractions(dag: PhysicalDag): Seq[(Vertex, Option[JsonNode], Seq[JsonNode], JsonNode)] = dag.vertices.collect {
    case v @ Vertex(_, w @ WindowAggregate(stage, _, op: PythonAggregateSpec, key, Some(timestamp)), _, _, _)
        if stage != AggregationStage.Combine =>
      (v, key.map(SparkBatchEngine.extractorJson), PythonAggregations.bind(op.json).extractors, SparkBatchEngine.extractorJson(timestamp))
  }

  /** The processors of window vertex `vertex`, with how rows become their items and back. */
  def stage(vertex: String, w: WindowAggregate, op: AggregateOperation[Extracted, Any, Any]): ProcessorStage = {
    val keyed = w.key.isDefined
    val events = new OverTimedEvents(op)
    val keyOf: TimedEvent => Any = if (keyed) _.event.key else _ => NonKeyed
    val tsOf: TimedEvent => Long = _.ts
    (w.window, w.stage) match {
      case (s: SlidingWindowDefinition, AggregationStage.SingleStage) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        ProcessorStage(vertex, () =>
          if (keyed) SlidingWindowProcessor.singleStage(policy, keyOf, tsOf, events)
          else SlidingWindowProcessor.singleStageNonKeyed(policy, tsOf, events), timedEvent, resultRow, SparkBatchEngine.ItemSchema)
      case (s: SlidingWindowDefinition, AggregationStage.Accumulate) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        ProcessorStage(vertex, () => SlidingWindowProcessor.accumulateFrames(policy, keyOf, tsOf, events), timedEvent, frameRow, FrameSchema)
      case (s: SlidingWindowDefinition, AggregationStage.Combine) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        val frames = op.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        ProcessorStage(vertex, () => SlidingWindowProcessor.combineFrames(policy, frames, keyed), frameOf(keyed), resultRow,
          SparkBatchEngine.ItemSchema)
      case (s: SessionWindowDefinition, AggregationStage.SingleStage) =>
        ProcessorStage(vertex, () => new SessionWindowProcessor(s.timeoutMs, keyOf, tsOf, events), timedEvent, resultRow,
          SparkBatchEngine.ItemSchema)
      case (other, stage) => throw new IllegalStateException(s"vertex '$vertex': no ${stage.describe} for ${other.describe}")
    }
  }

  private val timedEvent: InternalRow => TimedEvent = {
    val extracted = SparkBatchEngine.extractedAt(0)
    row => new TimedEvent(row.getLong(3), extracted(row))
  }

  private val frameRow: Any => InternalRow = f => {
    val frame = f.asInstanceOf[KeyedFrame[Any, Any]]
    val key = frame.key match {
      case k: PickledKey => k.bytes
      case _ => Array.emptyByteArray // NonKeyed
    }
    InternalRow(key, frame.frameEnd, JavaSerialization.toBytes(frame.acc))
  }

  private def frameOf(keyed: Boolean): InternalRow => Any = row =>
    KeyedFrame(row.getLong(1), if (keyed) new PickledKey(row.getBinary(0)) else NonKeyed, JavaSerialization.fromBytes(row.getBinary(2)))

  /** A result as the row of its pickle. The session processor reports a global session under the key
    * [[NonKeyed]]; it leaves as the `WindowResult` a global window gives.
    */
  private val resultRow: Any => InternalRow = r => InternalRow(PythonValues.dumps(r match {
    case KeyedWindowResult(start, end, NonKeyed, result, isEarly) => WindowResult(start, end, result, isEarly)
    case other => other
  }))
}

/** An item entering a window: what Python extracted from it, and its timestamp. */
private[spark] final class TimedEvent(val ts: Long, val event: Extracted) extends Serializable

/** `op`, accumulating the extraction of each timed event. */
private[spark] final class OverTimedEvents[A, R](op: AggregateOperation[Extracted, A, R]) extends AggregateOperation[TimedEvent, A, R] {
  override def arity: Int = op.arity
  override def create(): A = op.create()
  override def accumulate(acc: A, ordinal: Int, item: TimedEvent): A = op.accumulate(acc, ordinal, item.event)
  override def combineFn: Option[(A, A) => A] = op.combineFn
  override def deductFn: Option[(A, A) => A] = op.deductFn
  override def exportResult(acc: A): R = op.exportResult(acc)
  override def finishResult(acc: A): R = op.finishResult(acc)
  override def isOrderSensitive: Boolean = op.isOrderSensitive
  override def toString: String = op.toString
}
