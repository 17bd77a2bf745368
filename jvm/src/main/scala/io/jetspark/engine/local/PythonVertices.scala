package io.jetspark.engine.local

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.core.{Processor, ProcessorContext}
import io.jetspark.core.aggregate.{AggregateOperation, AnyOrdering}
import io.jetspark.core.processor._
import io.jetspark.item.{CustomAggregationWork, Extracted, PickledItem, PickledKey, PythonAggregations, PythonOps, PythonValues}
import io.jetspark.pipeline.{PythonAggregateSpec, PythonExtractors, PythonRef}
import io.jetspark.core.eventtime.SubstreamItem
import io.jetspark.pipeline.definition.{Extractor, StreamSource}
import io.jetspark.pipeline.transform.{PeekTransform, StatelessTransform}
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription._

import java.nio.charset.StandardCharsets.UTF_8
import scala.jdk.CollectionConverters._

/** What a light job asks of the driver's Python process (implemented in Python, reached through py4j's
  * callback server): `call` runs `work` (a JSON description, the same for every call of one vertex, so
  * Python parses it once) over a batch of pickles packed as `jetspark._items.pack_frames` does, and
  * returns packed pickles; `ping` answers while the process is alive.
  */
trait PythonCallback {
  def call(work: String, input: Array[Byte]): Array[Byte]
  def ping(): Boolean
}

/** Translates a planned pipeline of Python items into a [[LocalDag]]: items are pickles (`Array[Byte]`),
  * fused Python steps run as one callback per inbox batch on a thread of their own, and where items
  * enter a vertex that needs their key or values (an aggregation, a sort, a distinct, a hash join, an
  * edge partitioned by a Python key) an extraction vertex is put on the edge, before the items are
  * routed: Python gives each item's canonical key and the values (as [[Extracted]]), and the core's
  * processors run on those in the JVM, as in the Spark engine. Results go back to Python as pickles
  * ([[PythonValues.dumps]]). A hash join joins in the JVM and its mapper runs in Python, in a vertex of
  * its own after the join, over the joined tuples.
  *
  * Runs: items sources (DataFrames are collected into them by Python); items and rate streams
  * ([[PythonStreamHead]]); map/filter/flat_map/peek and map_stateful in Python (the states kept by
  * Python), with dead-letter sinks; merges; keyed and global aggregation (also `aggregate2`) and rolling
  * aggregation, with the built-in operations in the JVM and those with an `AggregateOperation.of` part
  * in Python ([[PythonAggregationVertices]]); hash joins with one or more enriching sides; windows after
  * `add_timestamps` (those of an `AggregateOperation.of` in Python, on batches and streams), each item's time read
  * in Python and carried beside it ([[CarriedItems]]); distinct; sort; list, console (printed by the
  * driver's Python), dead-letter and noop sinks.
  *
  * `preserve_order` as the plan says ([[io.jetspark.plan.PhysicalDag]]): a vertex that assigns sequence
  * ids numbers what it sends, items keep their ids ([[Sequenced]], [[CarriedItems]]) on the edges that
  * carry them, a vertex on an edge that restores order runs the core's restore
  * ([[LocalVertices.restoringOrder]]), an ordered merge the core's merge, and the vertices in between
  * give each output its item's id: Python answers item by item for chains and `map_stateful`, and the
  * JVM's rolling aggregation and distinct run inside the core's [[CarryingProcessor]].
  * Anything else fails here, naming the vertex.
  */
object PythonVertices {
  import CarriedItems.{carried, extractedOf, payloadOf, takesTimedItems, timedOutputs}

  private[local] val mapper = new ObjectMapper()

  /** One step of a chain's work: `kind` is "map", "filter", "flat_map", "peek", or "join_map" (a hash
    * join's mapper, over the joined tuple `(left, right_1, ..., right_n)`); `ref` the number of its
    * callable (none: a plain peek).
    */
  private final case class ChainStep(kind: String, ref: Option[Int], stage: String, deadLetter: Boolean)

  private def chainStep(t: StatelessTransform): ChainStep = ChainStep(stepKind(t), t.fn match {
    case Extractor.PythonFn(PythonRef(ref), _) => Some(ref)
    case _ => None
  }, t.name, t.errorSink.isDefined)

