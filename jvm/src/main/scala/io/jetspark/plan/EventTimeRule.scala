package io.jetspark.plan

import io.jetspark.pipeline.PipelineDefinitionError
import io.jetspark.pipeline.transform._

/** Which stages carry their items' timestamps to a window (Jet's `JetEvent`).
  *
  * An item gets its timestamp where it is stamped: `addTimestamps` reads it from the item with its
  * extractor (once), a stream source with its timestamp policy, and a window gives each result its
  * window's end. From there the timestamp travels beside the item: a map, filter, flatMap or peek gives
  * every output the timestamp of the input item it came from, whatever the output is, and a merge or a
  * rebalance passes items on with theirs. A window downstream reads that carried time, not the item it
  * receives.
  *
  * {{{
  *   items --> addTimestamps("ts") --> map(drop ts) --> flatMap --> window   each output keeps its input's ts
  *   items --> addTimestamps("ts") --> mapStateful ----------------> window   definition error, naming mapStateful
  * }}}
  * Jet carries the time through its stateful stages too (mapStateful, rollingAggregate and a hash join
  * keep the input item's timestamp); jetspark does not yet, so a window after one of them is a definition
  * error naming that stage. Stages that make new items out of many (aggregations, distinct, sort) have
  * no single input item whose time to keep; Jet offers them on batch stages only, before timestamps.
  */
private[plan] object EventTimeRule {

  /** A window whose items were stamped must receive them through stages that carry their timestamps. */
  def requireCarried(t: Transform): Unit = t match {
    case w: WindowAggregateTransform if stampedBy(w.upstream.head).nonEmpty =>
      firstNotCarrying(w.upstream.head).foreach { stage =>
        throw new PipelineDefinitionError(w.name, PipelineDefinitionError.WindowTimestampsFromItems,
          s"the window reads the timestamp each item was given (by addTimestamps, a stream source or a window), carried " +
            s"through map, filter, flatMap, peek, merge and rebalance; the items of '${stage.name}' (${stage.describe}) " +
            "carry none: stamp the items after that stage (in a batch pipeline, move it before addTimestamps)")
      }
    case _ =>
  }

  /** The nearest stage upstream of (or at) `t` whose items reach `t` without a timestamp, if any. */
  private def firstNotCarrying(t: Transform): Option[Transform] = t match {
    case _: AddTimestampsTransform | _: WindowAggregateTransform | _: StreamSourceTransform => None
    case _: StatelessTransform | _: MergeTransform =>
      t.upstream.iterator.flatMap(firstNotCarrying).nextOption()
    case other => Some(other)
  }

  /** The `addTimestamps` transforms whose items reach `t` (up to the nearest window). */
  private def stampedBy(t: Transform): Seq[AddTimestampsTransform] = t match {
    case a: AddTimestampsTransform => Seq(a)
    case _: WindowAggregateTransform => Nil
    case other => other.upstream.flatMap(stampedBy)
  }
}
