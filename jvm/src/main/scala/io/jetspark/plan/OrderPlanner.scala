package io.jetspark.plan

import scala.collection.mutable

import io.jetspark.pipeline.PipelineDefinitionError
import io.jetspark.pipeline.transform.{MergeTransform, OrderClass, Transform}

/** Which inputs must keep encounter order: `required` maps (transform id, input ordinal) to the
  * order-sensitive stage that needs it.
  */
private[plan] final case class OrderAnalysis(required: Map[(Int, Int), Transform]) {
  def isRequired(t: Transform, ordinal: Int): Boolean = required.contains(t.id -> ordinal)
}

/** Order preservation (design doc 015, and the fork-join "diamond").
  *
  * With `preserveOrder`, a reverse-topological pass marks the inputs that must keep encounter order: an
  * order-sensitive transform (stateful mapping, rolling aggregation, order-dependent aggregation, a
  * keyed first-item distinct, timestamp assignment, a sink) needs its input in order; an order-insensitive
  * transform needs its input in order when something downstream needs its output in order; an
  * order-producing transform (sort, aggregation, window) needs nothing, since it defines its output's order.
  *
  * A marked input is then planned so that order survives:
  *  - a local round-robin edge becomes isolated (processor i feeds processor i), the receiver taking the
  *    sender's parallelism ([[ParallelismRule]]);
  *  - a round-robin edge the user asked for (`rebalance()`) cannot keep order: a definition error;
  *  - an unavoidable shuffle (partitioned by a key, or all-to-one) from several senders mixes their
  *    items: items carry a sequence id assigned where the ordered stream starts, and the receiver
  *    restores order by it (per key on a partitioned edge);
  *  - a merge of branches forked from one ordered stream emits in sequence order (the diamond: rows that
  *    took different branches must not overtake each other).
  * Unmarked edges keep full parallelism.
  */
private[plan] object OrderPlanner {

  def analyze(graph: LogicalGraph): OrderAnalysis = {
    if (!graph.preserveOrder) return OrderAnalysis(Map.empty)
    val required = mutable.Map.empty[(Int, Int), Transform]
    graph.transforms.reverseIterator.foreach { t =>
      val neededBy: Option[Transform] = t.orderClass match {
        case OrderClass.Sensitive => Some(t)
        case OrderClass.Producing => None
        case OrderClass.Insensitive => graph.downstream(t).collectFirst { case (d, i) if required.contains(d.id -> i) => required(d.id -> i) }
      }
      neededBy.foreach(sensitive => t.orderRelevantInputs.foreach(i => required(t.id -> i) = sensitive))
    }
    OrderAnalysis(required.toMap)
  }

  /** The edge input `ordinal` of `t` is read over, given the kind it would have without order concerns. */
  def orderedEdge(order: OrderAnalysis, t: Transform, ordinal: Int, kind: EdgeKind): EdgeKind =
    if (!order.isRequired(t, ordinal)) kind
    else kind match {
      case EdgeKind.Local => EdgeKind.Isolated
      case EdgeKind.RoundRobin =>
        val rebalanced = t.upstream(ordinal)
        val sensitive = order.required(t.id -> ordinal)
        throw new PipelineDefinitionError(rebalanced.name, PipelineDefinitionError.UnkeyedRebalanceBreaksOrder,
          s"rebalance() without a key feeds '${t.name}', upstream of order-sensitive stage '${sensitive.name}', while preserve " +
            "order is on: a round-robin edge reorders items; use rebalance(key) or remove the rebalance")
      case other => other
    }

  /** Whether the receiver of this edge must restore order by sequence id: a shuffle from several senders. */
  def needsRestore(order: OrderAnalysis, t: Transform, ordinal: Int, kind: EdgeKind, senderParallelism: Int): Boolean =
    order.isRequired(t, ordinal) && senderParallelism > 1 && (kind match {
      case _: EdgeKind.Partitioned | EdgeKind.AllToOne => true
      case _ => false
    })

  /** A merge that must emit in sequence order: two of its ordered inputs start from the same ordered stream. */
  def isOrderedMerge(order: OrderAnalysis, merge: MergeTransform): Boolean = {
    val originSets = merge.upstream.indices.filter(order.isRequired(merge, _)).map(i => origins(order, merge.upstream(i)))
    originSets.combinations(2).exists(pair => pair(0).exists(pair(1).contains))
  }

  /** Where the order `t`'s output relies on starts: up through inputs that must keep order, the
    * transforms whose own inputs need none (sources, order producers).
    */
  private def origins(order: OrderAnalysis, t: Transform): Set[Int] = {
    val ordered = t.upstream.indices.filter(order.isRequired(t, _))
    if (ordered.isEmpty) Set(t.id) else ordered.flatMap(i => origins(order, t.upstream(i))).toSet
  }
}