  /** The work of a fused chain, as Python receives it with every call: its steps in order, each
    * `{"kind", "ref": number of the callable or null, "stage", "dead_letter"}` ([[ChainStep]]). Python
    * answers with pairs of frames: the failing stage (empty for an output) and the output's pickle (for
    * a failure routed to a dead-letter sink: the `DeadLetter`'s). Where the items keep their sequence
    * ids or event time (`itemwise`), it answers item by item instead ([[itemwiseOutputs]]).
    */
  private def chainWork(vertex: String, steps: Seq[ChainStep], itemwise: Boolean): String = {
    val node = mapper.createObjectNode().put("kind", "chain").put("vertex", vertex).put("itemwise", itemwise)
    val stepsNode = node.putArray("steps")
    steps.foreach { step =>
      val s = stepsNode.addObject().put("kind", step.kind).put("stage", step.stage).put("dead_letter", step.deadLetter)
      step.ref.fold(s.putNull("ref"))(s.put("ref", _))
    }
    mapper.writeValueAsString(node)
  }

  /** A chain vertex: Python runs `work` over each batch of items, on a thread of its own (it blocks). */
  private[local] def chainVertex(name: String, parallelism: Int, python: PythonCallback, work: String,
      answered: (IndexedSeq[Any], Vector[Array[Byte]]) => Iterator[Any]): LocalVertex = {
    val outputs: IndexedSeq[Any] => IterableOnce[Any] = batch => answered(batch, call(python, work, batch.map(pickle)))
    LocalVertex(name, parallelism, _ => new BatchTransformProcessor(outputs), cooperative = false)
  }

  /** The vertex after a hash join `v` that runs its Python mapper over the joined tuples. */
  private def mapperVertexName(v: Vertex): String = s"${v.name}/mapper"

  /** The work of a console sink: Python prints the items, and answers nothing. */
  private def printWork(v: Vertex): String = mapper.writeValueAsString(mapper.createObjectNode().put("kind", "print").put("vertex", v.name))

  /** The local DAG of `dag`, whose Python work runs through `python`; fails naming the vertex it cannot run. */
  def translate(dag: PhysicalDag, python: PythonCallback): LocalDag = {
    dag.vertices.find(v => dag.carriesSequenceThrough(v) && !givesOutputsTheirItemsIds(v))
      .foreach(v => LocalVertices.unsupported(v, "preserve_order needs sequence ids carried through it to a later restore point"))
    val timed = timedOutputs(dag)
    val now = System.currentTimeMillis()
    val readings = dag.vertices.flatMap(v => v.description match {
      case Source(source, _) => StreamReading.of(source, v.localParallelism, now).map(v.name -> _)
      case _ => None
    }).toMap
    // A Python chain whose one output needs an extraction does the extraction in its own callback.
    val fused = dag.edges.flatMap(e => extraction(dag, e, timed(e.from)).filter(_ => !timed(e.from) && fusable(dag, e)).map(e.from -> _)).toMap
    val vertices = dag.vertices.map { v =>
      val timedInput = dag.edgesInto(v.name).exists(e => timed(e.from))
      LocalVertices.numbered(dag, v, fused.get(v.name).fold(vertex(dag, v, python, timedInput, readings.get(v.name)))(x => fusedWithExtraction(v, x, python)))
    }
    // A hash join's Python mapper runs after the core's join, on the join's outputs.
    val mappers = dag.vertices.collect {
      case v @ Vertex(_, HashJoin(_, Some(Extractor.PythonFn(PythonRef(ref), _)), _), _, _, _) =>
        val work = chainWork(mapperVertexName(v), Seq(ChainStep("join_map", Some(ref), v.fusedChain.head, dag.routesFailures(v))), timed(v.name))
        v.name -> chainVertex(mapperVertexName(v), v.localParallelism, python, work,
          (batch, frames) => if (timed(v.name)) itemwiseOutputs(batch, frames) else withFailures(frames))
    }.toMap
    val streamHeads = PythonStreamHead.readAndStamp(dag, readings, python)
    val extractedKey: Any => Any = x => extractedOf(x).key
    // A dead-letter sink's inputs from extractions come after its own, numbered across all of them: the
    // extractions of two inputs of one receiver send their failures to the same sink.
    val nextInput = scala.collection.mutable.Map.empty[String, Int]
    def newInput(sink: String): Int = {
      val ordinal = nextInput.getOrElse(sink, dag.edgesInto(sink).map(_.toOrdinal).max + 1)
      nextInput(sink) = ordinal + 1
      ordinal
    }
    val (added, edges) = dag.edges.map { e =>
      val planned = LocalVertices.edge(dag, e, (_, _) => extractedKey)
      val edge = mappers.get(e.from).fold(planned)(m => planned.copy(from = m.name))
      // A record whose key or value fails goes where its stage's failures go, from the vertex that extracts.
      def deadLetters(x: Extraction, from: String) = x.errorEdges.zipWithIndex.map { case (d, i) =>
        LocalVertices.edge(dag, d, (_, _) => extractedKey).copy(from = from, fromOrdinal = 1 + i, toOrdinal = newInput(d.to))
      }
      val (extractions, delivering) = extraction(dag, e, timed(e.from)) match {
        case None => (Nil, edge)
        case Some(x) if fused.contains(e.from) => (Seq(None -> deadLetters(x, e.from)), edge)
        case Some(x) =>
          val sender = dag.vertex(e.from)
          val extract = LocalVertex(x.vertex, sender.localParallelism, context => new BatchTransformProcessor(extractor(python, x, context)),
            cooperative = false)
          (Seq(Some(extract) -> (LocalEdge(edge.from, e.fromOrdinal, x.vertex, 0, Routing.Isolated, errorsOf = e.errorsOf,
            carriesSequence = e.carriesSequence) +: deadLetters(x, x.vertex))), edge.copy(from = x.vertex, fromOrdinal = 0, errorsOf = None))
      }
      val (restore, delivered) = LocalVertices.restoringOrder(dag, e, delivering)
      (extractions.flatMap(_._1) ++ restore, extractions.flatMap(_._2) ++ delivered)
    }.unzip
    val mapperEdges = mappers.map { case (join, m) => LocalEdge(join, 0, m.name, 0, Routing.Isolated) }
    LocalDag(vertices ++ mappers.values ++ streamHeads.flatMap(_._1) ++ added.flatten,
      edges.flatten ++ mapperEdges ++ streamHeads.flatMap(_._2))
  }

