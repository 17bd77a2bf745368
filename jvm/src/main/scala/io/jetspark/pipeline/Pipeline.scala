package io.jetspark.pipeline

import scala.collection.mutable.ArrayBuffer

import io.jetspark.pipeline.definition.{BatchSource, StreamSource}
import io.jetspark.pipeline.transform.{BatchSourceTransform, StreamSourceTransform, Transform}
import io.jetspark.plan.{LogicalGraph, PhysicalDag, Planner}

/** A pipeline: a logical DAG of transforms built through stages.
  *
  * {{{
  * val p = Pipeline.create()
  * p.readFrom(Sources.items(Seq(1, 2, 3))).map((x: Any) => x.asInstanceOf[Int] * 2).writeTo(Sinks.list("out"))
  * println(p.explain())
  * }}}
  * With `preserveOrder`, every order-sensitive stage (stateful mapping, rolling aggregation, order-dependent
  * aggregations, sinks) sees its input in encounter order (design doc 015), at some cost of parallelism.
  * Definition errors that depend on the whole pipeline are raised when it is planned (`explain`, `toDot`,
  * job submission) as [[PipelineDefinitionError]].
  */
final class Pipeline private (private var preserveOrderValue: Boolean) {
  private val transformsBuffer = ArrayBuffer.empty[Transform]

  def preserveOrder: Boolean = preserveOrderValue

  /** Jet's `setPreserveOrder`; returns this pipeline. */
  def setPreserveOrder(value: Boolean): Pipeline = {
    preserveOrderValue = value
    this
  }

  def readFrom(source: BatchSource): BatchStage = new BatchStage(this, add(new BatchSourceTransform(source)))

  /** A stream stage that must choose its timestamps before anything else is attached. */
  def readFrom(source: StreamSource): StreamSourceStage = new StreamSourceStage(this, add(new StreamSourceTransform(source)))

  /** Every transform, in creation order (a topological order of the logical DAG). */
  def transforms: Seq[Transform] = transformsBuffer.toSeq

  /** The logical DAG as it stands: the transforms and their downstream links. */
  def logicalGraph: LogicalGraph = new LogicalGraph(transforms, preserveOrder)

  /** The transforms reading `t`'s output, with the input ordinal at which each reads it. */
  def downstream(t: Transform): Seq[(Transform, Int)] = logicalGraph.downstream(t)

  /** Plans this pipeline with `defaultParallelism` as every vertex's parallelism unless decided otherwise. */
  def plan(defaultParallelism: Int): PhysicalDag = Planner.plan(logicalGraph, defaultParallelism)

  def explain(defaultParallelism: Int): String = plan(defaultParallelism).explain()
  def explain(): String = explain(Pipeline.defaultExplainParallelism)
  def toDot(defaultParallelism: Int): String = plan(defaultParallelism).toDot()
  def toDot(): String = toDot(Pipeline.defaultExplainParallelism)

  private[pipeline] def add[T <: Transform](t: T): T = {
    t.idValue = transformsBuffer.size
    // Names identify stages in plans, errors, metrics and dead letters: a second `map` is `map-2`.
    val taken = transformsBuffer.iterator.map(_.name).toSet
    if (taken(t.name)) t.name = Iterator.from(2).map(i => s"${t.name}-$i").find(!taken(_)).get
    transformsBuffer += t
    t
  }
}

object Pipeline {
  def create(): Pipeline = new Pipeline(false)
  def create(preserveOrder: Boolean): Pipeline = new Pipeline(preserveOrder)

  /** Parallelism `explain()` and `toDot()` plan with: one per core, as a local Spark gives. */
  def defaultExplainParallelism: Int = Runtime.getRuntime.availableProcessors()
}
