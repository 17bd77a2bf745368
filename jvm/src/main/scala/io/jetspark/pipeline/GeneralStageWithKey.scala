package io.jetspark.pipeline

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.transform._

/** What batch and stream keyed stages share: state per key. The input is partitioned by the grouping
  * key, so a pending `rebalance(...)` changes nothing here (design doc 008).
  */
abstract class GeneralStageWithKey[S] private[pipeline] (
    pipeline: Pipeline,
    transform: Transform,
    private[jetspark] val pendingRebalance: Rebalance,
    val key: Extractor,
) extends StageBase(pipeline, transform) {

  protected def stageOf(t: Transform): S

  /** One state per key: `createFn(null)` gives it, `fn((state, key, item))` returns `(newState, output)`. */
  def mapStateful(createFn: Extractor, fn: Extractor): S =
    stageOf(pipeline.add(new MapStatefulTransform(transform, pendingRebalance, Some(key), createFn, fn)))
  def mapStateful(createFn: () => Any, fn: (Any, Any, Any) => (Any, Any)): S =
    mapStateful(Extractor.ScalaFn(_ => createFn()), Extractor.ScalaFn { args =>
      val (state, k, item) = args.asInstanceOf[(Any, Any, Any)]
      fn(state, k, item)
    })

  /** Items `(key, runningResult)` after each item. */
  def rollingAggregate(op: AggregateOperation[_, _, _]): S =
    stageOf(pipeline.add(new RollingAggregateTransform(transform, pendingRebalance, Some(key), op)))
}
