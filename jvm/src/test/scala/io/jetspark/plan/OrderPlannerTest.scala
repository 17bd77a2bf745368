package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.AggregationStage._
import io.jetspark.plan.PlanTestSupport._

/** Order preservation (design doc 015, the diamond). Default parallelism 4; `df` sources have parallelism
  * 4, `items` sources 1. `~~>` marks an edge whose items carry sequence ids; `[restore]` a receiver that
  * restores order by them.
  */
class OrderPlannerTest extends AnyFunSuite {

  private val stateful = (s: Any, i: Any) => (s, i)
  private val keyedStateful = (s: Any, _: Any, i: Any) => (s, i)

  //  off: items(1) --local--> m(4) --local--> out(4)
  //  on:  items(1) ==isolated==> m(1) ==isolated==> out(1)
  test("with preserveOrder, edges into order-sensitive stages are isolated with the sender's parallelism; without, local at full parallelism") {
    def plan(preserve: Boolean) = {
      val p = Pipeline.create(preserve)
      p.readFrom(Sources.items(Seq(1, 2, 3))).setName("items").map(identity).setName("m").writeTo(list()).setName("out")
      p.plan(4)
    }
    val off = plan(preserve = false)
    assert(off.kind("items", "m") == EdgeKind.Local && off.kind("m", "out") == EdgeKind.Local)
    assert(off.lp("items") == 1 && off.lp("m") == 4 && off.lp("out") == 4)

    val on = plan(preserve = true)
    assert(on.kind("items", "m") == EdgeKind.Isolated && on.kind("m", "out") == EdgeKind.Isolated)
    assert(on.lp("items") == 1 && on.lp("m") == 1 && on.lp("out") == 1)
    assert(!on.edges.exists(e => e.restoresSequence || e.carriesSequence))
  }

