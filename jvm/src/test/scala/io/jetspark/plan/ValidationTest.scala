package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.pipeline.definition.PipelineDefinitionError._
import io.jetspark.plan.PlanTestSupport._

/** Definition errors: each names the stage and the rule. */
class ValidationTest extends AnyFunSuite {

  private def assertBreaks(stage: String, rule: String)(body: => Any): PipelineDefinitionError = {
    val error = intercept[PipelineDefinitionError](body)
    assert(error.rule == rule, error.getMessage)
    assert(error.stage == stage, error.getMessage)
    assert(error.getMessage.contains(s"'$stage'") && error.getMessage.contains(s"'$rule'"), error.getMessage)
    error
  }

  test("stages of the same kind get distinct default names; two stages named alike by the user are an error") {
    val p = Pipeline.create()
    val mapped = wideSource(p).map(identity).map(identity)
    assert(Seq(mapped.name, p.transforms(1).name) == Seq("map-2", "map"))
    mapped.writeTo(list())
    p.plan(4)
    wideSource(p).map(identity).setName("map").writeTo(list())
    assertBreaks("map", UniqueStageNames)(p.plan(4))
  }

  test("a stage that is not a sink and has nothing attached is an error at plan time") {
    val p = Pipeline.create()
    val src = wideSource(p)
    src.writeTo(list())
    src.map(identity).setName("dangling")
    assertBreaks("dangling", UnattachedStage)(p.plan(4))
  }

  test("a stage with only a dead-letter sink attached is still unattached") {
    val p = Pipeline.create()
    wideSource(p).map(identity).setName("m").onError(Sinks.deadLetter("bad"))
    assertBreaks("m", UnattachedStage)(p.plan(4))
  }

  test("a stream source without a timestamp choice is an error") {
    val p = Pipeline.create()
    p.readFrom(Sources.rateStream(10)).setName("rate")
    assertBreaks("rate", StreamSourceTimestamps)(p.plan(4))
  }

  test("choosing timestamps twice is an error") {
    val p = Pipeline.create()
    val source = p.readFrom(Sources.rateStream(10)).setName("rate")
    source.withIngestionTimestamps()
    assertBreaks("rate", TimestampsAlreadyChosen)(source.withoutTimestamps())
  }

  test("a sliding window whose size is not a multiple of its slide is an error on construction") {
    assertBreaks("WindowDefinition.sliding(10, 3)", SlidingSizeMultipleOfSlide)(WindowDefinition.sliding(10, 3))
  }

  test("window sizes, slides, timeouts must be positive and early-results periods not negative") {
    assertBreaks("WindowDefinition.sliding(0, 0)", PositiveWindowValues)(WindowDefinition.tumbling(0))
    assertBreaks("WindowDefinition.sliding(10, -5)", PositiveWindowValues)(WindowDefinition.sliding(10, -5))
    assertBreaks("WindowDefinition.session(0)", PositiveWindowValues)(WindowDefinition.session(0))
    assertBreaks("WindowDefinition.sliding(10, 10)", PositiveWindowValues)(WindowDefinition.tumbling(10).setEarlyResultsPeriod(-1))
  }

  test("window() on a batch stage is an error: batch items have no event timestamps") {
    val p = Pipeline.create()
    assertBreaks("df", WindowNeedsTimestamps)(wideSource(p).window(WindowDefinition.tumbling(10)))
  }

  test("window() downstream of a stream read withoutTimestamps is an error at plan time") {
    val p = Pipeline.create()
    p.readFrom(Sources.rateStream(10)).setName("rate").withoutTimestamps()
      .map(identity).window(WindowDefinition.tumbling(10)).aggregate(Counting).writeTo(list())
    val error = assertBreaks("windowAggregate", WindowNeedsTimestamps)(p.plan(4))
    assert(error.getMessage.contains("'rate'"))
  }

  test("a window of window results needs no source timestamps: window ends are the timestamps") {
    val p = Pipeline.create()
    p.readFrom(Sources.rateStream(10)).withTimestamps("timestamp", 0)
      .window(WindowDefinition.tumbling(10)).aggregate(Counting)
      .window(WindowDefinition.tumbling(100)).aggregate(Counting).writeTo(list())
    assert(p.plan(4).vertices.size == 6)
  }

  test("a sliding or session window over an operation that cannot combine is an error; a tumbling one is not") {
    def windowOfLast(w: WindowDefinition): Pipeline = {
      val p = Pipeline.create()
      p.readFrom(Sources.rateStream(10)).withTimestamps("timestamp", 0).window(w).aggregate(Last).setName("last")
        .writeTo(list())
      p
    }
    val sliding = assertBreaks("last", WindowNeedsCombine)(windowOfLast(WindowDefinition.sliding(20, 10)).plan(4))
    assert(sliding.getMessage.contains("sliding(20ms, slide 10ms)"), sliding.getMessage)
    assertBreaks("last", WindowNeedsCombine)(windowOfLast(WindowDefinition.session(10)).plan(4))
    // One frame per window: nothing to combine, so one stage accumulates each window's items.
    val tumbling = windowOfLast(WindowDefinition.tumbling(10)).plan(4)
    assert(tumbling.vertices.exists(_.description.describe.contains("single stage")), tumbling.vertices)
  }

  test("stages of different pipelines cannot be combined") {
    val p1 = Pipeline.create()
    val p2 = Pipeline.create()
    assertBreaks("other", SamePipeline)(wideSource(p1).merge(wideSource(p2, "other")))
  }

  test("local parallelism must be positive or -1") {
    val p = Pipeline.create()
    val m = wideSource(p).map(identity)
    assertBreaks("map", LocalParallelism)(m.setLocalParallelism(0))
    assert(m.setLocalParallelism(-1).transform.localParallelism == -1)
  }

  test("aggregate takes an operation of arity 1") {
    val p = Pipeline.create()
    wideSource(p).aggregate(CountingBoth).writeTo(list())
    assertBreaks("aggregate", AggregateArity)(p.plan(4))
  }

  test("onError takes a dead-letter sink") {
    val p = Pipeline.create()
    wideSource(p).map(identity).onError(Sinks.console()).writeTo(list())
    assertBreaks("map", OnErrorSink)(p.plan(4))
  }

  test("a pipeline without a source is an error") {
    assertBreaks("pipeline", EmptyPipeline)(Pipeline.create().plan(4))
  }

  //  df(4) --local--> fused(m, f)(4) --local (output 0)--> out(4)
  //                   \==isolated, errors of m (output 1)==> m-dead-letter(4)
  test("onError routes a stage's failures to a dead-letter sink vertex over an error edge") {
    val p = Pipeline.create()
    wideSource(p).map(identity).setName("m").onError(Sinks.deadLetter("bad")).filter((_: Any) => true).setName("f")
      .writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.vertex("m-dead-letter").description == VertexDescription.Sink(Sinks.deadLetter("bad")))
    assert(dag.edgesFrom("fused(m, f)") == Seq(
      Edge("fused(m, f)", 0, "out", 0, EdgeKind.Local),
      Edge("fused(m, f)", 1, "m-dead-letter", 0, EdgeKind.Isolated, errorsOf = Some("m"))))
  }
}
