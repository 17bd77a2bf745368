package io.jetspark.plan

import scala.collection.mutable

import io.jetspark.pipeline.definition.PipelineDefinitionError
import io.jetspark.pipeline.transform.{MergeTransform, OrderClass, SortTransform, StatefulTransform, StatelessTransform, Transform}

/** Which inputs must keep encounter order: `required` maps (transform id, input ordinal) to the
  * order-sensitive stage that needs it. `gathered`: the ordered merges whose branches are gathered into
  * one processor (see [[OrderPlanner.gatherMerges]]).
  */
private[plan] final case class OrderAnalysis(required: Map[(Int, Int), Transform], gathered: Set[Int] = Set.empty) {
  def isRequired(t: Transform, ordinal: Int): Boolean = required.contains(t.id -> ordinal)
  def gathers(t: Transform): Boolean = gathered.contains(t.id)
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
  *    took different branches must not overtake each other): partition by partition where every branch
  *    keeps the partitions of a stage they all fork from, else in one processor ([[gatherMerges]]).
  * Unmarked edges keep full parallelism.
  *
  * Without `preserveOrder` the one order kept is a sort's, as in Jet, where a sort's single processor
  * feeds the list sink's single processor: an order-sensitive transform (a sink that keeps arrival order,
  * a stateful or to-list stage) reached from a sort through stateless transforms that nobody rebalanced,
  * or global stateful ones (one processor emitting in its input's order), gets that chain's inputs
  * marked, so it reads the sort's one processor over isolated edges.
  */
private[plan] object OrderPlanner {

  def analyze(graph: LogicalGraph): OrderAnalysis = {
    val kept: (Transform, Int) => Boolean = if (graph.preserveOrder) (_, _) => true else readsSortedOrder()
    val required = mutable.Map.empty[(Int, Int), Transform]
    graph.transforms.reverseIterator.foreach { t =>
      val neededBy: Option[Transform] = t.orderClass match {
        case OrderClass.Sensitive => Some(t)
        case OrderClass.Producing => None
        case OrderClass.Insensitive => graph.downstream(t).collectFirst { case (d, i) if required.contains(d.id -> i) => required(d.id -> i) }
      }
      neededBy.foreach(sensitive => t.orderRelevantInputs.filter(kept(t, _)).foreach(i => required(t.id -> i) = sensitive))
    }
    OrderAnalysis(required.toMap)
  }

  /** Whether input `ordinal` of `t` reads a sort's output through stateless transforms, none rebalanced,
    * and global stateful ones.
    */
  private def readsSortedOrder(): (Transform, Int) => Boolean = {
    val sorted = mutable.Map.empty[Int, Boolean]
    def sortedOutput(t: Transform): Boolean = sorted.getOrElseUpdate(t.id, t match {
      case _: SortTransform => true
      case s: StatelessTransform => !s.isRebalanced(0) && sortedOutput(s.upstream.head)
      case s: StatefulTransform => s.key.isEmpty && sortedOutput(s.upstream.head)
      case _ => false
    })
    (t, ordinal) => !t.isRebalanced(ordinal) && sortedOutput(t.upstream(ordinal))
  }

  /** Refuses a `rebalance()` without a key whose round-robin edge would feed an input that must keep order.
    * `edgeApartFromOrder` is the edge each input would have if order were not preserved: where order makes
    * a global aggregation single-stage, its all-to-one edge would absorb the round-robin, but the user
    * asked to spread items that must stay in order. (A rebalance the receiver's own edge overrides, as a
    * grouping key's partitioning does, spreads nothing and is allowed: design doc 008.)
    */
  def refuseUnkeyedRebalances(graph: LogicalGraph, order: OrderAnalysis, edgeApartFromOrder: (Transform, Int) => EdgeKind): Unit =
    for (t <- graph.transforms; ordinal <- t.upstream.indices
         if order.isRequired(t, ordinal) && edgeApartFromOrder(t, ordinal) == EdgeKind.RoundRobin) {
      val sensitive = order.required(t.id -> ordinal)
      throw new PipelineDefinitionError(t.upstream(ordinal).name, PipelineDefinitionError.UnkeyedRebalanceBreaksOrder,
        s"rebalance() without a key feeds '${t.name}', upstream of order-sensitive stage '${sensitive.name}', while preserve " +
          "order is on: a round-robin edge reorders items; use rebalance(key) or remove the rebalance")
    }

  /** The edge input `ordinal` of `t` is read over, given the kind it would have without order concerns
    * (never round-robin where order is required: [[refuseUnkeyedRebalances]]).
    */
  def orderedEdge(order: OrderAnalysis, t: Transform, ordinal: Int, kind: EdgeKind): EdgeKind =
    if (order.isRequired(t, ordinal) && kind == EdgeKind.Local) EdgeKind.Isolated else kind

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

  /** `order` with the ordered merges whose branches cannot be merged partition by partition: some branch
    * re-partitions between the fork and the merge (a keyed stage, a `rebalance(key)`, a global stage), so
    * partition i of one branch holds other items than partition i of another, or the branches share no
    * stage they fork from. Such a merge reads every branch over an all-to-one edge into one processor
    * (whose inputs [[needsRestore]] restores to sequence order where a branch has several senders) and
    * merges the branches there by sequence id. `ownEdge` is the edge each input would have otherwise.
    */
  def gatherMerges(graph: LogicalGraph, order: OrderAnalysis, ownEdge: (Transform, Int) => EdgeKind): OrderAnalysis = {
    val gathered = mutable.Set.empty[Int]
    val partitionsKept = mutable.Map.empty[Int, Set[Int]]
    def keepsPartitions(t: Transform, ordinal: Int) = order.isRequired(t, ordinal) && !gathered(t.id) && ownEdge(t, ordinal) == EdgeKind.Local
    // `t` and the stages above it whose partitions reach `t` unchanged (isolated edges, equal parallelism).
    def partitionsOf(t: Transform): Set[Int] = partitionsKept.getOrElseUpdate(t.id,
      t.upstream.indices.filter(keepsPartitions(t, _)).flatMap(i => partitionsOf(t.upstream(i))).toSet + t.id)
    graph.transforms.foreach {
      case m: MergeTransform if isOrderedMerge(order, m) =>
        val aligned = m.upstream.indices.forall(keepsPartitions(m, _)) && m.upstream.map(partitionsOf).reduce(_ intersect _).nonEmpty
        if (!aligned) gathered += m.id
      case _ => ()
    }
    order.copy(gathered = gathered.toSet)
  }

  /** Where the order `t`'s output relies on starts: up through inputs that must keep order, the
    * transforms whose own inputs need none (sources, order producers).
    */
  private def origins(order: OrderAnalysis, t: Transform): Set[Int] = {
    val ordered = t.upstream.indices.filter(order.isRequired(t, _))
    if (ordered.isEmpty) Set(t.id) else ordered.flatMap(i => origins(order, t.upstream(i))).toSet
  }
}
