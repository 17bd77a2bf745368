package io.jetspark.engine.spark

import io.jetspark.core.Processor
import io.jetspark.engine.ListSinkRegistry // shared with the local engine
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.aggregate.{AggregateOperation, AnyOrdering}
import io.jetspark.core.processor._
import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.core.processor.SortDefinition
import io.jetspark.item.{Extracted, PickledItem, PickledKey, PythonAggregations, PythonValues}
import io.jetspark.pipeline.{PythonAggregateSpec, PythonExtractors, PythonRef}
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError}
import io.jetspark.pipeline.transform.StatelessTransform
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.VertexDescription.SortPhase
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex, VertexDescription}
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.JoinedRow
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{ArrayType, BinaryType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable
import scala.util.Try

/** Runs a planned batch pipeline on Spark ("Edges on Spark" in DESIGN.md): every vertex's output is a
  * DataFrame of opaque items (one binary column `item` holding a pickle); local and isolated edges are
  * narrow, round-robin edges `repartition(n)`, all-to-one edges `repartition(1)`, partitioned edges
  * `repartition(n, key)`. Fused Python steps run as one Arrow UDF per vertex (built by the Python layer,
  * see `pythonChains`); their failures of stages routed to a dead-letter sink come out on that stage's
  * error edge, and so do the records whose key, value or timestamp a stage's extraction failed on
  * (`extractedInput`).
  *
  * The Python layer builds every Arrow UDF the job needs (see `pythonWork`) and hands them over by name:
  * `chain:<vertex>`, `extract:<vertex>:<input ordinal>`, `rows:<vertex>`, `stateful:<vertex>`, `join:<vertex>`,
  * `custom:<vertex>`.
  *
  * Aggregations: where items enter one (stage 1 of two, or the single stage), one Arrow UDF per vertex
  * extracts the grouping key and the operation's values (`pythonExtractions`); the core's aggregation
  * processors run in the Spark tasks; partial accumulators cross the shuffle serialized ([[PartialCodec]]), keyed by
  * the key's pickle; results go back to Python as pickles ([[PythonValues]]). `aggregate2` extracts per
  * input and reads both inputs partition by partition ([[CoGroupStages]]). User-defined operations run
  * in Python, and so does every operation with one among its parts, whole, windows included
  * ([[CustomAggregations]]). Hash joins broadcast every enriching side ([[HashJoinStage]]).
  *
  * A DataFrame source's output is its DataFrame (typed rows); aggregations that read it directly may run
  * in Catalyst, their results typed too; typed outputs become opaque items only on the edges to vertices
  * that need them, through one Arrow UDF (`rows:<vertex>`, `results:<vertex>`): see [[TypedPlan]].
  *
  * Files and foreach-batch sinks take the items as rows of a schema ([[RowSinks]]); a files source is
  * the DataFrame source of what it reads ([[FileSources]]). Windows (after `addTimestamps`) run as
  * [[WindowStages]] say, reading the time each item carries beside it from where it was stamped
  * ([[CarriedTimestamps]]).
  *
  * What this engine does not run yet (JVM functions, typed items other than a DataFrame's rows and the
  * results of aggregations Catalyst runs) fails before any Spark job starts, naming the vertex.
  */
final class SparkBatchEngine(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[String, Column], jobId: String,
    typedPlan: TypedPlan) {
  import SparkBatchEngine._

  def this(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[String, Column], jobId: String) =
    this(spark, dag, pythonUdfs, jobId, TypedPlan(dag))

  private val outputs = mutable.Map.empty[String, DataFrame]
  private val extractedInputs = mutable.Map.empty[Edge, ExtractedInput]
  private val sourceRowsRead = mutable.Map.empty[String, DataFrame]
  private val persisted = mutable.ArrayBuffer.empty[DataFrame]
  private val counters = mutable.LinkedHashMap.empty[String, LongAccumulator]
  /** The vertices whose items are counted where they are made, not by a step of their own per row: a
    * columnar window's second stage (its windows, see [[ColumnarFrames.combine]]) and a noop sink (the rows
    * it drops, see [[DrainRows]]). At small slides a window makes as many rows as it reads events, and
    * the layers of iterators and counting steps around them cost more CPU than making them.
    */
  private val countedBySelf = mutable.Set.empty[String]
  private val fanOut: Map[String, Int] = dag.edges.groupBy(_.from).view.mapValues(_.size).toMap
  private lazy val rowSinks = new RowSinks(spark, dag, jobId)
  private val typedStages = new TypedStages(typedPlan, dag, pythonUdfs, counter)
  private val sinkPlans = mutable.LinkedHashMap.empty[String, String]

  private val timestamps = new CarriedTimestamps(dag, typedPlan)

  dag.vertices.foreach(requireSupported)
  SequenceStages.requireSupported(dag)
  timestamps.requireSupported()
  SparkBatchEngine.requireColumnsResolveInOnePartition(dag)
  private val sequences = new SequenceStages(spark, dag)

  /** Runs every sink; returns the items each vertex emitted (dead letters under "<vertex>.errors"). */
  def run(): Map[String, Long] = {
    try dag.vertices.foreach { v => v.description match { case Sink(_) => writeSink(v); case _ => () } }
    finally { persisted.foreach(_.unpersist()); typedStages.unpersist() }
    counters.map { case (name, acc) => name -> acc.sum }.toMap
  }

  /** The vertices that Catalyst ran (see [[TypedPlan]]). */
  def catalystVertices: Seq[String] = typedPlan.catalystVertices

  /** Per sink vertex, Spark's physical plan of what it wrote (once `run` has run). */
  def sinkPhysicalPlans: Map[String, String] = sinkPlans.toMap

  /** The core operation of each aggregating vertex whose operations the JVM runs (built-in ones only). */
  private val aggregations: Map[String, AggregateOperation[Extracted, Any, Any]] =
    dag.vertices.filterNot(PythonAggregations.runsInPython).collect {
      case v @ Vertex(_, Aggregate(_, PythonOps(ops), _), _, _, _) => v.name -> PythonAggregations.bindInputs(ops)
      case v @ Vertex(_, RollingAggregate(_, op: PythonAggregateSpec), _, _, _) => v.name -> PythonAggregations.bindInputs(Seq(op))
      case v @ Vertex(_, WindowAggregate(_, _, op: PythonAggregateSpec, _), _, _, _) => v.name -> PythonAggregations.bindInputs(Seq(op))
    }.toMap

  /** What Python extracts where items enter a vertex (at its input ordinal), as [[pythonExtractions]]. */
  private val pythonExtractions: Map[(String, Int), PythonExtraction] =
    SparkBatchEngine.pythonExtractions(dag, typedPlan, timestamps).map(e => (e.vertex.name, e.ordinal) -> e).toMap

  private def requireSupported(v: Vertex): Unit = v.description match {
    case Source(source, _) if source.name == "items" || source.name == "dataframe" => ()
    case StatelessChain(steps) if steps.forall(runsInPythonChain) => ()
    case Merge(_, _) | Sink(_) => ()
    // In the JVM, or in Python where some operation has a user-defined part (CustomAggregations).
    case Aggregate(_, PythonOps(_), _) | RollingAggregate(_, _: PythonAggregateSpec) => ()
    case Distinct(_) => ()
    case MapStateful(_, Extractor.PythonFn(_, _), Extractor.PythonFn(_, _)) => ()
    case HashJoin(_, Some(Extractor.PythonFn(_, _)), _) => ()
    case Sort(_, _, _) => ()
    // In the JVM's window processors, or in Python where the operation has a user-defined part.
    case WindowAggregate(_, _, _: PythonAggregateSpec, _) => ()
    case AddTimestamps(_, _) => ()
    case other => throw new UnsupportedOperationException(
      s"vertex '${v.name}' (${other.describe}): the Spark batch engine does not run this yet")
  }

  /** The vertex's whole output: for a Python chain, with the `failure` column that routes dead letters. */
  private def output(v: Vertex): DataFrame = outputs.getOrElseUpdate(v.name, {
    val df = typedStages.output(v, () => singleInput(v)).getOrElse(sequences.assignedWhereNeeded(v, countedUnlessBySelf(v, v.description match {
      // A DataFrame source whose rows are not kept typed (see TypedPlan): its rows as Python items.
      case Source(source, _) if source.name == "dataframe" => SqlBridge.mapInArrow(rowsOfSource(v), pythonUdfs(s"rows:${v.name}"))
      case Source(source, _) => itemsFrame(source.parameters("items").asInstanceOf[Seq[Any]], v)
      case StatelessChain(_) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(s"chain:${v.name}"))
      case Merge(_, true) => sequences.orderedMerge(v, dag.edgesInto(v.name).map(input))
      case Merge(_, _) =>
        // A union's partitions add up, but the planner counts the merge as `localParallelism` senders and
        // restores order after it only where those are several: where its items carry their ids on, no
        // more partitions than that; and under preserve_order a merge planned as one sender, whose
        // receivers restore no order from it, is one partition holding its inputs' partitions in input
        // order (the first input's stream first).
        val union = dag.edgesInto(v.name).map(input).reduce(_ union _)
        val planned = v.localParallelism
        if (dag.preserveOrder && planned == 1) SparkBatchEngine.inOnePartition(union)
        else if (dag.edgesFrom(v.name).exists(_.carriesSequence) && InPlaceRows.of(union).getNumPartitions > planned)
          union.coalesce(planned)
        else union
      case Sink(sink) if sink.takesRows => rowSinks.rows(v, singleInput(v))
      case Sink(_) => singleInput(v)
      case _ if PythonAggregations.runsInPython(v) =>
        val inputs = dag.edgesInto(v.name).sortBy(_.toOrdinal).map(input)
        SqlBridge.mapInArrow(CustomAggregations.input(v, inputs), pythonUdfs(s"custom:${v.name}"))
      case Aggregate(stage, ops, keys) if ops.size == 2 && stage != AggregationStage.Combine =>
        val Seq(first, second) = dag.edgesInto(v.name).sortBy(_.toOrdinal).map(input): @unchecked
        CoGroupStages.run(aggregationStage(v.name, stage, keyed = keys.nonEmpty, inputs = 2), first, second)
      case Aggregate(stage, _, keys) => aggregationStage(v.name, stage, keyed = keys.nonEmpty, inputs = 1).run(singleInput(v))
      case RollingAggregate(key, _) =>
        val op = aggregations(v.name).asInstanceOf[AggregateOperation[Nothing, Any, Any]]
        val keyed = key.isDefined // the task takes this, not the key's Extractor (a Column does not serialize)
        val in = singleInput(v)
        // Each running result keeps what its item carries: its time, its sequence id.
        ProcessorStage(v.name, () => if (keyed) RollingAggregateProcessor.keyed(_.asInstanceOf[Extracted].key, op)
          else RollingAggregateProcessor.global(op), extracted, resultRow(keyed), ItemSchema)
          .runCarrying(in, carriedColumns(in))
      case Sort(SortPhase.LocalSort, _, reverse) => numberedRuns(ProcessorStage(v.name,
        () => new SortProcessor(SortDefinition(Some(sortValue), AnyOrdering, reverse)), extracted,
        e => { val x = e.asInstanceOf[Extracted]; InternalRow(x.key.bytes, rawValues(x), x.pickled) }, ExtractedSchema)
        .run(singleInput(v)))
      case Sort(SortPhase.MergeSorted, _, reverse) =>
        // The runs arrive in any order: (value, run, position) gives the k-way merge's order, ties to the
        // lower run, so the result does not depend on which run Spark delivers first.
        val byValue = if (reverse) AnyOrdering.reverse else AnyOrdering
        val order = Ordering.Tuple3(byValue, Ordering.Int, Ordering.Long).asInstanceOf[Ordering[Any]]
        ProcessorStage(v.name, () => new SortProcessor(SortDefinition(Some(runPosition), order, reverse = false)),
          row => (extractedFromRun(row), row.getInt(0), row.getLong(1)),
          r => InternalRow(r.asInstanceOf[(Extracted, Int, Long)]._1.pickled), ItemSchema).run(singleInput(v))
      case MapStateful(_, _, _) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(s"stateful:${v.name}"))
      case HashJoin(_, _, inner) =>
        val streamed +: enriching = dag.edgesInto(v.name).sortBy(_.toOrdinal).map(input): @unchecked
        SqlBridge.mapInArrow(HashJoinStage.run(spark, v.name, streamed, enriching, inner), pythonUdfs(s"join:${v.name}"))
      case w: WindowAggregate => typedPlan.typedWindows.get(v.name) match {
        case Some(typed) =>
          val edge = dag.edgesInto(v.name).head
          val projected = typed.project(output(dag.vertex(edge.from)))
          // Frames accumulate per partition, however many there are: over a local edge the rows stay where
          // they are (spreading them to the vertex's parallelism would shuffle every row to gain nothing).
          val rows = if (edge.kind == EdgeKind.Local) projected else moved(projected, edge, v.localParallelism)
          WindowStages.run(v.name, w, aggregations(v.name), rows, typed.events, typed.rowItems, typedPlan.onlyNoopSinksRead(v.name),
            typedPlan.columnarWindows.get(v.name), typedPlan.countedByWindows.getOrElse(v.name, Nil).map(counter))
        case None =>
          val columnar = typedPlan.columnarWindowCombinedBy(v.name)
          val rowItems = columnar.map(_.resultItems).orElse(typedPlan.typedWindowCombinedBy(v.name).map(_.rowItems))
          if (columnar.isDefined) countedBySelf += v.name
          WindowStages.run(v.name, w, aggregations(v.name), singleInput(v), resultItems = rowItems.getOrElse(identity),
            unread = typedPlan.onlyNoopSinksRead(v.name), columnar = columnar, countedByColumnar = columnar.map(_ => counter(v.name)).toSeq)
      }
      case AddTimestamps(_, _) => singleInput(v) // the items with their time beside them, read on the way in
      case Distinct(_) =>
        // The first item of each key, with what its row carries: under preserve_order its sequence id, which
        // it keeps, as a filter's items do (the first to arrive is the first in order where the planner
        // restores the order on the way in, that is where it plans several senders).
        val in = singleInput(v)
        val carried = carriedColumns(in)
        val copyCarried = ProcessorStage.copyOf(in.schema, carried)
        ProcessorStage(v.name, () => new DistinctProcessor(_.asInstanceOf[(Extracted, InternalRow)]._1.key),
          row => (extracted(row), copyCarried(row)),
          { case (e: Extracted, beside: InternalRow) => new JoinedRow(InternalRow(e.pickled), beside).copy(): InternalRow },
          StructType(ItemSchema.fields ++ carried.map(in.schema.apply))).run(in)
      case other => throw new IllegalStateException(s"unsupported ${other.describe}")
    })))
    // Read by several edges: computed once.
    if (fanOut.getOrElse(v.name, 0) > 1 || RowSinks.keepsOutput(v)) keptForReaders(df) else df
  })

  /** `df` cached until the job ends. A DataFrame that is cached already (a user's source) is read as it
    * is and left cached: unpersisting it would drop the user's cache, as `unpersist` drops whatever
    * cached data has the same plan.
    */
  private def keptForReaders(df: DataFrame): DataFrame = {
    if (df.storageLevel == StorageLevel.NONE) persisted += df.persist(StorageLevel.MEMORY_AND_DISK)
    df
  }

  private def itemsFrame(items: Seq[Any], v: Vertex): DataFrame = {
    val pickles = items.map {
      case bytes: Array[Byte] => bytes
      case other => throw new UnsupportedOperationException(
        s"vertex '${v.name}': the Spark batch engine runs items given from Python (pickles), not ${other.getClass.getName}")
    }
    // One partition: `Sources.items` is one substream, in the given order. Without preserve_order, where
    // only local edges take it to processors of one parallelism, as many slices in the given order, in
    // place of a round-robin shuffle: the items reach them in partition order, the encounter order by which
    // min_by/max_by/top_n/bottom_n break ties (EncounterPositions).
    val consumers = dag.edgesFrom(v.name).map(e => (e.kind, dag.vertex(e.to).localParallelism)).distinct
    val slices = consumers match {
      case Seq((EdgeKind.Local, parallelism)) if !dag.preserveOrder => parallelism
      case _ => 1
    }
    val rows = spark.sparkContext.parallelize(pickles, numSlices = slices).map(b => InternalRow(b): InternalRow)
    SqlBridge.internalCreateDataFrame(spark, rows, ItemSchema)
  }

  private def singleInput(v: Vertex): DataFrame = dag.edgesInto(v.name) match {
    case Seq(edge) => input(edge)
    case edges => throw new IllegalStateException(s"vertex '${v.name}' has ${edges.size} inputs, expected one")
  }

  /** What `edge` delivers: the sender's data (or one stage's dead letters) — with key and values
    * extracted where the receiver aggregates items, with the items' time where the receiver reads it
    * ([[CarriedTimestamps]]) — moved as the edge kind says.
    */
  private def input(edge: Edge): DataFrame =
    if (typedPlan.takesTyped(edge)) output(dag.vertex(edge.from)) else itemsInput(edge)

  private def itemsInput(edge: Edge): DataFrame = {
    val receiver = dag.vertex(edge.to)
    val consumesKeys = receiver.description match {
      case Aggregate(_, _, _) | RollingAggregate(_, _) | WindowAggregate(_, _, _, _) | Distinct(_) | Sort(_, _, _) | MapStateful(_, _, _) |
           HashJoin(_, _, _) => true
      case _ => false
    }
    val extraction = pythonExtractions.get((receiver.name, edge.toOrdinal))
    val rows = extraction.fold(selected(edge))(extractedInput(edge, _).rows)
    val received = sequences.received(edge, moved(rows, edge, receiver.localParallelism))
    // Only vertices that consume keys read the extracted columns; a rebalanced or stamping stage gets
    // its items back, with what they carry.
    if (extraction.isDefined && !consumesKeys) itemsOf(received) else received
  }

  /** The sender's items for `edge` (or, on an error edge, one stage's dead letters), with what the edge
    * carries beside them: the items' time, sequence ids.
    */
  private def selected(edge: Edge): DataFrame = {
    lazy val sender = typedStages.items(edge.from, output(dag.vertex(edge.from)))
    edge.errorsOf match {
      case Some(stage) => deadLetters(edge.from, stage)
      // Other columns stay (a custom aggregation's partial results carry their key).
      case None if sender.columns.contains(Failure) =>
        timestamps.forEdge(edge, sequences.forEdge(edge, sender.where(col(Failure).isNull).drop(Failure)))
      case None => timestamps.forEdge(edge, sequences.forEdge(edge, sender))
    }
  }

  /** The dead letters of `stage`, fused into `vertex`: the records its functions failed on (rows of the
    * vertex's output marked with the stage) and those its keys, values or timestamps failed on where
    * they were extracted on the way in ([[extractedInput]]).
    */
  private def deadLetters(vertex: String, stage: String): DataFrame = {
    val out = typedStages.items(vertex, output(dag.vertex(vertex)))
    val ofFunctions = if (out.columns.contains(Failure)) Seq(out) else Nil
    val ofExtractors = dag.edgesInto(vertex).flatMap(edge =>
      pythonExtractions.get((vertex, edge.toOrdinal)).flatMap(extractedInput(edge, _).deadLetters))
    (ofFunctions ++ ofExtractors).map(_.where(col(Failure) === stage).select(Item)).reduceOption(_ union _)
      .getOrElse(spark.createDataFrame(spark.sparkContext.emptyRDD[Row], ItemSchema))
  }

  /** What Python's extraction `e` gives for the items `edge` delivers, made once per edge: the stage
    * reads its rows, and the stage's error edge the records whose extractor failed (with `failure` set to
    * the stage), which never enter the stage. Both read one run of the extraction, kept until the job
    * ends, so that no user function runs twice for a record.
    */
  private def extractedInput(edge: Edge, e: PythonExtraction): ExtractedInput = extractedInputs.getOrElseUpdate(edge, {
    val udf = pythonUdfs(s"extract:${e.vertex.name}:${edge.toOrdinal}")
    // Columns evaluated by Catalyst next to the source's rows, which Python turns into items there.
    val items = if (e.columns.nonEmpty) e.rowsWithColumns(rowsWithColumnsRead(edge)) else selected(edge)
    val extracted = if (e.columns.isEmpty || !edge.carriesSequence) SqlBridge.mapInArrow(items, udf)
      // One output per row, in the rows' partitions and order: numbered after the extraction, each gets the
      // id that the source gives the same row's item (it numbers sourceRows' rows by partition and position).
      else sequences.assignedWhereNeeded(dag.vertex(edge.from), SqlBridge.mapInArrow(items, udf))
    if (!e.deadLetter) ExtractedInput(extracted, None)
    else {
      val all = keptForReaders(counted(e.vertex.name, extracted, countsItems = false))
      ExtractedInput(all.where(col(Failure).isNull).drop(Failure), Some(all.where(col(Failure).isNotNull).select(Item, Failure)))
    }
  })

  /** The rows of the DataFrame source that `edge` comes from, for an extraction of Columns: the source's
    * typed output, or, where the source numbers its items (and makes them Python items at once), its rows
    * read anew, which count as its items where no other edge reads those.
    */
  private def rowsWithColumnsRead(edge: Edge): DataFrame = {
    val source = dag.vertex(edge.from)
    if (!typedPlan.numberedRowSources.contains(source.name)) output(source)
    else {
      val (columnEdges, others) = readersOf(source)
      if (others.isEmpty && columnEdges.head == edge) RowCounting.counted(rowsOfSource(source), counter(source.name))
      else rowsOfSource(source)
    }
  }

  /** The edges from `source` whose extraction evaluates Columns beside its rows, and the others. */
  private def readersOf(source: Vertex): (Seq[Edge], Seq[Edge]) =
    dag.edgesFrom(source.name).partition(e => pythonExtractions.get((e.to, e.toOrdinal)).exists(_.columns.nonEmpty))

  /** The rows of a DataFrame source whose items are Python objects, as the job reads them: kept once read
    * where several paths read them (its items, and the Columns of edges from it), which must see the same
    * rows in the same partitions and order, numbered alike, whatever the DataFrame gives when read again.
    */
  private def rowsOfSource(v: Vertex): DataFrame = sourceRowsRead.getOrElseUpdate(v.name, {
    val rows = SparkBatchEngine.sourceRows(dag, v, typedPlan.numberedRowSources(v.name))
    val (columnEdges, others) = readersOf(v)
    if (columnEdges.size + (if (others.nonEmpty) 1 else 0) > 1) keptForReaders(rows) else rows
  })

  /** The items of `df` (rows that also hold extracted keys and values), with their time and their
    * sequence ids where they carry them.
    */
  private def itemsOf(df: DataFrame): DataFrame = df.select((Item +: carriedColumns(df)).map(col): _*)

  /** `rows` moved to `target` partitions as `edge`'s kind says (a partitioned edge by the column `key`). */
  private def moved(rows: DataFrame, edge: Edge, target: Int): DataFrame = edge.kind match {
    case EdgeKind.Isolated => rows
    case EdgeKind.Local => if (InPlaceRows.of(rows).getNumPartitions == target) rows else rows.repartition(target)
    case EdgeKind.RoundRobin => rows.repartition(target)
    case EdgeKind.AllToOne => rows.repartition(1)
    case EdgeKind.Partitioned(_, _) => rows.repartition(target, col(Key))
    case EdgeKind.Broadcast => rows // the receiver collects and broadcasts it (see HashJoinStage)
    case other => throw new UnsupportedOperationException(s"edge ${edge.from} -> ${edge.to}: ${other.describe} edges are not run yet")
  }

  /** The processors of one aggregation vertex, with how rows become their items and back. */
  private def aggregationStage(vertex: String, stage: AggregationStage, keyed: Boolean, inputs: Int): ProcessorStage = {
    val op = aggregations(vertex).asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val keyOf: Any => Any = _.asInstanceOf[Extracted].key
    val keyFns = IndexedSeq.fill(inputs)(keyOf)
    val result = resultRow(keyed)
    val codec = new PartialCodec(vertex)
    def stageOf(p: () => Processor, in: InternalRow => Any, out: Any => InternalRow, schema: StructType) =
      ProcessorStage(vertex, p, in, out, schema)
    (stage, keyed) match {
      case (AggregationStage.Accumulate, true) => stageOf(() => new AccumulateByKeyProcessor(keyFns, op), extracted,
        pair => { val (key, acc) = pair.asInstanceOf[(PickledKey, Any)]; InternalRow(key.bytes, codec.toBytes(acc)) },
        PartialSchema)
      case (AggregationStage.Accumulate, false) => stageOf(() => new AccumulateProcessor(op), extracted,
        acc => InternalRow(Array.emptyByteArray, codec.toBytes(acc)), PartialSchema)
      case (AggregationStage.Combine, true) => stageOf(() => new CombineByKeyProcessor(op),
        row => (new PickledKey(row.getBinary(0)), codec.fromBytes(row.getBinary(1))), result, ItemSchema)
      case (AggregationStage.Combine, false) => stageOf(() => new CombineProcessor(op),
        row => codec.fromBytes(row.getBinary(1)), result, ItemSchema)
      case (AggregationStage.SingleStage, true) => stageOf(() => new AggregateByKeyProcessor(keyFns, op), extracted, result, ItemSchema)
      case (AggregationStage.SingleStage, false) => stageOf(() => new AggregateProcessor(op), extracted, result, ItemSchema)
    }
  }

  private def writeSink(v: Vertex): Unit = {
    val Sink(sink) = v.description: @unchecked
    val items = output(v)
    sink.name match {
      case "list" | "deadLetter" =>
        ListSinkRegistry.append(sink.parameters("name").toString, items.collect().map(_.getAs[Array[Byte]](0)).toSeq)
      case "console" => ListSinkRegistry.append(consoleList(jobId, v.name), items.collect().map(_.getAs[Array[Byte]](0)).toSeq)
      // Every row computed and dropped, read in place where InPlaceRows can: the plan recorded below
      // is Spark's plan of those rows, whose last scan that reading stands in for.
      case "noop" =>
        val rows = InPlaceRows.of(items)
        val drain = new DrainRows(if (countedBySelf(v.name)) counter(v.name) else null)
        spark.sparkContext.runJob(rows, drain, rows.partitions.indices, (_: Int, _: Unit) => ())
      case "files" | "foreachBatch" => rowSinks.write(v, items)
      case other => throw new UnsupportedOperationException(s"sink '${v.name}': $other sinks are not run yet")
    }
    sinkPlans(v.name) = items.queryExecution.executedPlan.toString
  }

  /** A result as the row of a pickled item: `(key, result)` when keyed, else the result. */
  private def resultRow(keyed: Boolean): Any => InternalRow = r => InternalRow(PythonValues.dumps(r match {
    case (key: PickledKey, value) if keyed => (key, value)
    case value => value
  }))

  /** Numbers each row of a local sort's output by its run (the partition) and its position in it. */
  private def numberedRuns(sorted: DataFrame): DataFrame = {
    val rows = InPlaceRows.of(sorted).mapPartitionsWithIndex { (run, partition) =>
      partition.zipWithIndex.map { case (r, position) => InternalRow(run, position.toLong, r.getBinary(0), r.getArray(1), r.getBinary(2)) }
    }
    SqlBridge.internalCreateDataFrame(spark, rows, RunSchema)
  }

  /** `made`, the output of `v`, counted as its rows pass, unless `v` counts them itself (see
    * [[countedBySelf]]): a window that said so as it made them, or a noop sink.
    */
  private def countedUnlessBySelf(v: Vertex, made: DataFrame): DataFrame = {
    v.description match {
      case Sink(sink) if sink.name == "noop" && !made.columns.contains(Failure) => countedBySelf += v.name
      case _ =>
    }
    if (countedBySelf(v.name)) made else counted(v.name, made)
  }

  /** Counts the rows of `df` as they pass: an accumulator per vertex, "<vertex>.errors" for all its dead
    * letters and [[deadLettersOf]] for those of one of its stages (what that stage's dead-letter sink gets).
    * Without `countsItems` only dead letters count: the rows of an extraction on the way into `vertex`
    * are not its output.
    * The result reads an RDD made once: the engine's next steps look at its partitions and run
    * processors over it, which must not plan (and run) the rows' query again.
    */
  private def counted(vertex: String, df: DataFrame, countsItems: Boolean = true): DataFrame = {
    val items = if (countsItems) counter(vertex) else null
    val hasFailures = df.columns.contains(Failure)
    val failure = if (hasFailures) df.schema.fieldIndex(Failure) else -1
    val errors = if (hasFailures) counter(s"$vertex.errors") else null
    val perStage =
      if (hasFailures) dag.edgesFrom(vertex).flatMap(_.errorsOf).map(stage => stage -> counter(deadLettersOf(vertex, stage))).toMap
      else Map.empty[String, LongAccumulator]
    val rows = InPlaceRows.of(df).mapPartitions(rows => new Iterator[InternalRow] { // (not a map: see InPlaceRows)
      def hasNext: Boolean = rows.hasNext
      def next(): InternalRow = {
        val row = rows.next()
        if (hasFailures && !row.isNullAt(failure)) {
          errors.add(1)
          perStage.get(row.getUTF8String(failure).toString).foreach(_.add(1))
        } else if (countsItems) items.add(1)
        row
      }
    })
    SqlBridge.internalCreateDataFrame(spark, rows, df.schema)
  }

  private def counter(name: String): LongAccumulator = counters.getOrElseUpdate(name, spark.sparkContext.longAccumulator(name))
}

