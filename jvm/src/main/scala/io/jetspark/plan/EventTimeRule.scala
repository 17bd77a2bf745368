package io.jetspark.plan

import io.jetspark.pipeline.definition.PipelineDefinitionError
import io.jetspark.pipeline.transform._

/** Which stages carry their items' timestamps to a window (Jet's `JetEvent`).
  *
  * An item gets its timestamp where it is stamped: `addTimestamps` reads it from the item with its
  * extractor (once), a stream source with its timestamp policy, and a window gives each result its
  * window's last instant, `end - 1` (Jet's rule, [[io.jetspark.pipeline.definition.Extractor.WindowResultTime]]).
  * From there the timestamp travels beside the item: a map, filter, flatMap or peek gives every output
  * the timestamp of the input item it came from, whatever the output is, and a merge or a rebalance
  * passes items on with theirs. So do Jet's stateful stages (its `JetEventFunctionAdapter`): mapStateful
  * and rollingAggregate give what they emit for an item that item's timestamp, and a hash
  * join gives every output for a streamed (left) item that item's timestamp; the enriching sides'
  * timestamps are not used. A window downstream reads that carried time, not the item it receives.
  *
  * {{{
  *   items --> addTimestamps("ts") --> map(drop ts) --> mapStateful --> window   each output keeps its input's ts
  *   items --> addTimestamps("ts") --> hashJoin(enriching) -----------> window   each output keeps its left item's ts
  *   items --> addTimestamps("ts") --> distinct ----------------------> window   definition error, naming distinct
  * }}}
  * Stages that make new items out of many (aggregations, distinct, sort) have no single input item whose
  * time to keep; Jet offers them on batch stages only, before timestamps, so a window after one of them
  * is a definition error naming that stage.
  */
private[plan] object EventTimeRule {

  /** A window whose items were stamped must receive them through stages that carry their timestamps. */
  def requireCarried(t: Transform): Unit = t match {
    case w: WindowAggregateTransform if stampedBy(w.upstream.head).nonEmpty =>
      firstNotCarrying(w.upstream.head).foreach { stage =>
        throw new PipelineDefinitionError(w.name, PipelineDefinitionError.WindowTimestampsFromItems,
          s"the window reads the timestamp each item was given (by addTimestamps, a stream source or a window), carried " +
            s"through map, filter, flatMap, peek, merge, rebalance, mapStateful, rollingAggregate and the streamed side of a " +
            s"hash join; the items of '${stage.name}' (${stage.describe}) " +
            "carry none: stamp the items after that stage (in a batch pipeline, move it before addTimestamps)")
      }
    case _ =>
  }

  /** The nearest stage upstream of (or at) `t` whose items reach `t` without a timestamp, if any. */
  private def firstNotCarrying(t: Transform): Option[Transform] = t match {
    case _: AddTimestampsTransform | _: WindowAggregateTransform | _: StreamSourceTransform => None
    case _: StatelessTransform | _: MergeTransform | _: StatefulTransform =>
      t.upstream.iterator.flatMap(firstNotCarrying).nextOption()
    case _: HashJoinTransform => firstNotCarrying(t.upstream.head) // only the streamed item's time is kept
    case other => Some(other)
  }

  /** The `addTimestamps` transforms whose items reach `t` (up to the nearest window). */
  private def stampedBy(t: Transform): Seq[AddTimestampsTransform] = t match {
    case a: AddTimestampsTransform => Seq(a)
    case _: WindowAggregateTransform => Nil
    case _: HashJoinTransform => stampedBy(t.upstream.head) // the enriching sides' times are not used
    case other => other.upstream.flatMap(stampedBy)
  }
}
