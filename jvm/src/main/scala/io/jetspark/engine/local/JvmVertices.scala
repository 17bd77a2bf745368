package io.jetspark.engine.local

import io.jetspark.core.{Processor, ProcessorContext}
import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations, AnyOrdering}
import io.jetspark.core.processor._
import io.jetspark.core.window._
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{Extractor, SessionWindowDefinition, SlidingWindowDefinition, TimestampPolicy}
import io.jetspark.pipeline.transform._
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription._

import scala.jdk.CollectionConverters._

/** Translates a planned pipeline of JVM functions ([[Extractor.ScalaFn]]) into a [[LocalDag]] of the
  * core's processors.
  *
  * Event time: a stream source with timestamps emits [[Timestamped]] items and the watermarks of its
  * substreams (the core's [[io.jetspark.core.eventtime.InsertWatermarksProcessor]]); stateless steps map the item and keep its
  * timestamp, windows read it, and a window result gets the timestamp `end - 1` (inside its window).
  * Sinks receive the bare items.
  *
  * What it cannot run fails here, naming the vertex: Python functions, field names and Columns (this
  * translation runs JVM functions only), dead-letter routing, order kept by sequence ids, ordered
  * merges, stateful stages on streams with event time, sources other than items and items streams.
  */
object JvmVertices {

  def translate(dag: PhysicalDag): LocalDag = {
    LocalVertices.requireNoSequenceOrdering(dag)
    val timestampedOutput = scala.collection.mutable.Map.empty[String, Boolean]
    val vertices = dag.vertices.map { v =>
      val timestampedInput = dag.edgesInto(v.name).exists(e => timestampedOutput(e.from))
      val (local, timestampedOut) = new VertexTranslation(dag, v, timestampedInput).translate()
      timestampedOutput(v.name) = timestampedOut
      local
    }
    val edges = dag.edges.map { e =>
      val receiverTimestamped = timestampedOutput(e.from)
      LocalVertices.edge(dag, e, (receiver, key) => onPayload(receiverTimestamped, function(receiver, key)))
    }
    LocalDag(vertices, edges)
  }

  /** The JVM function behind an extractor. */
  private def function(v: Vertex, e: Extractor): Any => Any = e match {
    case Extractor.ScalaFn(f) => f
    case Extractor.WholeItem => identity
    case other => LocalVertices.unsupported(v, s"${other.describe}: the JVM translation runs JVM functions")
  }

  /** `f` of the item, unwrapping a [[Timestamped]] one. */
  private def onPayload(timestamped: Boolean, f: Any => Any): Any => Any =
    if (timestamped) t => f(t.asInstanceOf[Timestamped].item) else f

  private final class VertexTranslation(dag: PhysicalDag, v: Vertex, timestamped: Boolean) {
    private def fn(e: Extractor): Any => Any = function(v, e)
    private def payloadFn(e: Extractor): Any => Any = onPayload(timestamped, fn(e))
    private def vertex(newProcessor: ProcessorContext => Processor, output: Any => Any = identity) =
      LocalVertex(v.name, v.localParallelism, newProcessor, output = output)
    private def noEventTime(what: String): Unit =
      if (timestamped) LocalVertices.unsupported(v, s"$what on a stream with event time")

    /** The local vertex, and whether its output items are [[Timestamped]]. */
    def translate(): (LocalVertex, Boolean) = v.description match {
      case Source(source, None) if source.name == "items" =>
        (LocalVertices.itemsSource(v, source.parameters("items").asInstanceOf[Seq[Any]]), false)
      case Source(source, timestamps) if source.name == "itemsStream" => itemsStream(source.parameters, timestamps)
      case StatelessChain(steps) =>
        val fused = Step.fuse(steps.flatMap(step))
        val chain: Any => IterableOnce[Any] =
          if (timestamped) { t => val e = t.asInstanceOf[Timestamped]; fused(e.item).iterator.map(Timestamped(e.timestamp, _)) }
          else fused
        (vertex(_ => new TransformProcessor(chain)), timestamped)
      case Merge(_, false) => (vertex(LocalVertices.passThrough), timestamped)
      case WindowAggregate(stage, definition, op, key) => window(stage, definition, jvmOp(op), key)
      case Sink(sink) => (LocalVertices.sinkVertex(v, sinkWriter(sink.name)), false)
      case other =>
        noEventTime(other.describe)
        (vertex(batchProcessor(other)), false)
    }