/** What a noop sink does with a partition: computes its rows and drops them, counting them into `items`
  * where it counts its own (null: a step before it counts them). A class, not a lambda: Spark's closure
  * cleaner reads a lambda's enclosing class file (this engine's, a large one) with ASM on every job: a
  * tenth of the driver time of a small job (2 of 28 ms measured on a 20k-row aggregation). (A loop of its
  * own, not `foreach`: see [[InPlaceRows]].)
  */
private final class DrainRows(items: LongAccumulator) extends ((TaskContext, Iterator[InternalRow]) => Unit) with Serializable {
  override def apply(context: TaskContext, rows: Iterator[InternalRow]): Unit = {
    var n = 0L
    while (rows.hasNext) { rows.next(); n += 1 }
    if (items != null) items.add(n)
  }
}

object SparkBatchEngine {
  val Item = "item"
  val Failure = "failure"
  val Key = "key"
  val ItemSchema: StructType = StructType(Seq(StructField(Item, BinaryType, nullable = false)))
  /** What an extraction UDF gives per item: the key's pickle, the values' pickles, the item's pickle. */
  val ExtractedSchema: StructType = StructType(Seq(StructField(Key, BinaryType), StructField("values", ArrayType(BinaryType)),
    StructField(Item, BinaryType)))
  /** What the rows of `df` carry beside their items, in the order every vertex keeps them in: the items'
    * time ([[CarriedTimestamps]]), then their sequence ids ([[SequenceStages]]).
    */
  def carriedColumns(df: DataFrame): Seq[String] = (WindowStages.Ts +: SequenceStages.Columns).filter(df.columns.contains)