  /** The vertices that give their outputs the ids of their items (see [[vertex]]). */
  private def givesOutputsTheirItemsIds(v: Vertex): Boolean = v.description match {
    case StatelessChain(_) | MapStateful(_, _, _) | RollingAggregate(_, _) | Distinct(_) | Merge(_, _) | AddTimestamps(_, _) => true
    case _ => false
  }

  /** What Python extracts from the items of one edge. `work` describes it to Python:
    * `{"kind": "extract", "vertex", "stage", "key": extractor or null, "values": [extractor], "dead_letter"}`;
    * Python answers, per item, with an empty frame, the key's canonical bytes (empty without a key), the
    * values' pickles and the item's pickle; or, for a record an extractor failed on where `stage` routes
    * its failures (`errorEdges`, the receiver's edges to its dead-letter sinks), with the stage's name and
    * the `DeadLetter`'s pickle.
    */
  private final case class Extraction(vertex: String, stage: String, key: Option[JsonNode], values: Seq[JsonNode],
      errorEdges: Seq[Edge], keepsTime: Boolean) {
    def work: String = {
      val node = mapper.createObjectNode().put("kind", "extract").put("vertex", vertex).put("stage", stage)
        .put("dead_letter", errorEdges.nonEmpty)
      node.set[JsonNode]("key", key.getOrElse(mapper.nullNode()))
      node.set[JsonNode]("values", mapper.valueToTree[JsonNode](values.asJava))
      mapper.writeValueAsString(node)
    }
  }

