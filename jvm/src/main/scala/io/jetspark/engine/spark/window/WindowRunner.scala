package io.jetspark.engine.spark.window

import io.jetspark.core.Watermark
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.window._
import io.jetspark.engine.spark.rows.{ExtractedRows, PartialCodec, ProcessorStage, RowSchemas}
import io.jetspark.item.{Extracted, PickledKey, PythonValues}
import io.jetspark.pipeline.definition.{SessionWindowDefinition, SlidingWindowDefinition}
import io.jetspark.plan.VertexDescription.WindowAggregate
import io.jetspark.plan.AggregationStage
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** Window aggregations of a batch on the Spark engine, with the core's window processors inside the
  * Spark tasks (through [[rows.ProcessorStage]]), for operations without a user-defined part: an operation
  * with an `AggregateOperation.of` among its parts runs in Python, window and all ([[runner.CustomAggregations]]),
  * in the same stages as here and on the same rows.
  *
  * A batch is one epoch: no watermark arrives inside it, and its end acts as a final watermark of
  * +infinity (the processors' `complete()`), so no item is late and every non-empty window is emitted
  * once, complete. Early results would be partial results before a watermark, and there is none: a
  * window definition's early-results period is ignored.
  *
  * Where items enter the window (the single stage, or stage 1 of two), one Arrow UDF per input extracts
  * in Python the grouping key and the operation's values (`extract:<vertex>:0`, see
  * [[PythonWork.pythonExtractions]]) and passes on the time each item carries ([[CarriedTimestamps]]);
  * rows are then [[rows.RowSchemas.ExtractedSchema]] plus a `ts` column.
  *  - Sliding and tumbling, two stages: `accumulateFrames` emits one partial accumulator per (key, frame);
  *    a key's frames cross the shuffle by key (or to one partition) as one row, serialized together,
  *    to `combineFrames`. Over a DataFrame's rows, counting and picking by an integer keep their frames
  *    as columns instead ([[ColumnarFrames]]), in the same two stages.
  *  - Sliding and tumbling, single stage (order-sensitive operations under preserved order, rebalanced
  *    keyed input, early results; the built-in operations all combine):
  *    events cross the shuffle and one processor per partition builds the windows.
  *  - Sessions: always single stage (sessions merge across partial results).
  * After a partition's last item, sliding windows see watermarks rising in steps before the end, so that
  * their results are produced a slice at a time, not all at once (see [[thenRisingWatermarks]]).
  * Results leave as pickles of `jetspark.window.WindowResult` / `KeyedWindowResult` (see [[PythonValues]]),
  * one per window: frames never reach Python.
  */
object WindowRunner {
  import RowSchemas.FramesSchema
  /** The output of window vertex `vertex` over `input` on its `path` ([[WindowPlanner]]): its processors,
    * with how rows become their items and back (Python's extraction, or a DataFrame's rows read in the JVM:
    * [[TypedWindow.events]]), and how a result's items become what Python reads ([[TypedWindow.rowItems]]),
    * or its columnar frames. Where no reader takes the results (`unread`: noop sinks only), each is
    * computed and left as an empty row, as Spark's noop format drops rows, instead of being pickled for Python.
    * Where frames are columnar, that stage counts into `countedByColumnar`: the first the rows it reads
    * (the items of the vertices before it), the second the windows it makes (the window's own items).
    */
  def run(vertex: String, w: WindowAggregate, path: WindowPath, op: AggregateOperation[Extracted, Any, Any], input: DataFrame,
      unread: Boolean, countedByColumnar: Seq[LongAccumulator]): DataFrame = {
    val (timedEvent, resultItems) = path match {
      case WindowPath.CoreOnItems => (pythonTimedEvent, identity[Any] _)
      case WindowPath.CoreOnRows(typed) => (typed.events, typed.rowItems)
      case WindowPath.Columnar(typed, frames) => (typed.events, frames.resultItems)
      case WindowPath.UserDefined =>
        throw new IllegalStateException(s"vertex '$vertex': its operation has a user-defined part, which runs in Python")
    }
    val keyed = w.key.isDefined
    val resultRow: Any => InternalRow = if (unread) _ => InternalRow.empty else r => pickledResult(resultItems(r))
    val results: Iterator[Any] => Iterator[InternalRow] = _.filterNot(_.isInstanceOf[Watermark]).map(resultRow)
    val resultSchema = if (unread) StructType(Nil) else RowSchemas.ItemSchema
    val events = AggregateOperations.mapping((e: TimedEvent) => e.event)(op)
    val keyOf: TimedEvent => Any = if (keyed) _.event.key else _ => NonKeyed
    val tsOf: TimedEvent => Long = _.ts
    (w.window, w.stage, path) match {
      case (s: SlidingWindowDefinition, AggregationStage.Accumulate, WindowPath.Columnar(_, frames)) =>
        frames.accumulate(SlidingWindowPolicy(s.sizeMs, s.slideMs), input, countedByColumnar)
      case (s: SlidingWindowDefinition, AggregationStage.Combine, WindowPath.Columnar(_, frames)) =>
        frames.combine(SlidingWindowPolicy(s.sizeMs, s.slideMs), keyed, input, Some(resultRow).filterNot(_ => unread), resultSchema,
          countedByColumnar)
      case (s: SlidingWindowDefinition, AggregationStage.SingleStage, _) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        ProcessorStage.runPacked(vertex, () =>
          if (keyed) SlidingWindowProcessor.singleStage(policy, keyOf, tsOf, events)
          else SlidingWindowProcessor.singleStageNonKeyed(policy, tsOf, events), input, resultSchema)(
          rows => thenRisingWatermarks(rows.map(timedEvent), tsOf, policy), results)
      case (s: SlidingWindowDefinition, AggregationStage.Accumulate, _) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        ProcessorStage.runPacked(vertex, () => SlidingWindowProcessor.accumulateFrames(policy, keyOf, tsOf, events), input,
          FramesSchema)(_.map(timedEvent), packFrames(new PartialCodec(vertex)))
      case (s: SlidingWindowDefinition, AggregationStage.Combine, _) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        val frames = op.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        val unpack = unpackFrames(keyed, new PartialCodec(vertex))
        ProcessorStage.runPacked(vertex, () => SlidingWindowProcessor.combineFrames(policy, frames, keyed), input,
          resultSchema)(rows => thenRisingWatermarks(rows.flatMap(unpack), frameEnd, policy), results)
      case (s: SessionWindowDefinition, AggregationStage.SingleStage, _) =>
        ProcessorStage(vertex, () => new SessionWindowProcessor(s.timeoutMs, keyOf, tsOf, events), timedEvent, resultRow,
          resultSchema).run(input)
      case (other, stage, _) => throw new IllegalStateException(s"vertex '$vertex': no ${stage.describe} for ${other.describe}")
    }
  }

