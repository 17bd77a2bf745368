package io.jetspark.plan

import scala.collection.mutable

import io.jetspark.pipeline.transform.{StatelessTransform, Transform}

/** Fusion: consecutive stateless transforms (map, filter, flatMap, peek; JVM or Python) run in one vertex,
  * each item passing through the whole chain without an edge in between. A chain continues from `u` to
  * its downstream `t` only when `u` has no other downstream (a fan-out needs an edge per branch), `t`
  * runs with the same parallelism, and `t`'s input is not rebalanced (design doc 008).
  */
private[plan] object FusionRule {

  /** Every stateless transform in exactly one chain, chains in topological order of their heads. */
  def chains(graph: LogicalGraph, parallelism: Map[Int, Parallelism]): Seq[Seq[StatelessTransform]] = {
    val chainOf = mutable.Map.empty[Int, mutable.ArrayBuffer[StatelessTransform]]
    val chains = mutable.ArrayBuffer.empty[mutable.ArrayBuffer[StatelessTransform]]
    graph.transforms.foreach {
      case t: StatelessTransform =>
        val up = t.upstream.head
        val chain = if (continues(graph, parallelism, up, t)) chainOf(up.id) else {
          val fresh = mutable.ArrayBuffer.empty[StatelessTransform]
          chains += fresh
          fresh
        }
        chain += t
        chainOf(t.id) = chain
      case _ =>
    }
    chains.map(_.toSeq).toSeq
  }

  private def continues(graph: LogicalGraph, parallelism: Map[Int, Parallelism], up: Transform, t: StatelessTransform): Boolean =
    up.isInstanceOf[StatelessTransform] &&
      graph.downstream(up).size == 1 &&
      !t.isRebalanced(0) &&
      parallelism(up.id).output == parallelism(t.id).input
}
