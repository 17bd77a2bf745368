package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.AggregationStage._
import io.jetspark.plan.PlanTestSupport._

/** One or two aggregation stages. Default parallelism 4. */
class AggregationStageRuleTest extends AnyFunSuite {

  private def stageOf(dag: PhysicalDag, vertex: String): AggregationStage = dag.vertex(vertex).description match {
    case VertexDescription.Aggregate(stage, _, _) => stage
    case VertexDescription.WindowAggregate(stage, _, _, _) => stage
    case other => fail(s"$vertex is not an aggregation: $other")
  }

  //  df(4) --local--> aggregate-accumulate(4) ==all-to-one==> aggregate-combine(1) --> out(1)
  test("a global aggregation with a combinable operation has two stages, the second on one processor") {
    val p = Pipeline.create()
    wideSource(p).aggregate(Counting).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "aggregate-accumulate", "aggregate-combine", "out"))
    assert(dag.kind("df", "aggregate-accumulate") == EdgeKind.Local)
    assert(dag.kind("aggregate-accumulate", "aggregate-combine") == EdgeKind.AllToOne)
    assert(stageOf(dag, "aggregate-accumulate") == Accumulate && stageOf(dag, "aggregate-combine") == Combine)
    assert(dag.lp("aggregate-accumulate") == 4 && dag.lp("aggregate-combine") == 1)
  }

  //  df(4) --local--> aggregate-accumulate(3) ==partitioned by name (extracted)==> aggregate-combine(3)
  test("a keyed aggregation has two stages joined by an edge partitioned by the grouping key; its parallelism applies to both") {
    val p = Pipeline.create()
    wideSource(p).groupingKey(name).aggregate(Counting).setLocalParallelism(3).writeTo(list())
    val dag = p.plan(4)
    assert(dag.kind("aggregate-accumulate", "aggregate-combine") == EdgeKind.Partitioned(name, preExtracted = true))
    assert(dag.lp("aggregate-accumulate") == 3 && dag.lp("aggregate-combine") == 3)
  }

  //  df(4) ==all-to-one==> aggregate(1)              df(4) ==partitioned by name==> aggregate(4)
  test("an operation that cannot combine makes the aggregation single-stage, global or keyed") {
    val global = Pipeline.create()
    wideSource(global).aggregate(Last).writeTo(list())
    val g = global.plan(4)
    assert(g.kind("df", "aggregate") == EdgeKind.AllToOne && g.lp("aggregate") == 1)
    assert(stageOf(g, "aggregate") == SingleStage)

    val keyed = Pipeline.create()
    wideSource(keyed).groupingKey(name).aggregate(Last).writeTo(list())
    val k = keyed.plan(4)
    assert(k.kind("df", "aggregate") == EdgeKind.Partitioned(name) && k.lp("aggregate") == 4)
    assert(stageOf(k, "aggregate") == SingleStage)
  }

  //  a(4) --local--> aggregate2-accumulate(4) <--local-- b(4)
  //                  ==all-to-one==> aggregate2-combine(1)
  test("a global aggregate2 accumulates both inputs locally, then combines on one processor") {
    val p = Pipeline.create()
    wideSource(p, "a").aggregate2(wideSource(p, "b"), Counting, Counting).writeTo(list())
    val dag = p.plan(4)
    assert(dag.edgesInto("aggregate2-accumulate").map(e => (e.from, e.toOrdinal, e.kind)) ==
      Seq(("a", 0, EdgeKind.Local), ("b", 1, EdgeKind.Local)))
    assert(dag.kind("aggregate2-accumulate", "aggregate2-combine") == EdgeKind.AllToOne)
  }

  private def windowed(w: WindowDefinition, keyed: Boolean): PhysicalDag = {
    val p = Pipeline.create()
    val s = p.readFrom(Sources.rateStream(100, 4)).setName("rate").withTimestamps("timestamp", 10)
    (if (keyed) s.groupingKey(name).window(w).aggregate(Counting) else s.window(w).aggregate(Counting)).writeTo(list())
    p.plan(4)
  }

  //  rate(4) --local--> windowAggregate-accumulate(4) ==partitioned by name (extracted)==> windowAggregate-combine(4)
  //  rate(4) --local--> windowAggregate-accumulate(4) ==all-to-one==> windowAggregate-combine(1)
  test("sliding and tumbling windows aggregate in two stages (frames, then windows)") {
    val keyed = windowed(WindowDefinition.sliding(10, 5), keyed = true)
    assert(keyed.kind("rate", "windowAggregate-accumulate") == EdgeKind.Local)
    assert(keyed.kind("windowAggregate-accumulate", "windowAggregate-combine") == EdgeKind.Partitioned(name, preExtracted = true))
    val global = windowed(WindowDefinition.tumbling(10), keyed = false)
    assert(global.kind("windowAggregate-accumulate", "windowAggregate-combine") == EdgeKind.AllToOne)
    assert(global.lp("windowAggregate-combine") == 1)
  }

  //  rate(4) ==partitioned by name==> windowAggregate(4, single stage)
  test("session windows and windows with early results aggregate in a single stage") {
    for (w <- Seq(WindowDefinition.session(10), WindowDefinition.tumbling(10).setEarlyResultsPeriod(5))) {
      val dag = windowed(w, keyed = true)
      assert(dag.kind("rate", "windowAggregate") == EdgeKind.Partitioned(name), w)
      assert(stageOf(dag, "windowAggregate") == SingleStage, w)
    }
  }

  //  rate(4) ==partitioned by name==> windowAggregate(4, single stage)
  //  df(4) --local--> windowAggregate-accumulate(4) ==partitioned by name (extracted)==> windowAggregate-combine(4)
  test("a window of a user-defined operation is single-stage over a stream (Python keeps it across epochs), two-stage over a batch") {
    val userDefined = PythonAggregateSpec("""{"name": "all_of", "extractors": [], "parts": [
      {"name": "counting", "extractors": []}, {"name": "custom", "extractors": [], "ref": 0}]}""",
      canCombineSpec = true, canDeductSpec = false, orderSensitive = false)
    val stream = Pipeline.create()
    stream.readFrom(Sources.rateStream(100, 4)).setName("rate").withTimestamps("timestamp", 10)
      .groupingKey(name).window(WindowDefinition.sliding(10, 5)).aggregate(userDefined).writeTo(list())
    val s = stream.plan(4)
    assert(s.kind("rate", "windowAggregate") == EdgeKind.Partitioned(name))
    assert(stageOf(s, "windowAggregate") == SingleStage)

    val batch = Pipeline.create()
    wideSource(batch).addTimestamps("ts", 0).groupingKey(name).window(WindowDefinition.sliding(10, 5)).aggregate(userDefined)
      .writeTo(list())
    val b = batch.plan(4)
    assert(stageOf(b, "windowAggregate-accumulate") == Accumulate && stageOf(b, "windowAggregate-combine") == Combine)
  }

  //  df(4) --local--> sort-local(4) ==all-to-one==> sort-merge(1) ==isolated==> out(1)
  test("a sort sorts runs locally, then merges them on one processor, which feeds its sink in order") {
    val p = Pipeline.create()
    wideSource(p).sort(name).writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.kind("df", "sort-local") == EdgeKind.Local)
    assert(dag.kind("sort-local", "sort-merge") == EdgeKind.AllToOne)
    assert(dag.kind("sort-merge", "out") == EdgeKind.Isolated)
    assert(dag.lp("sort-local") == 4 && dag.lp("sort-merge") == 1 && dag.lp("out") == 1)
  }

  //  df(4) ==partitioned by whole item==> distinct(4)
  test("distinct partitions by the whole item, or by the grouping key") {
    val p = Pipeline.create()
    wideSource(p).distinct().writeTo(list("a"))
    wideSource(p, "k").groupingKey(name).distinct().writeTo(list("b"))
    val dag = p.plan(4)
    assert(dag.kind("df", "distinct") == EdgeKind.Partitioned(Extractor.WholeItem))
    assert(dag.kind("k", "distinct-2") == EdgeKind.Partitioned(name))
  }
}