  /** The rows of DataFrame source `v`, whose DataFrame is `df`, as it runs: the DataFrame's own partitions, except that under
    * preserve_order a source planned with one processor reads them as one, in partition order. The
    * planner knows no DataFrame's partitions (they are settled when it runs), so it plans the source with
    * the job's parallelism or the user's; where that is one, it takes the vertices fed over isolated edges
    * to be single partitions too (an ordered merge's branches line up, an edge from a single partition
    * keeps order), which rows left in the DataFrame's partitions would not be. (Outside preserve_order no
    * edge relies on a vertex of parallelism 1 being one partition.)
    */
  def sourceRows(dag: PhysicalDag, v: Vertex, df: DataFrame): DataFrame =
    if (readAsOnePartition(dag, v)) inOnePartition(df) else df

  private def readAsOnePartition(dag: PhysicalDag, v: Vertex): Boolean = dag.preserveOrder && v.localParallelism == 1

  /** The rule that a DataFrame source read as one partition (see [[sourceRows]]) breaks where the job's
    * Columns read one of its hidden metadata columns: the rows it reads then are its columns alone.
    */
  val HiddenColumnsInOnePartition = "hidden-columns-in-one-partition"

  /** Fails, naming the source, where a DataFrame source read as one partition ([[sourceRows]]) from several,
    * whose rows are then its DataFrame's columns alone, is read by a Column of the stages after it that resolves against the
    * DataFrame but not against those rows: one that reads a hidden metadata column (a file source's
    * `_metadata`). It takes the DataFrame's partitions as the job does, from the same query execution (where
    * the query has shuffles, adaptive execution runs them to tell, once for both), and analyses the Columns
    * only where there are several.
    */
  def requireColumnsResolveInOnePartition(dag: PhysicalDag): Unit = dag.vertices.foreach { v =>
    v.description match {
      case Source(source, _) if source.name == "dataframe" && readAsOnePartition(dag, v) =>
        val df = source.parameters("dataframe").asInstanceOf[DataFrame]
        if (InPlaceRows.of(df).getNumPartitions > 1) {
          val columnsAlone = SqlBridge.withRows(df, df.sparkSession.sparkContext.emptyRDD[InternalRow])
          // (A select analyses when its schema is asked for: a Column that does not resolve fails there.)
          val failing = columnsOf(dag, after = v).flatMap(c => Try { val read = df.select(c); read.schema; c -> read }.toOption)
            .filter { case (c, _) => Try(columnsAlone.select(c).schema).isFailure }
          if (failing.nonEmpty) {
            // (What the select's own projection reads, not what the DataFrame's query below it reads.)
            val read = failing.flatMap(_._2.queryExecution.analyzed.references.toSeq).map(_.exprId).toSet
            val hidden = df.queryExecution.analyzed.metadataOutput.filter(a => read(a.exprId)).map(_.name).distinct
            val remedy = if (hidden.isEmpty) "select what it reads into the DataFrame"
              else s"select ${if (hidden.size == 1) "it" else "them"} into the DataFrame " +
                s"(df.select(${("\"*\"" +: hidden.map(h => s"\"$h\"")).mkString(", ")}))"
            throw new PipelineDefinitionError(TypedPlan.stageOf(v), HiddenColumnsInOnePartition,
              s"under preserve_order this source runs as one processor, so it reads its DataFrame's partitions as one, " +
                s"in order, which holds the DataFrame's columns but not its hidden ones${hidden.mkString(" (", ", ", ")")}, " +
                s"which ${failing.map(_._1).distinct.mkString(", ")} reads: $remedy, or run the source with more processors " +
                "(set_local_parallelism)")
          }
        }
      case _ =>
    }
  }

  /** The Spark Columns of the job's extractors on the vertices (but sinks) and edges after vertex `after`:
    * of a vertex with several inputs (a hash join, a co-aggregation), those of the inputs `after` reaches.
    */
  private def columnsOf(dag: PhysicalDag, after: Vertex): Seq[Column] = {
    def in(x: Any): Iterator[Column] = x match {
      case Extractor.ColumnExpr(c: Column) => Iterator.single(c)
      case op: PythonAggregateSpec => op.columns.valuesIterator.collect { case c: Column => c }
      case _: Source | _: Sink => Iterator.empty
      case many: Iterable[_] => many.iterator.flatMap(in)
      case p: Product => p.productIterator.flatMap(in)
      case _ => Iterator.empty
    }
    def downstream(from: Set[String]): Set[String] = {
      val next = from ++ from.flatMap(dag.edgesFrom(_).map(_.to))
      if (next == from) from else downstream(next)
    }
    def onInput(d: VertexDescription, ordinal: Int): Any = d match {
      case HashJoin(clauses, _, _) => if (ordinal == 0) clauses.map(_.leftKey) else clauses.lift(ordinal - 1).map(_.rightKey)
      case Aggregate(_, ops, keys) if ops.size > 1 => (ops.lift(ordinal), keys.lift(ordinal))
      case other => other
    }
    val reached = downstream(Set(after.name))
    val edges = dag.edges.filter(e => reached(e.from))
    (edges.map(e => onInput(dag.vertex(e.to).description, e.toOrdinal)) ++ edges.map(_.kind)).flatMap(in)
  }

  /** `df`'s rows in one partition, its partitions in index order (Spark's own coalesce groups them by
    * location, which need not keep that order), with `df`'s columns.
    *
    * Where `df` is one partition already, `df` itself, unless adaptive execution ran its query (its
    * shuffles) to tell its partitions and coalesced them into one: then the rows that made, as `df` read
    * again would be planned again and its shuffles, and whatever is below them, run a second time. (Not
    * where `df` has hidden columns, a file source's `_metadata`, which a Column after it may read and
    * those rows do not hold: see [[requireColumnsResolveInOnePartition]].)
    */
  def inOnePartition(df: DataFrame): DataFrame = {
    val rows = InPlaceRows.of(df)
    if (rows.getNumPartitions > 1) SqlBridge.withRows(df, rows.coalesce(1, shuffle = false, Some(RowDelegation.InOrder)))
    else df.queryExecution.executedPlan match {
      // (Read from a cache's batches, `rows` ran nothing: see InPlaceRows.)
      case adaptive: AdaptiveSparkPlanExec if adaptive.isFinalPlan && InPlaceRows.batchesOf(adaptive).isEmpty &&
          df.queryExecution.analyzed.metadataOutput.isEmpty => SqlBridge.withRows(df, rows)
      case _ => df
    }
  }

  /** The counter of the dead letters that `stage`, fused into `vertex`, routes to its dead-letter sink. */
  def deadLettersOf(vertex: String, stage: String): String = s"$vertex.errors/$stage"

  /** An extraction's rows for the stage, and, where the stage routes failures to a dead-letter sink, the
    * dead letters (`item`, `failure`) of the records whose extractor failed.
    */
  private final case class ExtractedInput(rows: DataFrame, deadLetters: Option[DataFrame])

  /** A partial accumulator on its way to the combining stage. */
  val PartialSchema: StructType = StructType(Seq(StructField(Key, BinaryType), StructField("acc", BinaryType)))

  /** The inputs (vertex, ordinal) whose items Python must first take apart, with what it extracts from
    * each: at an aggregation where items enter, per input, the grouping key (None: a global aggregation)
    * and that input's operation's values in slot order; at a hash join, each side's key of its clause
    * (the streamed side's other clauses' keys as values); behind a `rebalance(key)` edge, that key,
    * which decides the partition (also where the vertex has no key of its own: a global aggregation, a
    * sort); where items are stamped on entry, their time ([[CarriedTimestamps]]). None for the vertices
    * that Catalyst runs (see [[TypedPlan]]).
    */
  def pythonExtractions(dag: PhysicalDag, typed: TypedPlan, timestamps: CarriedTimestamps): Seq[PythonExtraction] = {
    import PythonExtraction.{KeyBytes, OperationSlot, Plain}
    def extraction(v: Vertex, ordinal: Int, key: Option[Extractor], values: Seq[PythonExtraction.Value]) = {
      val edge = dag.edgesInto(v.name).find(_.toOrdinal == ordinal).get
      PythonExtraction(v, ordinal, key, values, timestamps.stampOn(edge), timestamps.arriveTimed(edge),
        PythonExtraction.rowSourceOf(typed, edge), deadLetter = dag.routesFailures(v))
    }
    def slots(op: PythonAggregateSpec) = PythonAggregations.extractors(op).map(OperationSlot(_, op))
    dag.vertices.filterNot(v => typed.runsInCatalyst(v.name)).flatMap {
      case v @ Vertex(_, Aggregate(stage, PythonOps(ops), keys), _, _, _) =>
        if (stage == AggregationStage.Combine) Nil
        else ops.indices.map(i => extraction(v, i, keys.lift(i).orElse(rebalanceKey(dag, v, i)), slots(ops(i))))
      case v @ Vertex(_, RollingAggregate(key, op: PythonAggregateSpec), _, _, _) => Seq(extraction(v, 0, key, slots(op)))
      case v @ Vertex(_, MapStateful(key, _, _), _, _, _) => Seq(extraction(v, 0, key, Nil))
      case v @ Vertex(_, Sort(SortPhase.LocalSort, key, _), _, _, _) =>
        Seq(extraction(v, 0, rebalanceKey(dag, v, 0), Seq(Plain(key.getOrElse(Extractor.WholeItem)))))
      // A window reads the rows in the JVM where it can (TypedWindow), else Python passes each item's time on.
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) =>
        if (stage == AggregationStage.Combine || typed.typedWindows.contains(v.name)) Nil
        else Seq(extraction(v, 0, key, slots(op)))
      case v @ Vertex(_, HashJoin(clauses, _, _), _, _, _) =>
        // The streamed item's other left keys ride along as values, in the canonical form keys compare in.
        extraction(v, 0, Some(clauses.head.leftKey), clauses.tail.map(c => KeyBytes(c.leftKey))) +:
          clauses.zipWithIndex.map { case (c, i) => extraction(v, i + 1, Some(c.rightKey), Nil) }
      // Elsewhere: the key of a rebalance(key) edge, and the time of items stamped on entry (CarriedTimestamps).
      case v => dag.edgesInto(v.name).collect {
        case e if rebalancedByKey(e) || timestamps.stampOn(e).isDefined => extraction(v, e.toOrdinal, rebalanceKey(dag, v, e.toOrdinal), Nil)
      }
    }
  }

  /** How Python extracts a key or value ([[PythonExtractors.json]]); other extractors are refused. */
  private[spark] def extractorJson(e: Extractor): JsonNode =
    PythonExtractors.json(e).getOrElse(throw new UnsupportedOperationException(PythonExtractors.unsupported(e)))

  /** The key of a `rebalance(key)` into input `ordinal` of `v`: where `v` has no key of its own there, the
    * extraction gives it this one, so that the edge spreads the items by it (not all into one partition).
    */
  private def rebalanceKey(dag: PhysicalDag, v: Vertex, ordinal: Int): Option[Extractor] =
    dag.edgesInto(v.name).find(e => e.toOrdinal == ordinal && rebalancedByKey(e)).map(_.kind.asInstanceOf[EdgeKind.Partitioned].key)

  /** The operations of an aggregation when every one is defined in Python. */
  private[spark] object PythonOps {
    def unapply(ops: Seq[AggregateOperation[_, _, _]]): Option[Seq[PythonAggregateSpec]] =
      if (ops.forall(_.isInstanceOf[PythonAggregateSpec])) Some(ops.map(_.asInstanceOf[PythonAggregateSpec])) else None
  }

  /** An edge partitioned by a key that its items do not carry yet. */
  private[spark] def rebalancedByKey(e: Edge): Boolean = e.kind match {
    case EdgeKind.Partitioned(_, preExtracted) => !preExtracted && !e.errorsOf.isDefined
    case _ => false
  }

  /** The vertices whose fused steps run in Python, with those steps in order: the Python layer builds
    * one Arrow UDF for each (`python/jetspark/_python_steps.py`).
    */
  def pythonChains(dag: PhysicalDag): Seq[(Vertex, Seq[StatelessTransform])] = dag.vertices.collect {
    case v @ Vertex(_, StatelessChain(steps), _, _, _) if steps.forall(runsInPythonChain) => v -> steps
  }

  /** Python functions run in the chain's Python trip, and so does a plain `peek()`: it prints the item,
    * which only Python can show.
    */
  private def runsInPythonChain(step: StatelessTransform): Boolean = step match {
    case p: io.jetspark.pipeline.transform.PeekTransform => p.fn == Extractor.WholeItem || p.runsInPython
    case other => other.runsInPython
  }

  private val sortValue: Any => Any = _.asInstanceOf[Extracted].values(0)
  private val runPosition: Any => Any = r => { val (e, run, position) = r.asInstanceOf[(Extracted, Int, Long)]; (e.values(0), run, position) }
  private def rawValues(e: Extracted) = org.apache.spark.sql.catalyst.util.ArrayData.toArrayData(e.rawValues)

  /** A sorted run's row: its run, its position in the run, then the extraction (key, values, item). */
  val RunSchema: StructType = StructType(Seq(StructField("run", IntegerType), StructField("position", LongType)) ++
    ExtractedSchema.fields)

  /** A row of an extraction (key, values, item) as the item a processor takes. */
  private[spark] val extracted: InternalRow => Extracted = extractedAt(0)

  /** The same for a sorted run's row ([[RunSchema]]), whose run and position come first. */
  private val extractedFromRun: InternalRow => Extracted = extractedAt(2)

  private[spark] def extractedAt(at: Int): InternalRow => Extracted = { row =>
    val raw = row.getArray(at + 1).toObjectArray(BinaryType).map(_.asInstanceOf[Array[Byte]])
    new Extracted(new PickledKey(row.getBinary(at)), new PickledItem(row.getBinary(at + 2)), raw.map(PythonValues.loads), raw,
      EncounterPositions.next())
  }

  /** The `map_stateful` vertices whose functions run in Python: state per key (or one state) kept across
    * the items of a partition by a Python UDF, after a shuffle by key (or to one partition).
    */
  def pythonStateful(dag: PhysicalDag): Seq[(Vertex, Int, Int, Boolean, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, MapStateful(key, Extractor.PythonFn(PythonRef(create), _), Extractor.PythonFn(PythonRef(fn), _)), _, _, _) =>
      (v, create, fn, key.isDefined, dag.routesFailures(v))
  }

  /** The hash joins, with their mapper (the number of its Python callable) and whether its failures go
    * to a dead-letter sink: Python applies the mapper to each tuple `(left, right_1, ..., right_n)`.
    */
  def pythonJoins(dag: PhysicalDag): Seq[(Vertex, Int, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, HashJoin(_, Some(Extractor.PythonFn(PythonRef(mapper), _)), _), _, _, _) =>
      (v, mapper, dag.routesFailures(v))
  }

  /** The DataFrame sources, with their schemas: the Python layer builds, for each, the UDF that turns
    * rows into items.
    */
  def dataframeSources(dag: PhysicalDag): Seq[(Vertex, StructType)] = dag.vertices.collect {
    case v @ Vertex(_, Source(source, _), _, _, _) if source.name == "dataframe" =>
      v -> source.parameters("dataframe").asInstanceOf[DataFrame].schema
  }

  /** The registry list that holds what console sink `vertex` of job `jobId` received, for the driver's
    * Python to print.
    */
  def consoleList(jobId: String, vertex: String): String = s"__console__/$jobId/$vertex"
}
