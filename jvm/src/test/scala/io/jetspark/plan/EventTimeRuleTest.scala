package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.pipeline.definition.PipelineDefinitionError.WindowTimestampsFromItems
import io.jetspark.pipeline.transform.{DistinctTransform, Rebalance, WindowAggregateTransform}
import io.jetspark.plan.PlanTestSupport._

/** Which stages carry their items' timestamps to a window (`EventTimeRule`), and `addTimestamps` on batch stages.
  * Default parallelism 4.
  */
class EventTimeRuleTest extends AnyFunSuite {

  private val ts = Extractor.FieldName("ts")

  //  df(4) --local--> addTimestamps(4) --local--> fused(map, flatMap, filter)(4) --local--> windowAggregate-accumulate(4)
  //        ==partitioned by name (extracted)==> windowAggregate-combine(4) --> out
  test("stateless stages between addTimestamps and the window carry the items' timestamps, whatever they make of the items") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).map(identity).flatMap((x: Any) => Seq(x, x)).filter((_: Any) => true)
      .groupingKey(name).window(WindowDefinition.sliding(10, 5)).aggregate(Counting).writeTo(list())
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "addTimestamps", "fused(map, flatMap, filter)", "windowAggregate-accumulate",
      "windowAggregate-combine", "list-sink"))
    assert(dag.vertex("addTimestamps").description == VertexDescription.AddTimestamps(ts, 0))
    assert(dag.kind("df", "addTimestamps") == EdgeKind.Local &&
      dag.kind("fused(map, flatMap, filter)", "windowAggregate-accumulate") == EdgeKind.Local)
  }

  //  df --> addTimestamps --> mapStateful --> rollingAggregate --> hashJoin(enriching: df-b) --> window
  //  each output keeps the time of the item it was emitted for (the join: of its streamed item), as in Jet
  test("mapStateful, rollingAggregate and the streamed side of a hash join carry the items' timestamps to a window") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).mapStateful(() => 0, (s: Any, x: Any) => (s, x)).rollingAggregate(Counting)
      .hashJoin(wideSource(p, "b").distinct(), JoinClause.on(name, name))
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list())
    assert(p.plan(4).vertices.exists(_.name.startsWith("windowAggregate")))
  }

  //  df --> addTimestamps --> distinct --> windowAggregate: distinct keeps no single item's time. The API
  //  offers distinct (and sort, aggregations) on batch stages only, so the transforms are put together here.
  test("a stage that makes new items between addTimestamps and the window is a definition error naming it") {
    val stamped = wideSource(Pipeline.create()).addTimestamps(ts, 0).transform
    val distinct = new DistinctTransform(stamped, Rebalance.None, Extractor.WholeItem)
    val window = new WindowAggregateTransform(distinct, Rebalance.None, WindowDefinition.tumbling(10), Counting, None)
    val error = intercept[PipelineDefinitionError](EventTimeRule.requireCarried(window))
    assert(error.rule == WindowTimestampsFromItems && error.getMessage.contains("'distinct'"), error.getMessage)
  }

  //  a --> addTimestamps(ts) --\
  //                             merge --> window       each item keeps its own branch's time
  //  b --> addTimestamps(at) --/
  test("a merge carries the timestamps of inputs stamped in different ways") {
    val p = Pipeline.create()
    wideSource(p, "a").addTimestamps(ts, 0).merge(wideSource(p, "b").addTimestamps(Extractor.FieldName("at"), 0))
      .window(WindowDefinition.session(5)).aggregate(Counting).writeTo(list())
    assert(p.plan(4).vertex("windowAggregate").description.isInstanceOf[VertexDescription.WindowAggregate])
  }

  test("a window of window results and windows of a stream source's stamped items plan without a definition error") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).window(WindowDefinition.tumbling(10)).aggregate(Counting).map(identity)
      .window(WindowDefinition.tumbling(100)).aggregate(Counting).writeTo(list())
    p.readFrom(Sources.rateStream(10)).withTimestamps("timestamp", 0)
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list("rates"))
    p.readFrom(Sources.rateStream(10)).withIngestionTimestamps()
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list("ingested"))
    val windows = p.plan(4).vertices.collect { case Vertex(name, _: VertexDescription.WindowAggregate, _, _, _) => name }
    assert(Seq("windowAggregate", "windowAggregate-2", "windowAggregate-3", "windowAggregate-4").forall(w => windows.exists(_.startsWith(w))))
  }

  test("addTimestamps is order-insensitive: a batch has no watermark inside it for the order to move") {
    val p = Pipeline.create(true)
    wideSource(p).addTimestamps(ts, 0).groupingKey(name).window(WindowDefinition.tumbling(10)).aggregate(Counting)
      .writeTo(list())
    val dag = p.plan(4)
    assert(dag.kind("df", "addTimestamps") == EdgeKind.Local)
    assert(!dag.edges.exists(e => e.restoresSequence || e.carriesSequence))
  }
}