  /** `items`, then watermarks rising in steps to the last window that holds one of them.
    *
    * The batch's end is a watermark of +infinity (the processor's `complete()`), which would emit every
    * window of the partition in one go, all held in memory at once. Nothing arrives after these
    * watermarks, so they make no item late and change no result: they only make the windows come out a
    * slice at a time (at most about 64 slices, each at least 256 slides long, so that sparse times over
    * a long span do not cost a watermark per slide).
    */
  private def thenRisingWatermarks[T](items: Iterator[T], timeOf: T => Long, policy: SlidingWindowPolicy): Iterator[Any] = {
    var low = Long.MaxValue
    var high = Long.MinValue
    val seen = items.map { item =>
      val t = timeOf(item)
      if (t < low) low = t
      if (t > high) high = t
      item
    }
    seen ++ Iterator.single(()).flatMap { _ =>
      if (low > high) Iterator.empty
      else {
        // At or past the end of the last window holding `high` (an event's time or a frame's end), saturated
        // as is the span: the watermarks are only steps, and complete() emits whatever they leave.
        val last = if (high > Long.MaxValue - policy.size) Long.MaxValue else high + policy.size
        val span = if (low < 0 && last > Long.MaxValue + low) Long.MaxValue else last - low
        val slices = math.min(64L, span / policy.slide / 256)
        (1L until slices).iterator.map(i => Watermark(low + span / slices * i))
      }
    }
  }

  private val frameEnd: Any => Long = _.asInstanceOf[KeyedFrame[Any, Any]].frameEnd

  /** An extraction row (key, values, item, ts) from Python as the event a window takes. */
  private[spark] val pythonTimedEvent: InternalRow => TimedEvent = {
    val extracted = ExtractedRows.extractedAt(0)
    row => new TimedEvent(row.getLong(3), extracted(row))
  }

  /** Stage 1's frames (all emitted at the end of the batch) as one [[FramesSchema]] row per key. */
  private[spark] def packFrames(codec: PartialCodec): Iterator[Any] => Iterator[InternalRow] = frames => {
    // Ends in a primitive builder: a boxed Long per frame adds up over hundreds of thousands of frames.
    val byKey = new java.util.LinkedHashMap[Any, (mutable.ArrayBuilder.ofLong, ArrayBuffer[Any])]()
    frames.foreach { f =>
      val frame = f.asInstanceOf[KeyedFrame[Any, Any]]
      val (ends, accs) = byKey.computeIfAbsent(frame.key, _ => (new mutable.ArrayBuilder.ofLong, ArrayBuffer.empty[Any]))
      ends += frame.frameEnd
      accs += frame.acc
    }
    byKey.entrySet().iterator().asScala.map { e =>
      val key = e.getKey match {
        case k: PickledKey => k.bytes
        case _ => Array.emptyByteArray // NonKeyed
      }
      val (ends, accs) = e.getValue
      InternalRow(key, ArrayData.toArrayData(ends.result()), codec.toBytes(accs.toArray))
    }
  }

  private[spark] def unpackFrames(keyed: Boolean, codec: PartialCodec): InternalRow => Iterator[Any] = row => {
    val key = if (keyed) new PickledKey(row.getBinary(0)) else NonKeyed
    val ends = row.getArray(1).toLongArray()
    val accs = codec.fromBytes(row.getBinary(2)).asInstanceOf[Array[Any]]
    Iterator.tabulate(ends.length)(i => KeyedFrame(ends(i), key, accs(i)))
  }

  /** A result as the row of its pickle. The session processor reports a global session under the key
    * [[NonKeyed]]; it leaves as the `WindowResult` a global window gives.
    */
  private val pickledResult: Any => InternalRow = r => InternalRow(resultPickle(r))

  /** A result's pickle (a global session as the `WindowResult` a global window gives). */
  private[spark] def resultPickle(r: Any): Array[Byte] = PythonValues.dumps(r match {
    case KeyedWindowResult(start, end, NonKeyed, result, isEarly) => WindowResult(start, end, result, isEarly)
    case other => other
  })
}
