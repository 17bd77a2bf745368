package io.jetspark.plan

import io.jetspark.pipeline.transform.{AggregatingTransform, StreamSourceTransform, Transform, WindowAggregateTransform}

/** One or two stages for an aggregation.
  *
  * Two stages by default: accumulate next to the data (local input edge), then send partial accumulators
  * over one distributed edge (partitioned by the grouping key, or all-to-one) to a combining vertex.
  * Single stage, raw items over the distributed edge, when:
  *  - an operation cannot combine partial accumulators;
  *  - it is a session window (sessions merge by event time across partial results) or a window with
  *    early results (a partial frame would be reported as if complete);
  *  - a keyed aggregation's input, or either input of a two-input aggregation, is rebalanced (design doc
  *    008: the local first stage is what rebalancing removes). A global single-input aggregation keeps
  *    two stages: rebalancing spreads the accumulation, and the combining stage is one processor anyway;
  *  - preserved order reaches an order-sensitive operation (to-list): partial lists from several
  *    processors would be concatenated in no particular order;
  *  - a window over a stream routes its failures to a dead-letter sink: its late events are dead letters,
  *    each the record that came late, and only a stage that takes the events themselves has them (a
  *    second stage takes frames);
  *  - a window over a stream has an operation with foreign functions (a user-defined part in Python): that
  *    runtime keeps its windows from one epoch to the next as one stateful stage (docs/streaming.md), so
  *    the events go to it whole.
  */
private[plan] object AggregationStageRule {

  sealed trait Stages
  case object TwoStage extends Stages
  case object SingleStage extends Stages

  def decide(t: AggregatingTransform, order: OrderAnalysis): Stages = {
    val rebalanced = t.upstream.indices.exists(t.isRebalanced)
    val window = t match {
      case w: WindowAggregateTransform => Some(w)
      case _ => None
    }
    val singleStage =
      !t.canCombine ||
        window.exists(w => w.isSession || w.window.earlyResultsPeriodMs > 0 ||
          (readsStream(w) && (w.errorSink.isDefined || w.ops.exists(_.hasForeignFunctions)))) ||
        (rebalanced && (t.isKeyed || t.upstream.size > 1)) ||
        t.upstream.indices.exists(order.isRequired(t, _))
    if (singleStage) SingleStage else TwoStage
  }

  /** Whether a stream source is upstream of `t`. */
  private def readsStream(t: Transform): Boolean = t match {
    case _: StreamSourceTransform => true
    case other => other.upstream.exists(readsStream)
  }

  /** The edge input `ordinal` of the aggregation's first vertex needs, before rebalancing. */
  def inputEdge(t: AggregatingTransform, ordinal: Int, stages: Stages): EdgeKind = stages match {
    case TwoStage => EdgeKind.Local
    case SingleStage => t.groupingKey(ordinal).fold[EdgeKind](EdgeKind.AllToOne)(EdgeKind.Partitioned(_))
  }

  /** The edge from the accumulating to the combining vertex. */
  def betweenStages(t: AggregatingTransform): EdgeKind =
    t.keys.headOption.fold[EdgeKind](EdgeKind.AllToOne)(EdgeKind.Partitioned(_, preExtracted = true))
}
