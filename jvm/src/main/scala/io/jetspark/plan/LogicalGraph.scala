package io.jetspark.plan

import io.jetspark.pipeline.Pipeline
import io.jetspark.pipeline.transform.Transform

/** The pipeline's transforms with their downstream links, computed once for the planning rules. */
private[plan] final class LogicalGraph(val pipeline: Pipeline) {
  /** In creation order, which is topological. */
  val transforms: Seq[Transform] = pipeline.transforms

  private val downstreamById: Map[Int, Seq[(Transform, Int)]] = transforms.map(t => t.id -> pipeline.downstream(t)).toMap

  /** The transforms reading `t`, each with the input ordinal it reads `t` at. */
  def downstream(t: Transform): Seq[(Transform, Int)] = downstreamById(t.id)

  def preserveOrder: Boolean = pipeline.preserveOrder
}