  /** The extraction on `e`, whose items carry their event time where `timed`. */
  private def extraction(dag: PhysicalDag, e: Edge, timed: Boolean): Option[Extraction] = {
    val v = dag.vertex(e.to)
    val failingStage = v.fusedChain.head // the stage that took the extractors
    def of(key: Option[Extractor], values: Seq[JsonNode]) =
      Some(Extraction(s"${v.name}/extract-${e.toOrdinal}", failingStage, key.map(extractorJson(v, _)), values,
        dag.failureEdges(v), keepsTime = timed && takesTimedItems(v, e.toOrdinal)))
    v.description match {
      case WindowAggregate(stage, _, op: PythonAggregateSpec, key) if stage != AggregationStage.Combine =>
        of(key, PythonAggregations.extractors(op))
      case Aggregate(stage, PythonOps(ops), keys) if stage != AggregationStage.Combine =>
        of(keys.lift(e.toOrdinal), PythonAggregations.extractors(ops(e.toOrdinal)))
      // The streamed item's other clauses' keys ride along as values, in the canonical form keys compare in.
      case HashJoin(clauses, _, _) if e.toOrdinal == 0 =>
        of(Some(clauses.head.leftKey), clauses.tail.map(c => PythonExtractors.keyBytesJson(extractorJson(v, c.leftKey))))
      case HashJoin(clauses, _, _) => of(Some(clauses(e.toOrdinal - 1).rightKey), Nil)
      case RollingAggregate(key, op: PythonAggregateSpec) => of(key, PythonAggregations.extractors(op))
      case MapStateful(key, _, _) => of(key, Nil)
      case Distinct(key) => of(Some(key), Nil)
      case Sort(SortPhase.LocalSort, key, _) => of(None, Seq(extractorJson(v, key.getOrElse(Extractor.WholeItem))))
      case _ => e.kind match {
        case EdgeKind.Partitioned(key, false) => of(Some(key), Nil)
        case _ => None
      }
    }
  }

