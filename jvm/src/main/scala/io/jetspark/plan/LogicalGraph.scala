package io.jetspark.plan

import io.jetspark.pipeline.transform.Transform

/** A pipeline's transforms with their downstream links, computed once for the planning rules.
  * `transforms` are in creation order, which is topological.
  */
final class LogicalGraph(val transforms: Seq[Transform], val preserveOrder: Boolean) {
  private val downstreamById: Map[Int, Seq[(Transform, Int)]] =
    transforms.map(t => t.id -> (for {
      d <- transforms
      (u, ordinal) <- d.upstream.zipWithIndex
      if u eq t
    } yield (d, ordinal))).toMap

  /** The transforms reading `t`, each with the input ordinal it reads `t` at. */
  def downstream(t: Transform): Seq[(Transform, Int)] = downstreamById(t.id)
}