    private def batchProcessor(d: io.jetspark.plan.VertexDescription): ProcessorContext => Processor = d match {
      case Aggregate(stage, ops, keys) =>
        val op = (if (ops.size == 1) jvmOp(ops.head) else AggregateOperations.aggregateOperation2(jvmOp(ops(0)), jvmOp(ops(1))))
          .asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        val keyFns = keys.map(fn).toIndexedSeq
        (stage, keys.nonEmpty) match {
          case (AggregationStage.Accumulate, true) => _ => new AccumulateByKeyProcessor(keyFns, op)
          case (AggregationStage.Combine, true) => _ => new CombineByKeyProcessor(op)
          case (AggregationStage.SingleStage, true) => _ => new AggregateByKeyProcessor(keyFns, op)
          case (AggregationStage.Accumulate, false) => _ => new AccumulateProcessor(op)
          case (AggregationStage.Combine, false) => _ => new CombineProcessor(op)
          case (AggregationStage.SingleStage, false) => _ => new AggregateProcessor(op)
        }
      case RollingAggregate(key, op) =>
        val jop = jvmOp(op).asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        key.map(fn) match {
          case Some(keyFn) => _ => RollingAggregateProcessor.keyed(keyFn, jop)
          case None => _ => RollingAggregateProcessor.global(jop)
        }
      case MapStateful(key, createFn, mapFn) =>
        val (create, f) = (fn(createFn), fn(mapFn))
        val output: Any => (Any, Option[Any]) = r => { val (state, out) = r.asInstanceOf[(Any, Any)]; (state, Option(out)) }
        key.map(fn) match {
          case Some(keyFn) => _ => MapStatefulProcessor.keyed(keyFn, () => create(null), (s, k, item) => output(f((s, k, item))))
          case None => _ => MapStatefulProcessor.global(() => create(null), (s, item) => output(f((s, item))))
        }
      case Distinct(key) => val keyFn = fn(key); _ => new DistinctProcessor(keyFn)
      case Sort(SortPhase.LocalSort, key, reverse) =>
        val sort = SortDefinition(key.map(fn), AnyOrdering, reverse); _ => new SortProcessor(sort)
      case Sort(SortPhase.MergeSorted, key, reverse) =>
        val sort = SortDefinition(key.map(fn), AnyOrdering, reverse)
        val runs = dag.vertex(dag.edgesInto(v.name).head.from).localParallelism
        _ => new SortedMergeProcessor(runs, sort)
      case HashJoin(clauses, mapper, inner) =>
        val joinClauses = clauses.map(c => JoinClause(fn(c.leftKey), fn(c.rightKey)))
        val m = mapper.map(fn).getOrElse(identity[Any] _)
        val joined: (Any, Seq[Option[Any]]) => Any = (left, rights) => m(tupleOf(left +: rights.map(_.orNull)))
        _ => new HashJoinProcessor(joinClauses, joined, outer = !inner)
      case other => LocalVertices.unsupported(v, other.describe)
    }

    private def step(t: StatelessTransform): Seq[Step] = t.fn match {
      case _ if t.errorSink.isDefined => LocalVertices.unsupported(v, s"stage '${t.name}' routes failures to a dead-letter sink")
      case f => t match {
        // Jet: a map that returns null emits nothing.
        case _: MapTransform => Seq(Step.map(fn(f)), Step.filter(_ != null))
        case _: FilterTransform => val p = fn(f); Seq(Step.filter(x => p(x).asInstanceOf[Boolean]))
        case _: FlatMapTransform => val g = fn(f); Seq(Step.flatMap(x => iterable(g(x))))
        case _: PeekTransform => val g = fn(f); Seq(Step.peek(x => println(s"[${t.name}] ${g(x)}")))
      }
    }

    private def itemsStream(parameters: Map[String, Any], timestamps: Option[TimestampPolicy]): (LocalVertex, Boolean) = {
      val p = v.localParallelism
      val reading = ItemsStreamReading(parameters, p)
      timestamps match {
        case Some(TimestampPolicy.FromItems(ts, lagMs)) =>
          val tsFn = fn(ts)
          val timed = (item: Any) => Timestamped(tsFn(item).asInstanceOf[Number].longValue, item)
          val source = (i: Int) => reading.read(i).map(s => s.copy(item = timed(s.item)))
          (LocalVertex(v.name, p, reading.watermarks(lagMs), source = Some(source)), true)
        case Some(TimestampPolicy.NoTimestamps) =>
          (LocalVertex(v.name, p, LocalVertices.passThrough, source = Some(reading.read(_).map(_.item))), false)
        case other => LocalVertices.unsupported(v, s"items stream with ${other.fold("no timestamp choice")(_.describe)}")
      }
    }

    private def window(stage: AggregationStage, w: io.jetspark.pipeline.definition.WindowDefinition, op: AggregateOperation[Any, Any, Any],
        key: Option[Extractor]): (LocalVertex, Boolean) = {
      if (!timestamped && stage != AggregationStage.Combine) LocalVertices.unsupported(v, "a window over items without event time")
      val newProcessor = LocalVertices.windowProcessor(w, stage, op, key.map(fn))
      if (stage == AggregationStage.Accumulate) (vertex(newProcessor), false)
      else (vertex(newProcessor, output = LocalVertices.windowResultAsEvent), true)
    }

    private def sinkWriter(name: String): IndexedSeq[Any] => Unit = {
      val unwrap: Any => Any = if (timestamped) _.asInstanceOf[Timestamped].item else identity
      name match {
        case "list" | "deadLetter" => val write = LocalVertices.listWriter(LocalVertices.sinkName(v)); items => write(items.map(unwrap))
        case "console" => _.foreach(item => println(unwrap(item)))
        case "noop" => _ => ()
        case other => LocalVertices.unsupported(v, s"$other sink")
      }
    }

    private def jvmOp(op: AggregateOperation[_, _, _]): AggregateOperation[Any, Any, Any] = op match {
      case p: PythonAggregateSpec => LocalVertices.unsupported(v, s"Python aggregate operation '${p.name}' in a JVM pipeline")
      case jvm => jvm.asInstanceOf[AggregateOperation[Any, Any, Any]]
    }
  }

  private def iterable(value: Any): IterableOnce[Any] = value match {
    case it: IterableOnce[_] => it
    case it: java.lang.Iterable[_] => it.asScala
    case array: Array[_] => array.toSeq
    case other => throw new IllegalArgumentException(s"flatMap function returned ${other.getClass.getName}, not an iterable")
  }

  /** The mapper's argument: `(left, right1, ...)`. */
  private def tupleOf(parts: Seq[Any]): Any = parts match {
    case Seq(a, b) => (a, b)
    case Seq(a, b, c) => (a, b, c)
    case Seq(a, b, c, d) => (a, b, c, d)
    case _ => throw new UnsupportedOperationException(s"a hash join of ${parts.size - 1} enriching sides")
  }
}