  /** The local vertex of `v`, whose items come with their event time where `timedInput`. */
  private def vertex(dag: PhysicalDag, v: Vertex, python: PythonCallback, timedInput: Boolean, reading: Option[StreamReading]): LocalVertex = {
    def local(newProcessor: ProcessorContext => Processor, output: Any => Any = identity) =
      LocalVertex(v.name, v.localParallelism, newProcessor, output = output)
    val key: Any => Any = _.asInstanceOf[Extracted].key
    val item: Any => Any = _.asInstanceOf[Extracted].pickled
    def bound(op: PythonAggregateSpec) = PythonAggregations.bind(op).op.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val sequenced = dag.keepsSequenceIn(v)
    val streaming = dag.vertices.exists(_.description match {
      case Source(_: StreamSource, _) => true
      case _ => false
    })
    // A processor that emits for an item only while processing it: where items carry their ids or time,
    // each output (made what Python reads by `convert`) carries its item's.
    def carrying(newProcessor: ProcessorContext => Processor, convert: Any => Any = identity): LocalVertex =
      if (sequenced || timedInput)
        local(c => new CarryingProcessor(newProcessor(c), x => (payloadOf(x), made => carried(x, convert(made)))))
      else local(newProcessor, convert)
    // Python answers item by item where each output keeps its item's id or time.
    val itemwise = sequenced || timedInput
    def answered(batch: IndexedSeq[Any], frames: Vector[Array[Byte]]): Iterator[Any] =
      if (itemwise) itemwiseOutputs(batch, frames) else withFailures(frames)
    v.description match {
      case Source(source, None) if source.name == "items" => LocalVertices.itemsSource(v, source.parameters("items").asInstanceOf[Seq[Any]])
      case Source(source, Some(policy)) if reading.isDefined => PythonStreamHead.sourceVertex(dag, v, source, policy, reading.get)
      case Aggregate(_, _, _) | RollingAggregate(_, _) if PythonAggregations.runsInPython(v) =>
        // Only a rolling aggregation emits for each item; the others' inputs come bare.
        PythonAggregationVertices.customAggregation(CustomAggregationWork.of(dag, v), python, carries = (sequenced || timedInput) && v.description.isInstanceOf[RollingAggregate])
      case StatelessChain(steps) =>
        steps.find(t => !runsInPython(t))
          .foreach(t => LocalVertices.unsupported(v, s"step ${t.describe}: Python pipelines run Python functions"))
        chainVertex(v.name, v.localParallelism, python, chainWork(v.name, steps.map(chainStep), itemwise), answered)
      case AddTimestamps(timestamp, _) =>
        chainVertex(v.name, v.localParallelism, python, PythonStreamHead.stampWork(v, timestamp, dag.routesFailures(v)), PythonStreamHead.stamped)
      case WindowAggregate(stage, _, _, _) if PythonAggregations.runsInPython(v) =>
        if (streaming && stage != AggregationStage.SingleStage)
          LocalVertices.unsupported(v, s"a window of an AggregateOperation.of(...) on a stream in stage $stage (one stage expected)")
        if (!timedInput && stage != AggregationStage.Combine)
          LocalVertices.unsupported(v, "a window over items without event time: add_timestamps before it, with only stateless stages between")
        PythonAggregationVertices.customAggregation(CustomAggregationWork.of(dag, v), python, carries = false, stream = streaming)
      case WindowAggregate(stage, w, op: PythonAggregateSpec, k) =>
        if (!timedInput && stage != AggregationStage.Combine)
          LocalVertices.unsupported(v, "a window over items without event time: add_timestamps before it, with only stateless stages between")
        // A batch has no watermark before its end, so nothing in it is early (as on the Spark engine).
        val processor = LocalVertices.windowProcessor(if (streaming) w else w.setEarlyResultsPeriod(0), stage,
          bound(op).asInstanceOf[AggregateOperation[Any, Any, Any]], k.map(_ => key))
        if (stage == AggregationStage.Accumulate) local(processor)
        else local(processor, LocalVertices.windowResultAsEvent.andThen(e => e.copy(item = PythonValues.dumps(e.item))))
      case MapStateful(key, Extractor.PythonFn(PythonRef(create), _), Extractor.PythonFn(PythonRef(fn), _)) =>
        val work = mapper.writeValueAsString(mapper.createObjectNode().put("kind", "stateful").put("vertex", v.name)
          .put("stage", v.fusedChain.head).put("create_ref", create).put("fn_ref", fn).put("keyed", key.isDefined)
          .put("dead_letter", dag.routesFailures(v)).put("itemwise", itemwise))
        // Python keeps the state of each key: every item goes with its key's canonical bytes.
        val outputs: IndexedSeq[Any] => IterableOnce[Any] = batch =>
          answered(batch, call(python, work, batch.flatMap { x => val e = payloadOf(x).asInstanceOf[Extracted]; Seq(e.key.bytes, e.pickled) }))
        LocalVertex(v.name, v.localParallelism, _ => new BatchTransformProcessor(outputs), cooperative = false)
      case Merge(_, false) => local(LocalVertices.passThrough)
      case Merge(_, true) =>
        val branches = dag.edgesInto(v.name).size
        local(_ => new OrderedMergeProcessor(branches, tieByBranch = true))
      case Aggregate(stage, PythonOps(ops), keys) =>
        val (aop, keyed) = (PythonAggregations.bindInputs(ops).asInstanceOf[AggregateOperation[Nothing, Any, Any]], keys.nonEmpty)
        val keyFns = IndexedSeq.fill(ops.size)(key)
        stage match {
          case AggregationStage.Accumulate if keyed => local(_ => new AccumulateByKeyProcessor(keyFns, aop))
          case AggregationStage.Accumulate => local(_ => new AccumulateProcessor(aop))
          case AggregationStage.Combine if keyed => local(_ => new CombineByKeyProcessor(aop), result(keyed))
          case AggregationStage.Combine => local(_ => new CombineProcessor(aop), result(keyed))
          case AggregationStage.SingleStage if keyed => local(_ => new AggregateByKeyProcessor(keyFns, aop), result(keyed))
          case AggregationStage.SingleStage => local(_ => new AggregateProcessor(aop), result(keyed))
        }
      case RollingAggregate(k, op: PythonAggregateSpec) =>
        val aop = bound(op)
        if (k.isDefined) carrying(_ => RollingAggregateProcessor.keyed(key, aop), result(keyed = true))
        else carrying(_ => RollingAggregateProcessor.global(aop), result(keyed = false))
      case Distinct(_) => carrying(_ => new DistinctProcessor(key), item)
      case HashJoin(clauses, mapperFn, inner) =>
        // Side 0's key is the streamed item's own; side i's, the i-th value it carries (as key bytes).
        val joinClauses = clauses.indices.map { side =>
          val leftKey: Any => Any =
            if (side == 0) key else x => new PickledKey(x.asInstanceOf[Extracted].values(side - 1).asInstanceOf[Array[Byte]])
          JoinClause(leftKey, key)
        }
        // The tuple of matches for the mapper (a vertex of its own after this one), or the output itself.
        val joined: (Any, Seq[Option[Any]]) => Any = (left, rights) =>
          PythonValues.dumps((left.asInstanceOf[Extracted].item +: rights.map(_.map(_.asInstanceOf[Extracted].item))).toArray[Any])
        if (mapperFn.exists(!_.isInstanceOf[Extractor.PythonFn]))
          LocalVertices.unsupported(v, s"a join mapper ${mapperFn.get.describe}: Python pipelines map with Python functions")
        carrying(_ => new HashJoinProcessor(joinClauses, joined, outer = !inner))
      case Sort(SortPhase.LocalSort, _, reverse) =>
        val sort = SortDefinition(Some(_.asInstanceOf[Extracted].values(0)), AnyOrdering, reverse)
        local(_ => new SortProcessor(sort))
      case Sort(SortPhase.MergeSorted, _, reverse) =>
        val sort = SortDefinition(Some(_.asInstanceOf[Extracted].values(0)), AnyOrdering, reverse)
        val runs = dag.vertex(dag.edgesInto(v.name).head.from).localParallelism
        local(_ => new SortedMergeProcessor(runs, sort), item)
      case Sink(sink) => sink.name match {
        case "list" | "deadLetter" =>
          val write = LocalVertices.listWriter(LocalVertices.sinkName(v))
          LocalVertices.sinkVertex(v, items => write(items.map(pickle)))
        case "console" =>
          val work = printWork(v)
          LocalVertices.sinkVertex(v, items => { call(python, work, items.map(pickle)); () }).copy(cooperative = false)
        case "noop" => LocalVertices.sinkVertex(v, _ => ())
        case other => LocalVertices.unsupported(v, s"$other sink")
      }
      case other => LocalVertices.unsupported(v, other.describe)
    }
  }

