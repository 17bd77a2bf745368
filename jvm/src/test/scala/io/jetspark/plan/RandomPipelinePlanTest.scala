package io.jetspark.plan

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.PlanTestSupport._
import io.jetspark.plan.VertexDescription._
import io.jetspark.core.testing.TestSeed

/** Random pipelines, checked against facts computed independently from the physical DAG: whether an
  * edge's items must keep their order is decided here by walking the physical DAG downstream from the
  * edge (does an order-sensitive vertex follow before any order-producing one?), not by the planner's
  * logical pass.
  */
class RandomPipelinePlanTest extends AnyFunSuite {

  private val seeds = 0 until 300

  /** A random pipeline of one source, a few steps, forks, diamonds and sinks. */
  private def randomPipeline(random: Random, preserveOrder: Boolean): Pipeline = {
    val p = Pipeline.create(preserveOrder)
    var sinks = 0
    def sink(stage: BatchStage): Unit = { sinks += 1; stage.writeTo(Sinks.list(s"s$sinks")) }
    var current = if (random.nextBoolean()) p.readFrom(Sources.items(Seq(1, 2))) else wideSource(p)
    var pendingRebalance: Option[BatchStage => BatchStage] = None
    def input: BatchStage = { val s = pendingRebalance.fold(current)(_(current)); pendingRebalance = None; s }
    for (_ <- 0 until 1 + random.nextInt(7)) {
      random.nextInt(13) match {
        case 0 => current = input.map(identity)
        case 1 => current = input.map(py(s"p${random.nextInt(9)}"))
        case 2 => current = input.filter((_: Any) => true)
        case 3 => current = input.flatMap(py("f"))
        case 4 => current = current.setLocalParallelism(1 + random.nextInt(4))
        case 5 => pendingRebalance = Some(if (random.nextBoolean()) _.rebalance() else _.rebalance(name))
        case 6 => current = input.groupingKey(age).mapStateful(() => 0, (s: Any, _: Any, i: Any) => (s, i))
        case 7 if pendingRebalance.isEmpty => current = current.rollingAggregate(Counting)
        case 8 => current = input.aggregate(if (random.nextBoolean()) Counting else ToList)
        case 9 => current = input.groupingKey(age).aggregate(Seq(Counting, ToList, Last)(random.nextInt(3)))
        case 10 => current = input.sort(name)
        case 11 => sink(current.map(identity))
        case _ =>
          val from = input
          current = from.filter((_: Any) => true).map(identity).merge(from.filter((_: Any) => true))
      }
    }
    sink(input)
    p
  }

  private def isSensitive(d: VertexDescription): Boolean = d match {
    case _: MapStateful | _: RollingAggregate => true
    case Sink(sink) => !sink.isDeadLetter
    case Aggregate(_, ops, _) => ops.exists(_.isOrderSensitive)
    case _ => false
  }

  private def isProducing(d: VertexDescription): Boolean = d match {
    case Aggregate(_, ops, _) => !ops.exists(_.isOrderSensitive)
    case _: Sort | _: WindowAggregate => true
    case Distinct(key) => key == Extractor.WholeItem
    case _ => false
  }

  /** Whether the items of edges into `vertex` must keep order: an order-sensitive vertex follows, with no
    * order-producing vertex before it.
    */
  private def orderNeeded(dag: PhysicalDag, vertex: String): Boolean = {
    val d = dag.vertex(vertex).description
    isSensitive(d) || (!isProducing(d) && dag.edgesFrom(vertex).filter(_.errorsOf.isEmpty).exists(e => orderNeeded(dag, e.to)))
  }

  private def forEachSeed(body: (Int, Random) => Unit): Unit = seeds.foreach { seed =>
    withClue(s"seed ${TestSeed(seed)}:") { body(seed, new Random(TestSeed(seed))) }
  }

  /** Fails unless at least `least` of the seeds reached the case a test is about (a generator that
    * drifted into pipelines the planner refuses would otherwise check nothing and pass).
    */
  private def assertChecked(what: String, checked: Int, least: Int): Unit = {
    info(s"$what: $checked of ${seeds.size} seeds")
    assert(checked >= least, s"only $checked of ${seeds.size} seeds checked $what")
  }

