package io.jetspark.plan

import io.jetspark.pipeline.transform.Rebalance

/** Design doc 008: how the user's `rebalance()` / `rebalance(key)` changes the edge a transform would
  * otherwise read its input over.
  *
  *  - a local edge becomes distributed: round-robin, or partitioned by the rebalance key;
  *  - a partitioned edge (grouping key) stays partitioned by the grouping key: correctness needs it, the
  *    rebalance key is ignored;
  *  - a broadcast edge (hash-join enriching side) and an all-to-one edge are unchanged: every item
  *    already reaches its one possible destination.
  *
  * The other effects of rebalancing are decided where they belong: fusion stops at a rebalanced input
  * ([[FusionRule]]), keyed aggregation and `aggregate2` become single-stage ([[AggregationStageRule]]),
  * and rebalancing a non-keyed stateful transform is an error ([[Validation]]).
  */
private[plan] object RebalanceRule {

  def apply(intrinsic: EdgeKind, rebalance: Rebalance): EdgeKind = (intrinsic, rebalance) match {
    case (_, Rebalance.None) => intrinsic
    case (EdgeKind.Local, Rebalance.RoundRobin) => EdgeKind.RoundRobin
    case (EdgeKind.Local, Rebalance.ByKey(key)) => EdgeKind.Partitioned(key)
    case _ => intrinsic
  }
}
