package io.jetspark.pipeline

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError, WindowDefinition}
import io.jetspark.pipeline.transform._

/** A stage of finite data. */
final class BatchStage private[pipeline] (pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance)
    extends GeneralStage[BatchStage](pipeline, transform, pendingRebalance) {

  private[pipeline] def this(pipeline: Pipeline, transform: Transform) = this(pipeline, transform, Rebalance.None)

  override protected def stageOf(t: Transform, rebalance: Rebalance): BatchStage = new BatchStage(pipeline, t, rebalance)
  private def attach(t: Transform): BatchStage = new BatchStage(pipeline, pipeline.add(t))

  def groupingKey(key: Extractor): BatchStageWithKey = new BatchStageWithKey(pipeline, transform, pendingRebalance, key)
  def groupingKey(field: String): BatchStageWithKey = groupingKey(Extractor.FieldName(field))
  def groupingKey(fn: Any => Any): BatchStageWithKey = groupingKey(Extractor.ScalaFn(fn))

  /** One item: the result of `op` over every item. */
  def aggregate(op: AggregateOperation[_, _, _]): BatchStage =
    attach(new AggregateTransform(Seq(transform), Seq(pendingRebalance), Seq(op), Nil))

  /** One item, `(result0, result1)`: `op0` over this stage's items and `op1` over `other`'s. */
  def aggregate2(other: BatchStage, op0: AggregateOperation[_, _, _], op1: AggregateOperation[_, _, _]): BatchStage = {
    requireSamePipeline(other)
    attach(new AggregateTransform(Seq(transform, other.transform), Seq(pendingRebalance, other.pendingRebalance), Seq(op0, op1), Nil))
  }

  /** Each distinct item once. */
  def distinct(): BatchStage = attach(new DistinctTransform(transform, pendingRebalance, Extractor.WholeItem))

  /** Every item, ordered by `key` (ascending unless `reverse`). */
  def sort(key: Extractor, reverse: Boolean): BatchStage = attach(new SortTransform(transform, pendingRebalance, Some(key), reverse))
  def sort(key: Extractor): BatchStage = sort(key, reverse = false)
  /** Every item, ordered by the item itself. */
  def sort(): BatchStage = attach(new SortTransform(transform, pendingRebalance, None, reverse = false))
  def sort(reverse: Boolean): BatchStage = attach(new SortTransform(transform, pendingRebalance, None, reverse))

  /** The same items with event time `timestamp(item)` in ms (Jet's `addTimestamps`), as a stream stage
    * on which windows are defined. The batch stays one epoch: nothing is late, every window is emitted,
    * and `allowedLagMs` has no effect (see [[transform.AddTimestampsTransform]]).
    */
  def addTimestamps(timestamp: Extractor, allowedLagMs: Long): StreamStage =
    new StreamStage(pipeline, pipeline.add(new AddTimestampsTransform(transform, pendingRebalance, timestamp, allowedLagMs)))
  def addTimestamps(field: String, allowedLagMs: Long): StreamStage = addTimestamps(Extractor.FieldName(field), allowedLagMs)
  def addTimestamps(timestamp: Any => Any, allowedLagMs: Long): StreamStage = addTimestamps(Extractor.ScalaFn(timestamp), allowedLagMs)

  /** Always fails: batch items carry no event timestamps until `addTimestamps`. Present so that callers
    * who reach for it (through py4j, where types are not checked) get the rule instead of a missing method.
    */
  def window(w: WindowDefinition): Nothing =
    throw new PipelineDefinitionError(transform.name, PipelineDefinitionError.WindowNeedsTimestamps,
      s"window ${w.describe} needs event timestamps, and a batch stage has none; call addTimestamps(ts, allowedLagMs) first")
}

/** A batch stage grouped by a key: aggregations and state per key. A key's items keep encounter order. */
final class BatchStageWithKey private[pipeline] (pipeline: Pipeline, transform: Transform, pendingRebalance: Rebalance, key: Extractor)
    extends GeneralStageWithKey[BatchStage](pipeline, transform, pendingRebalance, key) {

  override protected def stageOf(t: Transform): BatchStage = new BatchStage(pipeline, t)

  /** Items `(key, result)`. */
  def aggregate(op: AggregateOperation[_, _, _]): BatchStage =
    stageOf(pipeline.add(new AggregateTransform(Seq(transform), Seq(pendingRebalance), Seq(op), Seq(key))))

  /** Items `(key, (result0, result1))`, co-grouping this stage with `other` by their keys. */
  def aggregate2(other: BatchStageWithKey, op0: AggregateOperation[_, _, _], op1: AggregateOperation[_, _, _]): BatchStage = {
    requireSamePipeline(other)
    stageOf(pipeline.add(new AggregateTransform(
      Seq(transform, other.transform), Seq(pendingRebalance, other.pendingRebalance), Seq(op0, op1), Seq(key, other.key))))
  }

  /** The first item of each key. */
  def distinct(): BatchStage = stageOf(pipeline.add(new DistinctTransform(transform, pendingRebalance, key)))
}
