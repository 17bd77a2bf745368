package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.PipelineDefinitionError.WindowTimestampsFromItems
import io.jetspark.plan.PlanTestSupport._

/** How windows read their items' timestamps (`EventTimeRule`), and `addTimestamps` on batch stages.
  * Default parallelism 4.
  */
class EventTimeRuleTest extends AnyFunSuite {

  private val ts = Extractor.FieldName("ts")

  private def windowTimestamp(dag: PhysicalDag, vertex: String): Option[Extractor] = dag.vertex(vertex).description match {
    case w: VertexDescription.WindowAggregate => w.timestamp
    case other => fail(s"$vertex is not a window: $other")
  }

  //  df(4) --local--> addTimestamps(4) --local--> filter(4) --local--> windowAggregate-accumulate(4)
  //        ==partitioned by name (extracted)==> windowAggregate-combine(4) --> out
  test("a window behind addTimestamps and a filter reads the timestamp with addTimestamps' extractor, in two stages") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).filter((_: Any) => true).groupingKey(name)
      .window(WindowDefinition.sliding(10, 5)).aggregate(Counting).writeTo(list())
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "addTimestamps", "filter", "windowAggregate-accumulate", "windowAggregate-combine", "list-sink"))
    assert(dag.vertex("addTimestamps").description == VertexDescription.AddTimestamps(ts, 0))
    assert(dag.kind("df", "addTimestamps") == EdgeKind.Local && dag.kind("filter", "windowAggregate-accumulate") == EdgeKind.Local)
    assert(windowTimestamp(dag, "windowAggregate-accumulate").contains(ts))
    assert(windowTimestamp(dag, "windowAggregate-combine").contains(ts))
  }

  //  df --> addTimestamps --> map --> windowAggregate: the map changes the items the window would read
  test("a stage that changes the items between addTimestamps and the window is a definition error naming both") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).map(identity).setName("reshape")
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list())
    val error = intercept[PipelineDefinitionError](p.plan(4))
    assert(error.rule == WindowTimestampsFromItems && error.stage == "windowAggregate", error.getMessage)
    assert(error.getMessage.contains("'reshape'"), error.getMessage)
  }

  //  a --> addTimestamps(ts) --\
  //                             merge --> window       same extractor: fine; another extractor: the merge is named
  //  b --> addTimestamps(?) ---/
  test("a merge of inputs timestamped by the same extractor passes the timestamp on; different extractors are an error") {
    def plan(other: Extractor): PhysicalDag = {
      val p = Pipeline.create()
      wideSource(p, "a").addTimestamps(ts, 0).merge(wideSource(p, "b").addTimestamps(other, 0)).setName("both")
        .window(WindowDefinition.session(5)).aggregate(Counting).writeTo(list())
      p.plan(4)
    }
    assert(windowTimestamp(plan(ts), "windowAggregate").contains(ts))
    val error = intercept[PipelineDefinitionError](plan(Extractor.FieldName("at")))
    assert(error.rule == WindowTimestampsFromItems && error.getMessage.contains("'both'"), error.getMessage)
  }

  test("a window of window results reads their end; a stream source's own timestamps reach its windows") {
    val p = Pipeline.create()
    wideSource(p).addTimestamps(ts, 0).window(WindowDefinition.tumbling(10)).aggregate(Counting)
      .window(WindowDefinition.tumbling(100)).aggregate(Counting).writeTo(list())
    p.readFrom(Sources.rateStream(10)).withTimestamps("timestamp", 0)
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list("rates"))
    p.readFrom(Sources.rateStream(10)).withIngestionTimestamps()
      .window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list("ingested"))
    val dag = p.plan(4)
    assert(windowTimestamp(dag, "windowAggregate-2-accumulate").contains(Extractor.FieldName("end")))
    assert(windowTimestamp(dag, "windowAggregate-3-accumulate").contains(Extractor.FieldName("timestamp")))
    assert(windowTimestamp(dag, "windowAggregate-4-accumulate").isEmpty)
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
