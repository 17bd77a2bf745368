package io.jetspark.engine.local

import io.jetspark.core.{Processor, ProcessorContext}
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.processor.{SequenceRestoreProcessor, Step, TransformProcessor}
import io.jetspark.core.window._
import io.jetspark.pipeline.definition.{SessionWindowDefinition, SlidingWindowDefinition, WindowDefinition}
import io.jetspark.plan.AggregationStage
import io.jetspark.engine.ListSinkRegistry
import io.jetspark.plan.{Edge, EdgeKind, PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription.{Sink, Sort, SortPhase}

/** A vertex the local engine cannot run (yet); raised when the job is submitted, before anything runs. */
final class UnsupportedVertexException(vertex: String, what: String)
    extends UnsupportedOperationException(s"vertex '$vertex' ($what): the local engine does not run this yet")

/** What the translations of a planned DAG into a [[LocalDag]] share ([[JvmVertices]], [[PythonVertices]]):
  * sources of given items, sinks, and edges.
  */
private[local] object LocalVertices {

  def unsupported(v: Vertex, what: String): Nothing = throw new UnsupportedVertexException(v.name, what)

  /** Edges that keep order by sequence ids are not run by the JVM functions' translation yet. */
  def requireNoSequenceOrdering(dag: PhysicalDag): Unit =
    dag.edges.find(e => e.restoresSequence || e.carriesSequence).foreach { e =>
      unsupported(dag.vertex(e.to), s"order restored by sequence ids on its input from '${e.from}'")
    }

  /** `local` numbering what it sends where the plan has `v` assign sequence ids. */
  def numbered(dag: PhysicalDag, v: Vertex, local: LocalVertex): LocalVertex =
    if (v.assignsSequence) local.copy(firstSubstream = Some(dag.firstSubstream(v))) else local

  /** `delivering`, the local edge that brings the items of `e` to its receiver, with the restore of
    * their order where `e` restores it: a vertex in between, of the receiver's parallelism, runs the
    * core's [[SequenceRestoreProcessor]] over the senders' items (a light job's input is finite: every
    * offset is passed when the input completes), and passes them on with their ids only where the
    * receiver keeps them.
    */
  def restoringOrder(dag: PhysicalDag, e: Edge, delivering: LocalEdge): (Option[LocalVertex], Seq[LocalEdge]) =
    if (!e.restoresSequence) (None, Seq(delivering))
    else {
      val (receiver, senders) = (dag.vertex(e.to), dag.vertex(e.from).localParallelism)
      val name = s"${e.to}/restore-${e.toOrdinal}"
      val restore = LocalVertex(name, receiver.localParallelism, _ => new SequenceRestoreProcessor(senders))
      (Some(restore), Seq(delivering.copy(to = name, toOrdinal = 0),
        LocalEdge(name, 0, e.to, delivering.toOrdinal, Routing.Isolated, delivering.priority, carriesSequence = dag.keepsSequence(e))))
    }

  /** A vertex that passes its input on unchanged (a plain merge, a source's items). */
  def passThrough: io.jetspark.core.ProcessorContext => io.jetspark.core.Processor = _ => new TransformProcessor(Step.fuse(Nil))

  /** `Sources.items`: one substream, so instance 0 emits every item in the given order. */
  def itemsSource(v: Vertex, items: Seq[Any]): LocalVertex =
    LocalVertex(v.name, v.localParallelism, passThrough, source = Some(i => if (i == 0) items.iterator else Iterator.empty))

  /** A sink writing each inbox of items (in the engine's item form) with `write`. */
  def sinkVertex(v: Vertex, write: IndexedSeq[Any] => Unit): LocalVertex =
    LocalVertex(v.name, v.localParallelism, _ => new SinkProcessor(write))

  /** Writes to the shared list registry (`Sinks.list`, dead-letter sinks). */
  def listWriter(name: String): IndexedSeq[Any] => Unit = items => ListSinkRegistry.append(name, items)

  def sinkName(v: Vertex): String = v.description match {
    case Sink(sink) => sink.parameters("name").toString
    case other => throw new IllegalStateException(s"${other.describe} is not a sink")
  }

  /** The local edge of a planned edge. `keyOf(receiver, key)` binds the key of a partitioned edge; a
    * pre-extracted key is the first part of what an accumulating stage emits. The build sides of a
    * hash join (a broadcast edge) are read before its streamed side; the runs of a sort reach the merge
    * apart.
    */
  def edge(dag: PhysicalDag, e: Edge, keyOf: (Vertex, io.jetspark.pipeline.definition.Extractor) => (Any => Any)): LocalEdge = {
    val receiver = dag.vertex(e.to)
    val routing = e.kind match {
      case EdgeKind.Isolated => Routing.Isolated
      case EdgeKind.Local | EdgeKind.RoundRobin => Routing.RoundRobin
      case EdgeKind.Partitioned(_, true) => Routing.Partitioned(preExtractedKey)
      case EdgeKind.Partitioned(key, false) => Routing.Partitioned(keyOf(receiver, key))
      case EdgeKind.Broadcast => Routing.Broadcast
      case EdgeKind.AllToOne => Routing.AllToOne
    }
    val mergesRuns = receiver.description match {
      case Sort(SortPhase.MergeSorted, _, _) => true
      case _ => false
    }
    LocalEdge(e.from, e.fromOrdinal, e.to, e.toOrdinal, routing,
      priority = if (e.kind == EdgeKind.Broadcast) 0 else 1, sendersApart = mergesRuns, errorsOf = e.errorsOf,
      carriesSequence = e.carriesSequence)
  }

  /** The processors of a window vertex in `stage` over [[Timestamped]] events (the combining stage: over
    * frames, which carry their time themselves), `op` and `key` taking the events' items.
    */
  def windowProcessor(w: WindowDefinition, stage: AggregationStage, op: AggregateOperation[Any, Any, Any],
      key: Option[Any => Any]): ProcessorContext => Processor = {
    val payloadOp = new PayloadOperation(op)
    val keyFn: Any => Any = key.fold[Any => Any](_ => NonKeyed)(f => t => f(t.asInstanceOf[Timestamped].item))
    val tsFn: Any => Long = _.asInstanceOf[Timestamped].timestamp
    (w, stage) match {
      case (s: SlidingWindowDefinition, AggregationStage.SingleStage) =>
        val policy = SlidingWindowPolicy(s.sizeMs, s.slideMs)
        if (key.isDefined) _ => SlidingWindowProcessor.singleStage(policy, keyFn, tsFn, payloadOp, s.earlyResultsPeriodMs)
        else _ => SlidingWindowProcessor.singleStageNonKeyed(policy, tsFn, payloadOp, s.earlyResultsPeriodMs)
      case (s: SlidingWindowDefinition, AggregationStage.Accumulate) =>
        _ => SlidingWindowProcessor.accumulateFrames(SlidingWindowPolicy(s.sizeMs, s.slideMs), keyFn, tsFn, payloadOp)
      case (s: SlidingWindowDefinition, AggregationStage.Combine) =>
        _ => SlidingWindowProcessor.combineFrames(SlidingWindowPolicy(s.sizeMs, s.slideMs), op, key.isDefined, s.earlyResultsPeriodMs)
      case (s: SessionWindowDefinition, _) => _ => new SessionWindowProcessor(s.timeoutMs, keyFn, tsFn, payloadOp, s.earlyResultsPeriodMs)
    }
  }

  /** A window result as an event: timestamp `end - 1`, the last instant of its window; a non-keyed
    * session's result as a [[WindowResult]].
    */
  val windowResultAsEvent: Any => Timestamped = {
    case r: WindowResult[_] => Timestamped(r.end - 1, r)
    case KeyedWindowResult(start, end, NonKeyed, result, early) => Timestamped(end - 1, WindowResult(start, end, result, early))
    case r: KeyedWindowResult[_, _] => Timestamped(r.end - 1, r)
    case other => throw new IllegalStateException(s"a window emitted $other")
  }

  private val preExtractedKey: Any => Any = {
    case (key, _) => key
    case frame: KeyedFrame[_, _] => frame.key
    case other => throw new IllegalStateException(s"expected a (key, accumulator) pair or a keyed frame, got $other")
  }
}

/** `op` over the items of [[Timestamped]] events. */
private final class PayloadOperation(op: AggregateOperation[Any, Any, Any]) extends AggregateOperation[Any, Any, Any] {
  override def arity: Int = op.arity
  override def create(): Any = op.create()
  override def accumulate(acc: Any, ordinal: Int, item: Any): Any = op.accumulate(acc, ordinal, item.asInstanceOf[Timestamped].item)
  override def combineFn: Option[(Any, Any) => Any] = op.combineFn
  override def deductFn: Option[(Any, Any) => Any] = op.deductFn
  override def exportResult(acc: Any): Any = op.exportResult(acc)
  override def finishResult(acc: Any): Any = op.finishResult(acc)
  override def isOrderSensitive: Boolean = op.isOrderSensitive
}
