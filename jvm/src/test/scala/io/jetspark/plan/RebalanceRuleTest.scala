package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.AggregationStage._
import io.jetspark.plan.PlanTestSupport._

/** Design doc 008, "Semantics": one test per example, in the doc's order. Default parallelism 4; `df`
  * sources are DataFrames (parallelism 4). Plans are drawn as `vertex(parallelism)`.
  */
class RebalanceRuleTest extends AnyFunSuite {

  //  df(4) ==round-robin==> map(4) --local--> out(4)
  test("1. rebalance().map uses a round-robin distributed edge into map") {
    val p = Pipeline.create()
    wideSource(p).rebalance().map(identity).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "map") == EdgeKind.RoundRobin)
    assert(dag.kind("map", "out") == EdgeKind.Local)
    assert(dag.lp("map") == 4)
  }

  //  df(4) ==partitioned by name==> map(4) --local--> out(4)
  test("2. rebalance(key).map uses a distributed edge partitioned by the key") {
    val p = Pipeline.create()
    wideSource(p).rebalance(name).map(identity).writeTo(list()).setName("out")
    assert(p.plan(4).kind("df", "map") == EdgeKind.Partitioned(name))
  }

  //  df(4) --local--> map(4) ==round-robin==> flatMap(4) --local--> out(4)
  //  (without the rebalance: df --local--> fused(map, flatMap) --local--> out)
  test("3. map.rebalance().flatMap is not fused and uses a round-robin edge between them") {
    def pipeline(rebalance: Boolean) = {
      val p = Pipeline.create()
      val mapped = wideSource(p).map(identity)
      (if (rebalance) mapped.rebalance() else mapped).flatMap((x: Any) => Seq(x)).writeTo(list()).setName("out")
      p.plan(4)
    }
    val rebalanced = pipeline(rebalance = true)
    assert(rebalanced.names == Seq("df", "map", "flatMap", "out"))
    assert(rebalanced.kind("df", "map") == EdgeKind.Local)
    assert(rebalanced.kind("map", "flatMap") == EdgeKind.RoundRobin)

    val plain = pipeline(rebalance = false)
    assert(plain.names == Seq("df", "fused(map, flatMap)", "out"))
    assert(plain.vertex("fused(map, flatMap)").fusedChain == Seq("map", "flatMap"))
  }

  //  a(4) --local--> map(4) --local-------\
  //                                        merge(4) --local--> out(4)
  //  b(4) ==round-robin===================/
  test("4. merge rebalances each input independently, as requested on it") {
    val p = Pipeline.create()
    val stage0 = wideSource(p, "a").map(identity)
    val stage1 = wideSource(p, "b").rebalance()
    stage0.merge(stage1).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.edge("map", "merge") == Edge("map", 0, "merge", 0, EdgeKind.Local))
    assert(dag.edge("b", "merge") == Edge("b", 0, "merge", 1, EdgeKind.RoundRobin))
  }

  //  df(4) ==round-robin==> aggregate-accumulate(4) ==all-to-one==> aggregate-combine(1) --local--> out(1)
  test("5a. rebalance().aggregate keeps two stages and round-robins into the accumulating stage") {
    val p = Pipeline.create()
    wideSource(p).rebalance().aggregate(Counting).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "aggregate-accumulate") == EdgeKind.RoundRobin)
    assert(dag.kind("aggregate-accumulate", "aggregate-combine") == EdgeKind.AllToOne)
    assert(dag.lp("aggregate-accumulate") == 4 && dag.lp("aggregate-combine") == 1)
    assert(dag.vertex("aggregate-accumulate").description == VertexDescription.Aggregate(Accumulate, Seq(Counting), Nil))
    assert(dag.vertex("aggregate-combine").description == VertexDescription.Aggregate(Combine, Seq(Counting), Nil))
  }

  //  df(4) ==partitioned by name==> aggregate-accumulate(4) ==all-to-one==> aggregate-combine(1)
  test("5b. rebalance(key).aggregate partitions the input of the accumulating stage by the key") {
    val p = Pipeline.create()
    wideSource(p).rebalance(name).aggregate(Counting).writeTo(list())
    val dag = p.plan(4)
    assert(dag.kind("df", "aggregate-accumulate") == EdgeKind.Partitioned(name))
    assert(dag.kind("aggregate-accumulate", "aggregate-combine") == EdgeKind.AllToOne)
  }

  //  rebalanced: df(4) ==partitioned by age==> aggregate(4, single stage)
  //  plain:      df(4) --local--> aggregate-accumulate(4) ==partitioned by age (extracted)==> aggregate-combine(4)
  test("6. rebalance().groupingKey().aggregate is single-stage, partitioned by the grouping key") {
    def plan(rebalance: Boolean) = {
      val p = Pipeline.create()
      val src = wideSource(p)
      (if (rebalance) src.rebalance() else src).groupingKey(age).aggregate(Counting).writeTo(list())
      p.plan(4)
    }
    val rebalanced = plan(rebalance = true)
    assert(rebalanced.kind("df", "aggregate") == EdgeKind.Partitioned(age))
    assert(rebalanced.vertex("aggregate").description == VertexDescription.Aggregate(SingleStage, Seq(Counting), Seq(age)))
    assert(!rebalanced.names.exists(_.endsWith("-accumulate")))

    val plain = plan(rebalance = false)
    assert(plain.kind("df", "aggregate-accumulate") == EdgeKind.Local)
    assert(plain.kind("aggregate-accumulate", "aggregate-combine") == EdgeKind.Partitioned(age, preExtracted = true))
  }

  //  df(4) ==partitioned by age (not name)==> aggregate(4, single stage)
  //  df(4) ==partitioned by age (not name)==> mapStateful(4)      (as without the rebalance)
  test("7. rebalance(key).groupingKey ignores the rebalance key; only aggregation changes (to single-stage)") {
    val p = Pipeline.create()
    val src = wideSource(p)
    src.rebalance(name).groupingKey(age).aggregate(Counting).writeTo(list("a"))
    src.rebalance(name).groupingKey(age).mapStateful(() => 0, (s: Any, _: Any, i: Any) => (s, i)).writeTo(list("b"))
    val dag = p.plan(4)
    assert(dag.kind("df", "aggregate") == EdgeKind.Partitioned(age))
    assert(dag.vertex("aggregate").description.asInstanceOf[VertexDescription.Aggregate].stage == SingleStage)
    assert(dag.kind("df", "mapStateful") == EdgeKind.Partitioned(age))

    val plain = Pipeline.create()
    wideSource(plain).groupingKey(age).mapStateful(() => 0, (s: Any, _: Any, i: Any) => (s, i)).writeTo(list("b"))
    assert(plain.plan(4).kind("df", "mapStateful") == EdgeKind.Partitioned(age))
  }

  //  a(4) ==partitioned by age==> aggregate2(4, single stage) <==partitioned by age== b(4)  [b rebalanced]
  test("8. aggregate2 with a rebalanced input is single-stage; without, two-stage") {
    def plan(rebalance: Boolean) = {
      val p = Pipeline.create()
      val stage0 = wideSource(p, "a").groupingKey(age)
      val b = wideSource(p, "b")
      val stage1 = (if (rebalance) b.rebalance() else b).groupingKey(age)
      stage0.aggregate2(stage1, Counting, Counting).writeTo(list())
      p.plan(4)
    }
    val rebalanced = plan(rebalance = true)
    assert(rebalanced.edgesInto("aggregate2").map(e => (e.from, e.toOrdinal, e.kind)) ==
      Seq(("a", 0, EdgeKind.Partitioned(age)), ("b", 1, EdgeKind.Partitioned(age))))
    assert(rebalanced.vertex("aggregate2").description.asInstanceOf[VertexDescription.Aggregate].stage == SingleStage)

    val plain = plan(rebalance = false)
    assert(plain.edgesInto("aggregate2-accumulate").map(_.kind) == Seq(EdgeKind.Local, EdgeKind.Local))
    assert(plain.kind("aggregate2-accumulate", "aggregate2-combine") == EdgeKind.Partitioned(age, preExtracted = true))
  }

  //  src0(4) ==round-robin==> hashJoin(4) <==broadcast== src1(4)
  test("9. hash join with a rebalanced primary stage reads it over a round-robin edge") {
    val p = Pipeline.create()
    val stage0 = wideSource(p, "src0").rebalance()
    val enriching = wideSource(p, "src1")
    stage0.hashJoin(enriching, JoinClause.on("id", "id")).writeTo(list())
    val dag = p.plan(4)
    assert(dag.edge("src0", "hashJoin") == Edge("src0", 0, "hashJoin", 0, EdgeKind.RoundRobin))
    assert(dag.edge("src1", "hashJoin") == Edge("src1", 0, "hashJoin", 1, EdgeKind.Broadcast))
  }

  //  src0(4) --local--> hashJoin(4) <==broadcast== src1(4)  [src1 rebalanced: no effect]
  //                             ^=====broadcast== src2(4)
  test("10. rebalancing an enriching stage of a hash join has no effect: broadcast either way") {
    val p = Pipeline.create()
    val stage0 = wideSource(p, "src0")
    val enriching1 = wideSource(p, "src1").rebalance()
    val enriching2 = wideSource(p, "src2")
    stage0.hashJoin(Seq(enriching1 -> JoinClause.on("a", "a"), enriching2 -> JoinClause.on("b", "b")), None, inner = false)
      .writeTo(list())
    val dag = p.plan(4)
    assert(dag.edgesInto("hashJoin").map(e => (e.from, e.toOrdinal, e.kind)) ==
      Seq(("src0", 0, EdgeKind.Local), ("src1", 1, EdgeKind.Broadcast), ("src2", 2, EdgeKind.Broadcast)))
  }

  test("11. rebalance() or rebalance(key) before a non-keyed stateful transform is a definition error naming stage and rule") {
    val stateful: Seq[(String, BatchStage => BatchStage)] = Seq(
      "mapStateful" -> (_.mapStateful(() => 0, (s: Any, i: Any) => (s, i))),
      "rollingAggregate" -> (_.rollingAggregate(Counting)),
    )
    for ((stage, attach) <- stateful; rebalance <- Seq[BatchStage => BatchStage](_.rebalance(), _.rebalance(name))) {
      val p = Pipeline.create()
      attach(rebalance(wideSource(p))).writeTo(list())
      val error = intercept[PipelineDefinitionError](p.plan(4))
      assert(error.rule == PipelineDefinitionError.RebalanceBeforeStateful)
      assert(error.stage == stage)
      assert(error.getMessage.contains(stage) && error.getMessage.contains(PipelineDefinitionError.RebalanceBeforeStateful))
    }
  }

  //  df(4) ==all-to-one==> mapStateful(1)      (no rebalance: fine)
  test("a non-keyed stateful transform without rebalance runs as one processor behind an all-to-one edge") {
    val p = Pipeline.create()
    wideSource(p).mapStateful(() => 0, (s: Any, i: Any) => (s, i)).writeTo(list())
    val dag = p.plan(4)
    assert(dag.kind("df", "mapStateful") == EdgeKind.AllToOne)
    assert(dag.lp("mapStateful") == 1)
  }
}
