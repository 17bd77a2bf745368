package io.jetspark.pipeline

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError, SinkDefinition, TimestampPolicy, WindowDefinition}
import io.jetspark.pipeline.transform._

/** A stream source read, before its timestamps are chosen (Jet's rule: a stream source must say how its
  * items get event timestamps, even if the answer is "none").
  */
final class StreamSourceStage private[pipeline] (pipeline: Pipeline, override private[jetspark] val transform: StreamSourceTransform)
    extends StageBase(pipeline, transform) {

  private def choose(policy: TimestampPolicy): StreamStage = {
    transform.timestamps.foreach { chosen =>
      throw new PipelineDefinitionError(transform.name, PipelineDefinitionError.TimestampsAlreadyChosen,
        s"timestamps were already chosen (${chosen.describe})")
    }
    transform.timestamps = Some(policy)
    new StreamStage(pipeline, transform)
  }

  /** Timestamps from `timestamp(item)`; a substream's watermark trails its highest timestamp by `allowedLagMs`. */
  def withTimestamps(timestamp: Extractor, allowedLagMs: Long): StreamStage = choose(TimestampPolicy.FromItems(timestamp, allowedLagMs))
  def withTimestamps(field: String, allowedLagMs: Long): StreamStage = withTimestamps(Extractor.FieldName(field), allowedLagMs)
  def withTimestamps(timestamp: Any => Any, allowedLagMs: Long): StreamStage = withTimestamps(Extractor.ScalaFn(timestamp), allowedLagMs)
  /** The source's own record time (Kafka's timestamp). */
  def withNativeTimestamps(allowedLagMs: Long): StreamStage = choose(TimestampPolicy.Native(allowedLagMs))
  def withIngestionTimestamps(): StreamStage = choose(TimestampPolicy.Ingestion)
  def withoutTimestamps(): StreamStage = choose(TimestampPolicy.NoTimestamps)

  def setLocalParallelism(n: Int): StreamSourceStage = { applyLocalParallelism(n); this }
  def setName(n: String): StreamSourceStage = { applyName(n); this }

  /** Records whose timestamp the source cannot read go, with their errors, to `deadLetterSink` instead of
    * failing the job (as the stream stage's `onError`, which is this stage's once its timestamps are chosen).
    */
  def onError(deadLetterSink: SinkDefinition): StreamSourceStage = { transform.errorSink = Some(deadLetterSink); this }
}

/** A stage of unbounded (or finite streamed) data with event timestamps. */
final class StreamStage private[pipeline] (pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance)
    extends GeneralStage[StreamStage](pipeline, transform, pendingRebalance) {

  private[pipeline] def this(pipeline: Pipeline, transform: Transform) = this(pipeline, transform, Rebalance.None)

  override protected def stageOf(t: Transform, rebalance: Rebalance): StreamStage = new StreamStage(pipeline, t, rebalance)

  def groupingKey(key: Extractor): StreamStageWithKey = new StreamStageWithKey(pipeline, transform, pendingRebalance, key)
  def groupingKey(field: String): StreamStageWithKey = groupingKey(Extractor.FieldName(field))
  def groupingKey(fn: Any => Any): StreamStageWithKey = groupingKey(Extractor.ScalaFn(fn))

  def window(w: WindowDefinition): StageWithWindow = new StageWithWindow(pipeline, transform, pendingRebalance, w)
}

/** A stream stage grouped by a key. */
final class StreamStageWithKey private[pipeline] (pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance, key: Extractor)
    extends GeneralStageWithKey[StreamStage](pipeline, transform, pendingRebalance, key) {

  override protected def stageOf(t: Transform): StreamStage = new StreamStage(pipeline, t)

  def window(w: WindowDefinition): StageWithKeyAndWindow = new StageWithKeyAndWindow(pipeline, transform, pendingRebalance, w, key)
}

/** A stream stage with a window: `aggregate(op)` gives a `WindowResult(start, end, result, isEarly)` per window. */
final class StageWithWindow private[pipeline] (pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance, val window: WindowDefinition)
    extends StageBase(pipeline, transform) {
  def aggregate(op: AggregateOperation[_, _, _]): StreamStage =
    new StreamStage(pipeline, pipeline.add(new WindowAggregateTransform(transform, pendingRebalance, window, op, None)))
}

/** A keyed stream stage with a window: `aggregate(op)` gives a `KeyedWindowResult(start, end, key, result,
  * isEarly)` per window and key.
  */
final class StageWithKeyAndWindow private[pipeline] (
    pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance, val window: WindowDefinition, val key: Extractor)
    extends StageBase(pipeline, transform) {
  def aggregate(op: AggregateOperation[_, _, _]): StreamStage =
    new StreamStage(pipeline, pipeline.add(new WindowAggregateTransform(transform, pendingRebalance, window, op, Some(key))))
}
