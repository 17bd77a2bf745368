package io.jetspark.plan

import scala.collection.mutable

import io.jetspark.pipeline.transform._
import io.jetspark.plan.AggregationStageRule.{SingleStage, Stages, TwoStage}
import io.jetspark.plan.VertexDescription._

/** Plans a pipeline's logical DAG into a physical DAG.
  *
  * The rules, each in its own object, run in this order: [[Validation]] (definition errors),
  * [[OrderPlanner]] (which inputs keep order, and no unkeyed rebalance spreads them), [[AggregationStageRule]] (one or two stages),
  * [[RebalanceRule]] (the user's rebalancing on top of each input's own edge), [[OrderPlanner.gatherMerges]]
  * (ordered merges whose branches do not line up read them all-to-one), [[ParallelismRule]],
  * [[FusionRule]]; then vertices and edges are built, and the order machinery (isolated edges, sequence
  * restore points, ordered merges, where sequence ids are assigned) is applied to them.
  */
object Planner {

  def plan(graph: LogicalGraph, defaultParallelism: Int): PhysicalDag = {
    if (defaultParallelism <= 0) throw new IllegalArgumentException(s"defaultParallelism must be positive, was $defaultParallelism")
    Validation.validate(graph)
    val required = OrderPlanner.analyze(graph)
    def stagesUnder(order: OrderAnalysis): Map[Int, Stages] = graph.transforms.collect {
      case a: AggregatingTransform => a.id -> AggregationStageRule.decide(a, order)
    }.toMap
    val stages = stagesUnder(required)
    val stagesApartFromOrder = stagesUnder(OrderAnalysis(Map.empty))
    OrderPlanner.refuseUnkeyedRebalances(graph, required,
      (t, ordinal) => RebalanceRule(ownInputEdge(t, ordinal, stagesApartFromOrder), t.rebalance(ordinal)))
    def ownEdge(t: Transform, ordinal: Int): EdgeKind = RebalanceRule(ownInputEdge(t, ordinal, stages), t.rebalance(ordinal))
    val order = OrderPlanner.gatherMerges(graph, required, ownEdge)
    def inputEdge(t: Transform, ordinal: Int): EdgeKind = if (order.gathers(t)) EdgeKind.AllToOne else ownEdge(t, ordinal)
    val parallelism = ParallelismRule.compute(graph, defaultParallelism, order, stages, inputEdge)
    val chains = FusionRule.chains(graph, parallelism)
    new DagBuilder(graph, order, stages, parallelism, chains, inputEdge).build()
  }

  /** The edge a transform's input needs by the transform's nature, before the user's rebalancing. */
  private def ownInputEdge(t: Transform, ordinal: Int, stages: Map[Int, Stages]): EdgeKind = t match {
    case a: AggregatingTransform => AggregationStageRule.inputEdge(a, ordinal, stages(t.id))
    case _: HashJoinTransform if ordinal > 0 => EdgeKind.Broadcast
    case s: StatefulTransform => s.key.fold[EdgeKind](EdgeKind.AllToOne)(EdgeKind.Partitioned(_))
    case d: DistinctTransform => EdgeKind.Partitioned(d.key)
    case _ => EdgeKind.Local
  }
}

/** An edge under construction, and whether the order of its items is required. */
private final case class Draft(edge: Edge, orderRequired: Boolean)