  //  df(4) ==isolated==> m(4, not the 8 asked for) ==isolated==> out(4)
  test("an isolated edge overrides a different parallelism set on the receiver") {
    val p = Pipeline.create().setPreserveOrder(true)
    wideSource(p).map(identity).setName("m").setLocalParallelism(8).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "m") == EdgeKind.Isolated && dag.lp("m") == 4)
  }

  //  df(4) --local--> m(2) --local--> sort-local(4) ==all-to-one==> sort-merge(1) ==isolated==> n(1) ==isolated==> out(1)
  test("an order-producing stage (sort) ends the order-keeping region: edges before it keep full parallelism") {
    val p = Pipeline.create(true)
    wideSource(p).map(identity).setName("m").setLocalParallelism(2).sort(name).map(identity).setName("n").writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "m") == EdgeKind.Local && dag.lp("m") == 2)
    assert(dag.kind("m", "sort-local") == EdgeKind.Local && dag.lp("sort-local") == 4)
    assert(dag.kind("sort-merge", "n") == EdgeKind.Isolated && dag.lp("n") == 1)
    assert(dag.kind("n", "out") == EdgeKind.Isolated && dag.lp("out") == 1)
  }

  //  preserve order off:
  //  df(4) --local--> sort-local(4) ==all-to-one==> sort-merge(1) ==isolated==> n(1) ==isolated==> out(1)
  //                                                               ==isolated==> stateful(1) ==isolated==> kept(1)
  //                                                               --round-robin--> r(4) --local--> shuffled(4)
  //  other(4) --local--> merge(4) <--local-- sort-merge;  merge --local--> mixed(4)
  test("without preserveOrder a sort's order still reaches the order-sensitive stages behind it through stateless and global stateful ones") {
    val p = Pipeline.create()
    val sorted = wideSource(p).sort(name)
    sorted.map(identity).setName("n").writeTo(list()).setName("out")
    sorted.mapStateful(() => 0, stateful).setName("stateful").writeTo(list()).setName("kept")
    sorted.rebalance().map(identity).setName("r").writeTo(list()).setName("shuffled")
    sorted.merge(wideSource(p, "other")).writeTo(list()).setName("mixed")
    val dag = p.plan(4)
    assert(dag.kind("sort-merge", "n") == EdgeKind.Isolated && dag.kind("n", "out") == EdgeKind.Isolated)
    assert(Seq("n", "out", "stateful", "kept").map(dag.lp) == Seq(1, 1, 1, 1))
    assert(dag.kind("sort-merge", "stateful") == EdgeKind.AllToOne && dag.kind("stateful", "kept") == EdgeKind.Isolated)
    // the user's rebalance() and a merge with another stream give up the sort's order, as before
    assert(dag.kind("sort-merge", "r") == EdgeKind.RoundRobin && dag.kind("r", "shuffled") == EdgeKind.Local)
    assert(dag.lp("shuffled") == 4)
    assert(dag.edgesInto("merge").map(_.kind) == Seq(EdgeKind.Local, EdgeKind.Local))
    assert(dag.vertex("merge").description == VertexDescription.Merge(2, orderedBySequence = false))
    assert(dag.kind("merge", "mixed") == EdgeKind.Local && dag.lp("mixed") == 4)
    assert(!dag.edges.exists(e => e.carriesSequence || e.restoresSequence))
  }

  //  items(1) --local--> m(4) --local--> aggregate-accumulate(4) ==all-to-one==> aggregate-combine(1) ==isolated==> out(1)
  test("edges that need no order keep full parallelism even with preserveOrder (commutative aggregation)") {
    val p = Pipeline.create(true)
    p.readFrom(Sources.items(Seq(1, 2))).setName("items").map(identity).setName("m").aggregate(Counting).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("items", "m") == EdgeKind.Local && dag.lp("m") == 4)
    assert(dag.kind("m", "aggregate-accumulate") == EdgeKind.Local)
    assert(dag.kind("aggregate-combine", "out") == EdgeKind.Isolated)
  }

  //  df(4) ~~isolated~~> m(4) ~~partitioned by name~~> mapStateful(4) [restore] ==isolated==> out(4)
  //  (df assigns sequence ids)
  test("a keyed shuffle into an order-sensitive stage restores order by sequence ids assigned at the source") {
    val p = Pipeline.create(true)
    wideSource(p).map(identity).setName("m").groupingKey(name).mapStateful(() => 0, keyedStateful).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.edge("df", "m") == Edge("df", 0, "m", 0, EdgeKind.Isolated, carriesSequence = true))
    assert(dag.edge("m", "mapStateful") ==
      Edge("m", 0, "mapStateful", 0, EdgeKind.Partitioned(name), restoresSequence = true, carriesSequence = true))
    assert(dag.edge("mapStateful", "out") == Edge("mapStateful", 0, "out", 0, EdgeKind.Isolated))
    assert(dag.vertices.filter(_.assignsSequence).map(_.name) == Seq("df"))
  }

  //  items(1) ==partitioned by name==> mapStateful(4)    (one sender: its order survives the shuffle)
  test("a shuffle from a single sender needs no sequence restore") {
    val p = Pipeline.create(true)
    p.readFrom(Sources.items(Seq(1))).setName("items").groupingKey(name).mapStateful(() => 0, keyedStateful).writeTo(list())
    val dag = p.plan(4)
    assert(dag.edge("items", "mapStateful") == Edge("items", 0, "mapStateful", 0, EdgeKind.Partitioned(name)))
    assert(!dag.vertices.exists(_.assignsSequence))
  }

  //  df(4) ~~partitioned by name~~> m(4) [restore] ==isolated==> out(4)
  test("rebalance(key) upstream of an order-sensitive stage is a keyed shuffle with a sequence-restore point") {
    val p = Pipeline.create(true)
    wideSource(p).rebalance(name).map(identity).setName("m").writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.edge("df", "m") == Edge("df", 0, "m", 0, EdgeKind.Partitioned(name), restoresSequence = true, carriesSequence = true))
    assert(dag.kind("m", "out") == EdgeKind.Isolated)
    assert(dag.vertex("df").assignsSequence)
  }

  test("rebalance() without a key upstream of an order-sensitive stage is a definition error naming stage and rule") {
    val p = Pipeline.create(true)
    wideSource(p).rebalance().map(identity).setName("m").filter((_: Any) => true).writeTo(list()).setName("out")
    val error = intercept[PipelineDefinitionError](p.plan(4))
    assert(error.rule == PipelineDefinitionError.UnkeyedRebalanceBreaksOrder)
    assert(error.stage == "df")
    assert(error.getMessage.contains("'df'") && error.getMessage.contains("'out'") &&
      error.getMessage.contains(PipelineDefinitionError.UnkeyedRebalanceBreaksOrder))

    // The same pipeline without preserveOrder is fine.
    p.setPreserveOrder(false)
    assert(p.plan(4).kind("df", "fused(m, filter)") == EdgeKind.RoundRobin)
  }

  //  df(4) ~~rebalance()~~> aggregate(toList): refused, though order makes it one stage whose all-to-one
  //  edge would absorb the round-robin: the user asked to spread items that must stay in order
  //  df(4) ~~rebalance()~~> groupingKey(age).aggregate(toList): allowed (design doc 008: the grouping key's
  //  partitioning overrides the rebalance, so nothing is spread): df(4) ==partitioned by age==> lists [restore]
  test("rebalance() without a key into an order-sensitive global aggregation is refused; into a keyed one it spreads nothing") {
    def pipeline(keyed: Boolean) = {
      val p = Pipeline.create(true)
      val rebalanced = wideSource(p).rebalance()
      (if (keyed) rebalanced.groupingKey(age).aggregate(ToList) else rebalanced.aggregate(ToList)).setName("lists")
        .writeTo(list()).setName("out")
      p
    }
    val error = intercept[PipelineDefinitionError](pipeline(keyed = false).plan(4))
    assert(error.rule == PipelineDefinitionError.UnkeyedRebalanceBreaksOrder && error.stage == "df")
    assert(error.getMessage.contains("'lists'"), error.getMessage)
    assert(pipeline(keyed = false).setPreserveOrder(false).plan(4).kind("df", "lists-accumulate") == EdgeKind.RoundRobin)
    val keyed = pipeline(keyed = true).plan(4)
    assert(keyed.kind("df", "lists") == EdgeKind.Partitioned(age))
    assert(keyed.edge("df", "lists").restoresSequence)
  }

  //  df(4) ==round-robin==> aggregate-accumulate(4) ==all-to-one==> aggregate-combine(1) ==isolated==> out(1)
  test("rebalance() before an order-producing stage is allowed with preserveOrder") {
    val p = Pipeline.create(true)
    wideSource(p).rebalance().aggregate(Counting).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "aggregate-accumulate") == EdgeKind.RoundRobin)
    assert(dag.kind("aggregate-combine", "out") == EdgeKind.Isolated)
  }

  // The diamond: A splits rows by sign into B and C, which merge again into D.
  //
  //            ~~isolated~~> fused(negative, B)(4) ~~isolated~~\
  //  A=df(4)                                                     merge(4, ordered by sequence) ~~partitioned by key~~> D(4) [restore] ==> out
  //            ~~isolated~~> fused(positive, C)(4) ~~isolated~~/
  test("the diamond: a merge of branches forked from one stream is an ordered merge by sequence") {
    def plan(preserve: Boolean) = {
      val p = Pipeline.create(preserve)
      val a = wideSource(p, "A")
      val b = a.filter((_: Any) => true).setName("negative").map(identity).setName("B")
      val c = a.filter((_: Any) => true).setName("positive").map(identity).setName("C")
      b.merge(c).groupingKey("key").mapStateful(() => 0, keyedStateful).setName("D").writeTo(list()).setName("out")
      p.plan(4)
    }
    val on = plan(preserve = true)
    val (nb, nc) = ("fused(negative, B)", "fused(positive, C)")
    assert(on.vertex("merge").description == VertexDescription.Merge(2, orderedBySequence = true))
    assert(Seq(on.edge("A", nb), on.edge("A", nc), on.edge(nb, "merge"), on.edge(nc, "merge"))
      .forall(e => e.kind == EdgeKind.Isolated && e.carriesSequence))
    assert(Seq(nb, nc, "merge", "D").map(on.lp) == Seq(4, 4, 4, 4))
    assert(on.edge("merge", "D").kind == EdgeKind.Partitioned(Extractor.FieldName("key")))
    assert(on.edge("merge", "D").restoresSequence)
    assert(on.vertices.filter(_.assignsSequence).map(_.name) == Seq("A"))

    val off = plan(preserve = false)
    assert(off.vertex("merge").description == VertexDescription.Merge(2, orderedBySequence = false))
    assert(off.edgesInto("merge").forall(_.kind == EdgeKind.Local))
    assert(!off.edges.exists(e => e.carriesSequence || e.restoresSequence))
  }

  // A branch re-partitions between fork and merge: partition i of B holds other rows than partition i of C,
  // so the branches are gathered into one processor, each restored to sequence order on the way.
  //
  //            ~~partitioned by key~~> B=mapStateful(4) [restore] ~~all-to-one~~\
  //  A=df(4)                                                                   merge(1, ordered by sequence) ==> out(1)
  //            ~~isolated~~> C(4) ~~all-to-one~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~/  [restore on both inputs]
  test("the diamond with a keyed stage in a branch gathers its branches into one ordered merge") {
    val p = Pipeline.create(true)
    val a = wideSource(p, "A")
    val b = a.groupingKey("key").mapStateful(() => 0, keyedStateful).setName("B")
    val c = a.map(identity).setName("C")
    b.merge(c).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.vertex("merge").description == VertexDescription.Merge(2, orderedBySequence = true))
    assert(dag.lp("merge") == 1 && dag.lp("out") == 1)
    assert(dag.edge("A", "B") == Edge("A", 0, "B", 0, EdgeKind.Partitioned(Extractor.FieldName("key")), restoresSequence = true,
      carriesSequence = true))
    assert(dag.edge("A", "C") == Edge("A", 1, "C", 0, EdgeKind.Isolated, carriesSequence = true))
    assert(dag.edgesInto("merge") == Seq(Edge("B", 0, "merge", 0, EdgeKind.AllToOne, restoresSequence = true, carriesSequence = true),
      Edge("C", 0, "merge", 1, EdgeKind.AllToOne, restoresSequence = true, carriesSequence = true)))
    assert(dag.vertices.filter(_.assignsSequence).map(_.name) == Seq("A"))
    assert(dag.explain().contains("ordered merge by sequence: merge"))
  }

  //            ~~isolated~~> B(4) ~~all-to-one~~\
  //  A=df(4)                                     merge(1, ordered by sequence) [restore on both inputs]
  //            ~~partitioned by key~~> C(4) [restore] ~~all-to-one~~/    (rebalance(key) before C)
  test("the diamond with rebalance(key) in a branch gathers its branches too") {
    val p = Pipeline.create(true)
    val a = wideSource(p, "A")
    a.map(identity).setName("B").merge(a.rebalance("key").map(identity).setName("C")).writeTo(list())
    val dag = p.plan(4)
    assert(dag.lp("merge") == 1 && dag.edgesInto("merge").forall(e => e.kind == EdgeKind.AllToOne && e.restoresSequence))
    assert(dag.edge("A", "C").kind == EdgeKind.Partitioned(Extractor.FieldName("key")) && dag.edge("A", "C").restoresSequence)
  }

  // Five branches of one fork, merged two at a time: every merge orders by sequence, partition by partition.
  //
  //  df(4) ~~isolated~~> b0(4), b1(4) ~~> merge(4) ~~> merge-2(4) ~~> merge-3(4) ~~> merge-4(4) ==> out
  //                      b2(4) ~~~~~~~~~~~~~~~~~~~~~~~~~~^             ^             ^
  //                      b3(4) ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~/             |
  //                      b4(4) ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~/
  //  With b2 keyed instead (groupingKey.mapStateful), merge-2 and every merge after it are gathered (1).
  test("a diamond of five branches is merged partition by partition, or gathered from the first merge a keyed branch reaches") {
    def plan(keyedBranch: Boolean) = {
      val p = Pipeline.create(true)
      val a = wideSource(p, "A")
      val branches = (0 until 5).map { i =>
        if (keyedBranch && i == 2) a.groupingKey("key").mapStateful(() => 0, keyedStateful).setName(s"b$i")
        else a.map(identity).setName(s"b$i")
      }
      branches.reduce(_ merge _).writeTo(list()).setName("out")
      p.plan(4)
    }
    val merges = Seq("merge", "merge-2", "merge-3", "merge-4")
    val aligned = plan(keyedBranch = false)
    assert(merges.forall(m => aligned.vertex(m).description == VertexDescription.Merge(2, orderedBySequence = true)))
    assert(merges.map(aligned.lp) == Seq(4, 4, 4, 4))
    assert(merges.flatMap(aligned.edgesInto).forall(e => e.kind == EdgeKind.Isolated && e.carriesSequence && !e.restoresSequence))

    val gathered = plan(keyedBranch = true)
    assert(merges.map(gathered.lp) == Seq(4, 1, 1, 1))
    assert(gathered.edgesInto("merge").forall(_.kind == EdgeKind.Isolated))
    assert(merges.tail.flatMap(gathered.edgesInto).forall(_.kind == EdgeKind.AllToOne))
    // restored where a branch has several senders: every input but the one from a gathered merge
    assert(merges.tail.flatMap(gathered.edgesInto).map(e => e.from -> e.restoresSequence) ==
      Seq("merge" -> true, "b2" -> true, "merge-2" -> false, "b3" -> true, "merge-3" -> false, "b4" -> true))
  }

  //  a(4) ==isolated==> merge(4, arrival order) <==isolated== b(4)
  test("a merge of independent streams keeps each input's order but is not ordered by sequence") {
    val p = Pipeline.create(true)
    wideSource(p, "a").merge(wideSource(p, "b")).writeTo(list())
    val dag = p.plan(4)
    assert(dag.vertex("merge").description == VertexDescription.Merge(2, orderedBySequence = false))
    assert(dag.edgesInto("merge").map(_.kind) == Seq(EdgeKind.Isolated, EdgeKind.Isolated))
  }

  //  on:  df(4) ~~partitioned by name~~> aggregate(4, single stage) [restore]
  //  off: df(4) --local--> aggregate-accumulate(4) ==partitioned==> aggregate-combine(4)
  test("an order-sensitive aggregation (to-list) is single-stage with preserveOrder and restores order at its shuffle") {
    def plan(preserve: Boolean) = {
      val p = Pipeline.create(preserve)
      wideSource(p).groupingKey(name).aggregate(ToList).writeTo(list())
      p.plan(4)
    }
    val on = plan(preserve = true)
    assert(on.vertex("aggregate").description == VertexDescription.Aggregate(SingleStage, Seq(ToList), Seq(name)))
    assert(on.edge("df", "aggregate") ==
      Edge("df", 0, "aggregate", 0, EdgeKind.Partitioned(name), restoresSequence = true, carriesSequence = true))
    assert(plan(preserve = false).names.contains("aggregate-accumulate"))
  }

  //  src0(4) ==isolated==> hashJoin(4) <==broadcast== src1(4)      src1 keeps no order
  test("a hash join keeps its primary input's order; its enriching side is broadcast and needs none") {
    val p = Pipeline.create(true)
    wideSource(p, "src0").hashJoin(wideSource(p, "src1").map(identity).setName("e").setLocalParallelism(2), JoinClause.on("id", "id"))
      .writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("src0", "hashJoin") == EdgeKind.Isolated)
    assert(dag.kind("e", "hashJoin") == EdgeKind.Broadcast)
    assert(dag.kind("src1", "e") == EdgeKind.Local && dag.lp("e") == 2)
  }

  //  df(4) ~~all-to-one~~> mapStateful(1) [restore] ==isolated==> out(1)
  test("an all-to-one edge from several senders into an order-sensitive stage restores order by sequence") {
    val p = Pipeline.create(true)
    wideSource(p).mapStateful(() => 0, stateful).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.edge("df", "mapStateful").restoresSequence)
    assert(dag.kind("mapStateful", "out") == EdgeKind.Isolated && dag.lp("out") == 1)
  }

  //  df(4) --local--> aggregate-accumulate(4) ==partitioned==> aggregate-combine(4, assigns sequence ids)
  //        ~~isolated~~> m(4) ~~partitioned by age~~> mapStateful(4) [restore] ==isolated==> out(4)
  test("where order is needed only after an order producer, sequence ids start at the producer, not the source") {
    val p = Pipeline.create(true)
    wideSource(p).groupingKey(name).aggregate(Counting).map(identity).setName("m")
      .groupingKey(age).mapStateful(() => 0, keyedStateful).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.vertices.filter(_.assignsSequence).map(_.name) == Seq("aggregate-combine"))
    assert(dag.edge("df", "aggregate-accumulate") == Edge("df", 0, "aggregate-accumulate", 0, EdgeKind.Local))
    assert(dag.edge("aggregate-combine", "m") == Edge("aggregate-combine", 0, "m", 0, EdgeKind.Isolated, carriesSequence = true))
    assert(dag.edge("m", "mapStateful").restoresSequence)
    assert(dag.explain().contains("assigns sequence ids (processor, offset)"))
  }
}
