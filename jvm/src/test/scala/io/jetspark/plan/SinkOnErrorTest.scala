package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.PlanTestSupport._

/** A sink that turns items into rows (files, foreachBatch) can fail on a record; its `onError` routes
  * those records to a dead-letter sink like any stage's. Other sinks never fail on a record.
  */
class SinkOnErrorTest extends AnyFunSuite {

  test("onError of a files sink gives it an error edge to a dead-letter vertex") {
    val p = Pipeline.create()
    wideSource(p).writeTo(Sinks.files("/tmp/out")).setName("archive").onError(Sinks.deadLetter("misfits"))
    val dag = p.plan(4)
    assert(dag.vertex("archive-dead-letter").description == VertexDescription.Sink(Sinks.deadLetter("misfits")))
    assert(dag.edgesFrom("archive") == Seq(Edge("archive", 0, "archive-dead-letter", 0, EdgeKind.Isolated, errorsOf = Some("archive"))))
    assert(dag.vertex("archive-dead-letter").localParallelism == dag.vertex("archive").localParallelism)
  }

  test("onError of a sink that never fails on a record is a definition error naming the sink") {
    val p = Pipeline.create()
    val error = intercept[PipelineDefinitionError](wideSource(p).writeTo(list()).setName("out").onError(Sinks.deadLetter("bad")))
    assert(error.stage == "out" && error.rule == PipelineDefinitionError.OnErrorSink, error.getMessage)
  }

  test("onError of a rows sink takes only a dead-letter sink") {
    val p = Pipeline.create()
    wideSource(p).writeTo(Sinks.foreachBatch("fn")).setName("each").onError(list())
    val error = intercept[PipelineDefinitionError](p.plan(4))
    assert(error.stage == "each" && error.rule == PipelineDefinitionError.OnErrorSink, error.getMessage)
  }
}