/** Builds vertices and edges from the rules' decisions; one instance per planning. */
private final class DagBuilder(
    graph: LogicalGraph,
    order: OrderAnalysis,
    stages: Map[Int, Stages],
    parallelism: Map[Int, Parallelism],
    chains: Seq[Seq[StatelessTransform]],
    inputEdge: (Transform, Int) => EdgeKind,
) {
  private val vertices = mutable.ArrayBuffer.empty[Vertex]
  private val drafts = mutable.ArrayBuffer.empty[Draft]
  private val inVertex = mutable.Map.empty[Int, String]
  private val outVertex = mutable.Map.empty[Int, String]
  private val outputsUsed = mutable.Map.empty[String, Int].withDefaultValue(0)
  private val chainByHead = chains.map(c => c.head.id -> c).toMap

  def build(): PhysicalDag = {
    graph.transforms.filterNot(isFusedAway).foreach { t =>
      val betweenStages = addVertices(t)
      t.upstream.zipWithIndex.foreach { case (u, i) => connectInput(t, u, i) }
      betweenStages.foreach(_.apply())
    }
    // Dead letters last, so that data outputs keep the low output ordinals.
    graph.transforms.foreach { t =>
      t.errorSink.foreach { sink =>
        val failing = inVertex(t.id)
        val deadLetter = addVertex(s"${t.name}-dead-letter", Sink(sink), vertexNamed(failing).localParallelism, Seq(s"${t.name} errors"))
        connect(failing, deadLetter, 0, EdgeKind.Isolated, orderRequired = false, restore = false, errorsOf = Some(t.name))
      }
    }
    markSequenceCarriers()
    PhysicalDag(vertices.toSeq, drafts.map(_.edge).toSeq, graph.preserveOrder)
  }

  private def isFusedAway(t: Transform): Boolean = t.isInstanceOf[StatelessTransform] && !chainByHead.contains(t.id)

  private def vertexNamed(name: String): Vertex = vertices.find(_.name == name).get

  /** Adds `t`'s vertices; returns the connection between its two vertices when it has two, to be made
    * after its inputs so that edges read in data-flow order.
    */
  private def addVertices(t: Transform): Option[() => Unit] = {
    val p = parallelism(t.id)
    def single(description: VertexDescription): Option[() => Unit] = {
      val v = addVertex(t.name, description, p.input, Seq(t.name))
      inVertex(t.id) = v
      outVertex(t.id) = v
      None
    }
    def twoVertices(first: String, firstDescription: VertexDescription, second: String, secondDescription: VertexDescription,
        between: EdgeKind): Option[() => Unit] = {
      val a = addVertex(first, firstDescription, p.input, Seq(t.name))
      val b = addVertex(second, secondDescription, p.output, Seq(t.name))
      inVertex(t.id) = a
      outVertex(t.id) = b
      Some(() => connect(a, b, 0, between, orderRequired = false, restore = false))
    }
    def aggregation(a: AggregatingTransform, describe: AggregationStage => VertexDescription): Option[() => Unit] = stages(t.id) match {
      case TwoStage =>
        twoVertices(s"${t.name}-accumulate", describe(AggregationStage.Accumulate), s"${t.name}-combine",
          describe(AggregationStage.Combine), AggregationStageRule.betweenStages(a))
      case SingleStage => single(describe(AggregationStage.SingleStage))
    }
    t match {
      case s: StatelessTransform =>
        val chain = chainByHead(s.id)
        val name = if (chain.size == 1) s.name else chain.map(_.name).mkString("fused(", ", ", ")")
        val v = addVertex(name, StatelessChain(chain), p.input, chain.map(_.name))
        chain.foreach { member =>
          inVertex(member.id) = v
          outVertex(member.id) = v
        }
        None
      case s: StreamSourceTransform => single(Source(s.source, s.timestamps))
      case s: SourceTransform => single(Source(s.source, None))
      case m: MergeTransform => single(Merge(m.upstream.size, OrderPlanner.isOrderedMerge(order, m)))
      case h: HashJoinTransform => single(HashJoin(h.clauses, h.mapper, h.inner))
      case s: MapStatefulTransform => single(MapStateful(s.key, s.createFn, s.fn))
      case r: RollingAggregateTransform => single(RollingAggregate(r.key, r.op))
      case a: AggregateTransform => aggregation(a, Aggregate(_, a.ops, a.keys))
      case w: WindowAggregateTransform =>
        aggregation(w, WindowAggregate(_, w.window, w.ops.head, w.keys.headOption))
      case a: AddTimestampsTransform => single(AddTimestamps(a.timestamp, a.allowedLagMs))
      case d: DistinctTransform => single(Distinct(d.key))
      case s: SortTransform =>
        twoVertices(s"${t.name}-local", Sort(SortPhase.LocalSort, s.key, s.reverse), s"${t.name}-merge",
          Sort(SortPhase.MergeSorted, s.key, s.reverse), EdgeKind.AllToOne)
      case s: SinkTransform => single(Sink(s.sink))
      case other => throw new IllegalStateException(s"the planner has no vertex for transform kind ${other.getClass.getSimpleName}")
    }
  }

  private def connectInput(t: Transform, up: Transform, ordinal: Int): Unit = {
    val kind = OrderPlanner.orderedEdge(order, t, ordinal, inputEdge(t, ordinal))
    val restore = OrderPlanner.needsRestore(order, t, ordinal, kind, parallelism(up.id).output)
    connect(outVertex(up.id), inVertex(t.id), ordinal, kind, order.isRequired(t, ordinal), restore)
  }

  private def addVertex(base: String, description: VertexDescription, lp: Int, chain: Seq[String]): String = {
    val taken = vertices.map(_.name).toSet
    val name = Iterator.from(1).map(n => if (n == 1) base else s"$base-$n").find(!taken.contains(_)).get
    vertices += Vertex(name, description, lp, chain)
    name
  }

  private def connect(from: String, to: String, toOrdinal: Int, kind: EdgeKind, orderRequired: Boolean, restore: Boolean,
      errorsOf: Option[String] = None): Unit = {
    val fromOrdinal = outputsUsed(from)
    outputsUsed(from) = fromOrdinal + 1
    drafts += Draft(Edge(from, fromOrdinal, to, toOrdinal, kind, restoresSequence = restore, errorsOf = errorsOf), orderRequired)
  }

  /** Sequence ids are needed wherever order is restored (restore points, ordered merges). Walking up the
    * order-keeping edges from there, every edge carries them and the vertices where the ordered stream
    * starts (no order-keeping input: a source or an order producer) assign them.
    */
  private def markSequenceCarriers(): Unit = {
    val orderedMerges = vertices.collect { case Vertex(name, Merge(_, true), _, _, _) => name }.toSet
    val consumers = drafts.indices.filter(i => drafts(i).edge.restoresSequence || orderedMerges.contains(drafts(i).edge.to))
    val visited = mutable.Set.empty[Int]
    def carry(i: Int): Unit = if (visited.add(i)) {
      val draft = drafts(i)
      drafts(i) = draft.copy(edge = draft.edge.copy(carriesSequence = true))
      val sender = draft.edge.from
      val orderedInputs = drafts.indices.filter(j => drafts(j).edge.to == sender && drafts(j).orderRequired)
      if (orderedInputs.isEmpty) {
        val v = vertices.indexWhere(_.name == sender)
        vertices(v) = vertices(v).copy(assignsSequence = true)
      } else orderedInputs.foreach(carry)
    }
    consumers.foreach(carry)
  }
}