  /** The pickle of an item, also when it travels with what Python extracted from it. */
  private def pickle(x: Any): Array[Byte] = x match {
    case bytes: Array[Byte] => bytes
    case e: Extracted => e.pickled
    case Sequenced(_, item) => pickle(item)
    case Timestamped(_, item) => pickle(item)
    case SubstreamItem(_, item) => pickle(item)
    case other => throw new IllegalStateException(s"expected a Python item, got ${other.getClass.getName}")
  }

  /** A result as the pickle of an item: `(key, result)` when keyed, else the result. */
  private def result(keyed: Boolean): Any => Any = {
    case (k: PickledKey, value) if keyed => PythonValues.dumps((k, value))
    case value => PythonValues.dumps(value)
  }

  /** Python's answer item by item, for items that keep their sequence ids ([[Sequenced]]) or event time
    * ([[Timestamped]]): the number of answers for the item, then for each the stage it failed in (empty
    * for an output), the output's fan-out path below the item (its elements joined by dots: the j-th
    * output of a flat_map appends j) and the pickle. An output gets its item's id extended by its path,
    * and its item's time; a failure goes to dead letters, which are not ordered.
    */
  private def itemwiseOutputs(batch: IndexedSeq[Any], frames: Vector[Array[Byte]]): Iterator[Any] = {
    val out = Vector.newBuilder[Any]
    var at = 0
    batch.foreach { item =>
      val answers = new String(frames(at), UTF_8).toInt
      at += 1
      for (_ <- 0 until answers) {
        val (stage, path, pickled) = (frames(at), new String(frames(at + 1), UTF_8), frames(at + 2))
        out += (if (stage.nonEmpty) FailedRecord(new String(stage, UTF_8), pickled)
                else carried(item, pickled, if (path.isEmpty) Nil else path.split('.').toSeq.map(_.toInt)))
        at += 3
      }
    }
    if (at != frames.size) throw new IllegalStateException(s"Python answered ${frames.size} frames, read $at")
    out.result().iterator
  }

  /** Python's answer of pairs (the stage a record failed in, empty for an output; the pickle) as items. */
  private def withFailures(frames: Vector[Array[Byte]]): Iterator[Any] = frames.grouped(2).map { pair =>
    val (stage, output) = (pair(0), pair(1))
    if (stage.isEmpty) output else FailedRecord(new String(stage, UTF_8), output)
  }

  private[local] def call(python: PythonCallback, work: String, pickles: Iterable[Array[Byte]]): Vector[Array[Byte]] =
    PythonValues.unpackFrames(python.call(work, PythonValues.packFrames(pickles)))