  test("every stateless stage is in exactly one vertex, and chains are maximal") {
    var planned = 0
    forEachSeed { (seed, random) =>
      val preserve = random.nextBoolean()
      val p = randomPipeline(random, preserve)
      val dag = try p.plan(3) catch { case _: PipelineDefinitionError => null }
      if (dag != null) {
        planned += 1
        val chains = dag.vertices.collect { case Vertex(_, StatelessChain(steps), _, chain, _) => (steps, chain) }
        val fusedIds = chains.flatMap(_._1.map(_.id))
        val statelessIds = p.transforms.collect { case t: io.jetspark.pipeline.transform.StatelessTransform => t.id }
        assert(fusedIds.sorted == statelessIds.sorted)
        assert(chains.forall { case (steps, names) => steps.map(_.name) == names })
        // Maximal: a narrow edge between two chain vertices of equal parallelism, the only output of its
        // sender, would have been fused.
        dag.edges.foreach { e =>
          val (from, to) = (dag.vertex(e.from), dag.vertex(e.to))
          val bothChains = from.description.isInstanceOf[StatelessChain] && to.description.isInstanceOf[StatelessChain]
          val narrow = e.kind == EdgeKind.Local || e.kind == EdgeKind.Isolated
          assert(!(bothChains && narrow && from.localParallelism == to.localParallelism &&
            dag.edgesFrom(e.from).count(_.errorsOf.isEmpty) == 1), s"$e not fused")
        }
      }
    }
    assertChecked("a planned pipeline", planned, seeds.size / 2)
  }

  test("with preserveOrder, exactly the edges that need order are kept ordered; elsewhere full parallelism") {
    var (refused, planned) = (0, 0)
    forEachSeed { (seed, random) =>
      val p = randomPipeline(random, preserveOrder = true)
      val unordered = { p.setPreserveOrder(false); p.plan(3) }
      // rebalance() is an error exactly where its round-robin edge feeds stages that need order.
      val breaking = unordered.edges.filter(e => e.kind == EdgeKind.RoundRobin && orderNeeded(unordered, e.to))
      p.setPreserveOrder(true)
      if (breaking.nonEmpty) {
        refused += 1
        val error = intercept[PipelineDefinitionError](p.plan(3))
        assert(error.rule == PipelineDefinitionError.UnkeyedRebalanceBreaksOrder)
        assert(breaking.flatMap(e => unordered.vertex(e.from).fusedChain).contains(error.stage))
      } else {
        planned += 1
        val dag = p.plan(3)
        dag.edges.filter(_.errorsOf.isEmpty).foreach { e =>
          val senders = dag.vertex(e.from).localParallelism
          if (orderNeeded(dag, e.to)) e.kind match {
            case EdgeKind.Isolated =>
              assert(senders <= dag.lp(e.to), e)
              if (!dag.vertex(e.to).description.isInstanceOf[Merge]) assert(senders == dag.lp(e.to), e)
            case _: EdgeKind.Partitioned | EdgeKind.AllToOne => assert(e.restoresSequence == (senders > 1), e)
            case other => fail(s"$e needs order but is $other")
          }
          else assert(e.kind != EdgeKind.Isolated && !e.restoresSequence, e)
        }
        // Sequence ids are assigned exactly where restoring or ordered merging needs them.
        val needsSequence = dag.edges.exists(_.restoresSequence) ||
          dag.vertices.exists(_.description match { case Merge(_, ordered) => ordered; case _ => false })
        assert(dag.vertices.exists(_.assignsSequence) == needsSequence)
      }
    }
    assertChecked("an ordered plan", planned, seeds.size / 2)
    assertChecked("a refused unkeyed rebalance", refused, seeds.size / 20)
  }

  test("without preserveOrder, only a sort's order is kept (isolated edges from its one processor) and nothing carries sequence ids") {
    forEachSeed { (seed, random) =>
      val dag = randomPipeline(random, preserveOrder = false).plan(3)
      def sorted(v: String): Boolean = dag.vertex(v).description match {
        case Sort(SortPhase.MergeSorted, _, _) => true
        case _ => dag.vertex(v).localParallelism == 1 && dag.edgesInto(v).exists(e => e.kind != EdgeKind.Broadcast && sorted(e.from))
      }
      dag.edges.filter(e => e.kind == EdgeKind.Isolated && e.errorsOf.isEmpty).foreach(e => assert(sorted(e.from), s"seed $seed: $e"))
      assert(!dag.edges.exists(e => e.carriesSequence || e.restoresSequence) && !dag.vertices.exists(_.assignsSequence))
      assert(!dag.vertices.exists(_.description match { case Merge(_, ordered) => ordered; case _ => false }))
    }
  }
}
