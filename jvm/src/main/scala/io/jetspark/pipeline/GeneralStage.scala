package io.jetspark.pipeline

import scala.jdk.CollectionConverters._

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, JoinClause, PipelineDefinitionError, SinkDefinition}
import io.jetspark.pipeline.transform._

/** What every stage shares: the transform whose output it stands for, and a pending rebalance that the
  * next transform attached to it takes on its input (`rebalance()` itself adds no transform).
  */
abstract class StageBase private[pipeline] (val pipeline: Pipeline, private[jetspark] val transform: Transform) {
  /** The stage's name (the transform's). */
  def name: String = transform.name

  protected def requireSamePipeline(other: StageBase): Unit =
    if (other.pipeline ne pipeline)
      throw new PipelineDefinitionError(other.transform.name, PipelineDefinitionError.SamePipeline,
        s"it belongs to another pipeline than '${transform.name}'")

  protected def applyLocalParallelism(n: Int): Unit = {
    if (n <= 0 && n != Transform.DefaultParallelism)
      throw new PipelineDefinitionError(transform.name, PipelineDefinitionError.LocalParallelism,
        s"local parallelism must be positive (or -1 for the default), was $n")
    transform.localParallelism = n
  }

  protected def applyName(n: String): Unit = {
    if (n == null || n.isEmpty) throw new IllegalArgumentException("a stage name must not be empty")
    transform.name = n
  }
}

/** The transforms of every batch and stream stage (API.md, "Transforms (every stage)"). `S` is the
  * concrete stage type, so `batch.map(f)` is a batch stage and `stream.map(f)` a stream stage.
  */