  /** The extraction of one processor: its items' encounter positions count in arrival order from its
    * index (`index << 40`), as a Spark task's count from its partition's. With a `fusedChain` (its work),
    * Python runs that chain over the batch first and extracts from its outputs ([[fusedWithExtraction]]).
    */
  private def extractor(python: PythonCallback, x: Extraction, context: ProcessorContext,
      fusedChain: Option[String] = None): IndexedSeq[Any] => IterableOnce[Any] = {
    val work = fusedChain.fold(x.work)(chain => s"""{"kind":"fused","chain":$chain,"extract":${x.work}}""")
    val perItem = x.values.size + 2
    var position = context.globalProcessorIndex.toLong << 40
    batch => {
      val frames = call(python, work, batch.map(pickle))
      val out = Vector.newBuilder[Any]
      var (at, answered) = (0, 0)
      while (at < frames.size) {
        val failedIn = frames(at)
        if (failedIn.nonEmpty) {
          out += FailedRecord(new String(failedIn, UTF_8), frames(at + 1))
          at += 2
        } else {
          val f = frames.slice(at + 1, at + 1 + perItem)
          val raw = f.slice(1, perItem - 1).toArray
          val extracted = new Extracted(new PickledKey(f.head), new PickledItem(f.last), raw.map(PythonValues.loads), raw, position)
          out += (if (fusedChain.isDefined) extracted else carried(batch(answered), extracted, keepTime = x.keepsTime))
          position += 1
          at += 1 + perItem
        }
        answered += 1
      }
      if ((fusedChain.isEmpty && answered != batch.size) || at != frames.size)
        throw new IllegalStateException(s"${x.vertex}: Python answered ${frames.size} frames for ${batch.size} items")
      out.result()
    }
  }

  /** Whether the Python chain that sends over `e` can do the extraction `e` needs in its own callback
    * ([[fusedWithExtraction]]): `e` is its only output, no step of it keeps dead letters (they would go
    * out of the chain's vertex on edges of their own), and no sequence ids reach or leave it (Python
    * answers item by item there).
    */
  private def fusable(dag: PhysicalDag, e: Edge): Boolean = {
    val sender = dag.vertex(e.from)
    sender.description match {
      case StatelessChain(steps) =>
        steps.forall(t => runsInPython(t) && t.errorSink.isEmpty) && dag.edgesFrom(sender.name) == Seq(e) &&
          e.errorsOf.isEmpty && !sender.assignsSequence && !dag.keepsSequenceIn(sender) && !e.carriesSequence &&
          !e.restoresSequence
      case _ => false
    }
  }

  /** A Python chain and the extraction on its one output edge, run by one callback per batch instead of
    * one each (a small job's time is mostly its calls to Python): Python runs the chain's steps over the
    * batch, then extracts from their outputs, and answers as an extraction does. The vertex keeps the
    * chain's name; the extraction's dead letters leave it from output 1 on.
    */
  private def fusedWithExtraction(v: Vertex, x: Extraction, python: PythonCallback): LocalVertex = v.description match {
    case StatelessChain(steps) =>
      val chain = chainWork(v.name, steps.map(chainStep), itemwise = false)
      LocalVertex(v.name, v.localParallelism, context => new BatchTransformProcessor(extractor(python, x, context, Some(chain))),
        cooperative = false)
    case other => throw new IllegalStateException(s"vertex '${v.name}': ${other.describe} is not a chain")
  }

  /** Python functions run in the chain's callback, and so does a plain `peek()`: it prints the item,
    * which only Python can show.
    */
  private def runsInPython(step: StatelessTransform): Boolean = step match {
    case p: PeekTransform => p.fn == Extractor.WholeItem || p.runsInPython
    case other => other.runsInPython
  }

  private def stepKind(t: StatelessTransform): String = t match {
    case _: io.jetspark.pipeline.transform.MapTransform => "map"
    case _: io.jetspark.pipeline.transform.FilterTransform => "filter"
    case _: io.jetspark.pipeline.transform.FlatMapTransform => "flat_map"
    case _: PeekTransform => "peek"
  }

  /** How Python extracts a key or value ([[PythonExtractors.json]], the Spark engine's form). */
  private[local] def extractorJson(v: Vertex, e: Extractor): JsonNode =
    PythonExtractors.json(e).getOrElse(LocalVertices.unsupported(v, PythonExtractors.unsupported(e)))
}
