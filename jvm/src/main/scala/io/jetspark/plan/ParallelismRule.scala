package io.jetspark.plan

import scala.collection.mutable

import io.jetspark.pipeline.transform._

/** The parallelism of a transform's first (input) vertex and of its last (output) vertex; they differ
  * only for two-vertex transforms (two-stage aggregation, sort).
  */
private[plan] final case class Parallelism(input: Int, output: Int)

/** How many processors each vertex gets.
  *
  *  - The user's `setLocalParallelism`, else the default; a source with a fixed number of substreams
  *    (items: 1) gets that many.
  *  - One processor where all items must meet: non-keyed state, a global single-stage aggregation, the
  *    combining stage of a global aggregation, the merging stage of a sort, an ordered merge whose
  *    branches are gathered ([[OrderPlanner.gatherMerges]]).
  *  - An input that keeps order over an isolated edge takes the parallelism of its sender (design doc
  *    015: "LP of the stage = LP of the previous stage"); this wins over the user's choice, since order
  *    cannot survive a change of parallelism. A merge takes its widest such input.
  */
private[plan] object ParallelismRule {

  def compute(
      graph: LogicalGraph,
      defaultParallelism: Int,
      order: OrderAnalysis,
      stages: Map[Int, AggregationStageRule.Stages],
      inputEdge: (Transform, Int) => EdgeKind,
  ): Map[Int, Parallelism] = {
    val result = mutable.Map.empty[Int, Parallelism]
    graph.transforms.foreach { t =>
      val chosen = if (t.localParallelism > 0) t.localParallelism else defaultParallelism
      val isolatedSenders = t.upstream.indices
        .filter(i => order.isRequired(t, i) && inputEdge(t, i) == EdgeKind.Local)
        .map(i => result(t.upstream(i).id).output)
      val twoStage = stages.get(t.id).contains(AggregationStageRule.TwoStage)
      val input = t match {
        case s: SourceTransform => if (t.localParallelism > 0) chosen else s.source.substreams.getOrElse(defaultParallelism)
        case s: StatefulTransform if s.key.isEmpty => 1
        case a: AggregatingTransform if !twoStage && !a.isKeyed => 1
        case m: MergeTransform if order.gathers(m) => 1
        case _ if isolatedSenders.nonEmpty => isolatedSenders.max
        case _ => chosen
      }
      val output = t match {
        case a: AggregatingTransform if twoStage => if (a.isKeyed) chosen else 1
        case _: SortTransform => 1
        case _ => input
      }
      result(t.id) = Parallelism(input, output)
    }
    result.toMap
  }
}