abstract class GeneralStage[S <: GeneralStage[S]] private[pipeline] (
    pipeline: Pipeline,
    transform: Transform,
    private[jetspark] val pendingRebalance: Rebalance,
) extends StageBase(pipeline, transform) {

  /** The stage standing for `t`'s output. */
  protected def stageOf(t: Transform, rebalance: Rebalance): S
  private def self: S = this.asInstanceOf[S]
  private def attach(t: Transform): S = stageOf(pipeline.add(t), Rebalance.None)

  def map(fn: Extractor): S = attach(new MapTransform(transform, pendingRebalance, fn))
  def map(fn: Any => Any): S = map(Extractor.ScalaFn(fn))

  def filter(fn: Extractor): S = attach(new FilterTransform(transform, pendingRebalance, fn))
  def filter(fn: Any => Boolean): S = filter(Extractor.ScalaFn(fn))

  /** `fn` returns an iterable; each of its elements is emitted. */
  def flatMap(fn: Extractor): S = attach(new FlatMapTransform(transform, pendingRebalance, fn))
  def flatMap(fn: Any => IterableOnce[Any]): S = flatMap(Extractor.ScalaFn(fn))

  /** Logs `fn(item)` for each item and passes the item on. */
  def peek(fn: Extractor): S = attach(new PeekTransform(transform, pendingRebalance, fn))
  def peek(): S = peek(Extractor.WholeItem)

  /** The items of this stage and `other`. Each side is rebalanced as requested on it. */
  def merge(other: S): S = {
    requireSamePipeline(other)
    attach(new MergeTransform(Seq(transform, other.transform), Seq(pendingRebalance, other.pendingRebalance)))
  }

  /** The next transform reads this stage over a distributed round-robin edge (design doc 008). */
  def rebalance(): S = stageOf(transform, Rebalance.RoundRobin)
  /** The next transform reads this stage over a distributed edge partitioned by `key`. */
  def rebalance(key: Extractor): S = stageOf(transform, Rebalance.ByKey(key))
  def rebalance(field: String): S = rebalance(Extractor.FieldName(field))

  def setLocalParallelism(n: Int): S = { applyLocalParallelism(n); self }
  def setName(n: String): S = { applyName(n); self }

  /** One state for the whole stage: `createFn(null)` gives it, `fn((state, item))` returns
    * `(newState, output)`; a null output emits nothing. Runs as one processor.
    */
  def mapStateful(createFn: Extractor, fn: Extractor): S =
    attach(new MapStatefulTransform(transform, pendingRebalance, None, createFn, fn))
  def mapStateful(createFn: () => Any, fn: (Any, Any) => (Any, Any)): S =
    mapStateful(Extractor.ScalaFn(_ => createFn()), Extractor.ScalaFn { args =>
      val (state, item) = args.asInstanceOf[(Any, Any)]
      fn(state, item)
    })

  /** The running result of `op` after each item. */
  def rollingAggregate(op: AggregateOperation[_, _, _]): S =
    attach(new RollingAggregateTransform(transform, pendingRebalance, None, op))

  /** Every item of this stage with the matching items of the enriching stages, one clause per stage;
    * `mapper` gets `(left, right1, ...)` with null where nothing matched (none: that tuple is the output).
    */
  def hashJoin(sides: Seq[(BatchStage, JoinClause)], mapper: Option[Extractor], inner: Boolean): S = {
    sides.foreach { case (stage, _) => requireSamePipeline(stage) }
    attach(new HashJoinTransform(
      transform +: sides.map(_._1.transform),
      pendingRebalance +: sides.map(_._1.pendingRebalance),
      sides.map(_._2), mapper, inner))
  }
  /** The same for Java and py4j callers: `others(i)` joins by `clauses(i)`; `mapper` may be null. */
  def hashJoin(others: java.util.List[BatchStage], clauses: java.util.List[JoinClause], mapper: Extractor, inner: Boolean): S = {
    if (others.size != clauses.size) throw new IllegalArgumentException(s"${others.size} enriching stages but ${clauses.size} join clauses")
    hashJoin(others.asScala.toSeq.zip(clauses.asScala), Option(mapper), inner)
  }
  def hashJoin(other: BatchStage, clause: JoinClause, mapper: Extractor): S = hashJoin(Seq(other -> clause), Some(mapper), inner = false)
  def hashJoin(other: BatchStage, clause: JoinClause): S = hashJoin(Seq(other -> clause), None, inner = false)
  def innerHashJoin(other: BatchStage, clause: JoinClause, mapper: Extractor): S = hashJoin(Seq(other -> clause), Some(mapper), inner = true)
  def innerHashJoin(other: BatchStage, clause: JoinClause): S = hashJoin(Seq(other -> clause), None, inner = true)

  def writeTo(sink: SinkDefinition): SinkStage =
    new SinkStage(pipeline, pipeline.add(new SinkTransform(transform, pendingRebalance, sink)))

  /** Records this stage's user function fails on go, with their errors, to `deadLetterSink` instead of
    * failing the job. Its key, value and timestamp extractors count as its functions (the grouping key
    * of the keyed stage before it, an operation's values, join keys, the timestamp, the key of a
    * `rebalance(key)` in front of it): such a record never enters the stage.
    */
  def onError(deadLetterSink: SinkDefinition): S = {
    transform.errorSink = Some(deadLetterSink)
    self
  }
}

/** A sink stage: the end of a branch. */
final class SinkStage private[pipeline] (pipeline: Pipeline, transform: Transform) extends StageBase(pipeline, transform) {
  def setLocalParallelism(n: Int): SinkStage = { applyLocalParallelism(n); this }
  def setName(n: String): SinkStage = { applyName(n); this }

  /** Records that a rows sink (files, foreachBatch) cannot turn into rows of its schema go, with their
    * errors, to `deadLetterSink` instead of failing the job; other sinks never fail on a record.
    */
  def onError(deadLetterSink: SinkDefinition): SinkStage = {
    val sink = transform.asInstanceOf[SinkTransform].sink
    if (!sink.takesRows) throw new PipelineDefinitionError(transform.name, PipelineDefinitionError.OnErrorSink,
      s"a ${sink.name} sink never fails on a record; onError is for sinks that turn items into rows (files, foreachBatch)")
    transform.errorSink = Some(deadLetterSink)
    this
  }
}
