package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.{InPlaceRows, RowCounting, RowSchemas}
import io.jetspark.engine.spark.runner.{AggregationRunner, CustomAggregations, DistinctRunner, HashJoinRunner, RowSinks}
import io.jetspark.engine.spark.runner.{SequenceRestore, SinkRunner, SortRunner}
import io.jetspark.engine.spark.window.{WindowPath, WindowRunner}
import io.jetspark.item.{Extracted, PythonAggregations, PythonOps}
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable

/** Runs a planned batch pipeline on Spark ("Edges on Spark" in DESIGN.md): an interpreter of the DAG that
  * makes each vertex's output from its inputs' and hands each vertex kind to a runner of its own. Every
  * vertex's output is a DataFrame of opaque items (one binary column `item` holding a pickle, see
  * [[rows.RowSchemas]]); local and isolated edges are narrow, round-robin edges `repartition(n)`, all-to-one
  * edges `repartition(1)`, partitioned edges `repartition(n, key)`.
  *
  * The Python layer builds every Arrow UDF the job needs ([[PythonWork]]) and hands them over by name
  * ([[PythonUdfName]]). Fused Python steps run as one Arrow UDF per vertex; their failures of stages
  * routed to a dead-letter sink come out on that stage's error edge, and so do the records whose key,
  * value or timestamp a stage's extraction failed on (`extractedInput`). Where items enter a vertex that
  * groups, sorts or joins them, one Arrow UDF per input extracts the key and values
  * ([[PythonWork.pythonExtractions]]).
  *
  * The runners: [[runner.AggregationRunner]] (aggregations whose operations the JVM runs; `aggregate2`
  * through [[runner.CoGroupedPartitions]]), [[runner.SortRunner]], [[runner.DistinctRunner]],
  * [[runner.HashJoinRunner]], [[window.WindowRunner]] (on the path [[window.WindowPlanner]] chose for each
  * window), [[runner.SequenceRestore]] (preserve_order) and [[runner.SinkRunner]]. Operations with a
  * user-defined part run in Python, whole, windows included ([[runner.CustomAggregations]]).
  *
  * A DataFrame source's output is its DataFrame (typed rows, partitioned as [[SourcePartitioning]] says);
  * aggregations that read it directly may run in Catalyst, their results typed too; typed outputs become
  * opaque items only on the edges to vertices that need them: see [[TypedPlan]] and [[TypedOutputs]].
  * A files source is the DataFrame source of what it reads ([[FileSources]]). Windows (after
  * `addTimestamps`) read the time each item carries beside it from where it was stamped ([[CarriedTimestamps]]).
  *
  * What this engine does not run yet (JVM functions, typed items other than a DataFrame's rows and the
  * results of aggregations Catalyst runs) fails before any Spark job starts, naming the vertex.
  */
final class SparkBatchEngine(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[PythonUdfName, Column], jobId: String,
    typedPlan: TypedPlan) {
  import SparkBatchEngine._
  import RowSchemas._
  import PythonWork._
  import SourcePartitioning._

  def this(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[PythonUdfName, Column], jobId: String) =
    this(spark, dag, pythonUdfs, jobId, TypedPlan(dag))

  private val outputs = mutable.Map.empty[String, DataFrame]
  private val extractedInputs = mutable.Map.empty[Edge, ExtractedInput]
  private val sourceRowsRead = mutable.Map.empty[String, DataFrame]
  private val persisted = mutable.ArrayBuffer.empty[DataFrame]
  private val counters = mutable.LinkedHashMap.empty[String, LongAccumulator]
  /** The vertices whose items are counted where they are made, not by a step of their own per row: a
    * columnar window's second stage (its windows, see [[window.ColumnarFrames]]) and a noop sink (the rows
    * it drops, see [[runner.DrainRows]]). At small slides a window makes as many rows as it reads events, and
    * the layers of iterators and counting steps around them cost more CPU than making them.
    */
  private val countedBySelf = mutable.Set.empty[String]
  private val fanOut: Map[String, Int] = dag.edges.groupBy(_.from).view.mapValues(_.size).toMap
  private val sinks = new SinkRunner(spark, dag, jobId)
  private val typedOutputs = new TypedOutputs(typedPlan, dag, pythonUdfs, counter)
  private val sinkPlans = mutable.LinkedHashMap.empty[String, String]

  private val timestamps = new CarriedTimestamps(dag, typedPlan)

  dag.vertices.foreach(requireSupported)
  SequenceRestore.requireSupported(dag)
  timestamps.requireSupported()
  requireColumnsResolveInOnePartition(dag)
  private val sequences = new SequenceRestore(spark, dag)

  /** Runs every sink; returns the items each vertex emitted (dead letters under "<vertex>.errors"). */
  def run(): Map[String, Long] = {
    try dag.vertices.foreach { v => v.description match { case Sink(_) => writeSink(v); case _ => () } }
    finally { persisted.foreach(_.unpersist()); typedOutputs.unpersist() }
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
    PythonWork.pythonExtractions(dag, typedPlan, timestamps).map(e => (e.vertex.name, e.ordinal) -> e).toMap

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
    val df = typedOutputs.output(v, () => singleInput(v)).getOrElse(sequences.assignedWhereNeeded(v, countedUnlessBySelf(v, v.description match {
      // A DataFrame source whose rows are not kept typed (see TypedPlan): its rows as Python items.
      case Source(source, _) if source.name == "dataframe" => SqlBridge.mapInArrow(rowsOfSource(v), pythonUdfs(PythonUdfName.Rows(v.name)))
      case Source(source, _) => itemsFrame(source.parameters("items").asInstanceOf[Seq[Any]], v)
      case StatelessChain(_) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(PythonUdfName.Chain(v.name)))
      case Merge(_, true) => sequences.orderedMerge(v, dag.edgesInto(v.name).map(input))
      case Merge(_, _) =>
        // A union's partitions add up, but the planner counts the merge as `localParallelism` senders and
        // restores order after it only where those are several: where its items carry their ids on, no
        // more partitions than that; and under preserve_order a merge planned as one sender, whose
        // receivers restore no order from it, is one partition holding its inputs' partitions in input
        // order (the first input's stream first).
        val union = dag.edgesInto(v.name).map(input).reduce(_ union _)
        val planned = v.localParallelism
        if (dag.preserveOrder && planned == 1) inOnePartition(union)
        else if (dag.carriesSequenceOut(v) && InPlaceRows.of(union).getNumPartitions > planned)
          union.coalesce(planned)
        else union
      case Sink(_) => sinks.output(v, singleInput(v))
      case w: WindowAggregate => windowOutput(v, w)
      case _ if PythonAggregations.runsInPython(v) => userDefinedOutput(v)
      case Aggregate(_, _, _) => AggregationRunner.aggregate(v, aggregations(v.name), orderedInputs(v))
      case RollingAggregate(_, _) => AggregationRunner.rolling(v, aggregations(v.name), singleInput(v))
      case Sort(SortPhase.LocalSort, _, reverse) => SortRunner.localSort(v, reverse, singleInput(v))
      case Sort(SortPhase.MergeSorted, _, reverse) => SortRunner.mergeSorted(v, reverse, singleInput(v))
      case MapStateful(_, _, _) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(PythonUdfName.Stateful(v.name)))
      case HashJoin(_, _, _) =>
        val streamed +: enriching = orderedInputs(v): @unchecked
        HashJoinRunner.run(v, streamed, enriching, pythonUdfs(PythonUdfName.Join(v.name)))
      case AddTimestamps(_, _) => singleInput(v) // the items with their time beside them, read on the way in
      case Distinct(_) => DistinctRunner.run(v, singleInput(v))
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

  /** The output of a vertex whose operations have a user-defined part: Python runs them (CustomAggregations). */
  private def userDefinedOutput(v: Vertex): DataFrame =
    SqlBridge.mapInArrow(CustomAggregations.input(v, orderedInputs(v)), pythonUdfs(PythonUdfName.Custom(v.name)))

  /** The output of window vertex `v` on the path [[window.WindowPlanner]] chose for it. A columnar stage counts
    * as it goes: the first the rows it reads (the items of the vertices before it), the second the
    * windows it makes.
    */
  private def windowOutput(v: Vertex, w: WindowAggregate): DataFrame = {
    val path = typedPlan.windows.paths(v.name)
    val firstStage = w.stage != AggregationStage.Combine
    if (path == WindowPath.UserDefined) userDefinedOutput(v)
    else {
      val in = path.rows.filter(_ => firstStage) match {
        case Some(typed) =>
          val edge = dag.edgesInto(v.name).head
          val projected = typed.project(output(dag.vertex(edge.from)))
          // Frames accumulate per partition, however many there are: over a local edge the rows stay where
          // they are (spreading them to the vertex's parallelism would shuffle every row to gain nothing).
          if (edge.kind == EdgeKind.Local) projected else moved(projected, edge, v.localParallelism)
        case None => singleInput(v)
      }
      val counters = path match {
        case _: WindowPath.Columnar if firstStage => typedPlan.countedByWindows.getOrElse(v.name, Nil).map(counter)
        case _: WindowPath.Columnar => countedBySelf += v.name; Seq(counter(v.name))
        case _ => Nil
      }
      WindowRunner.run(v.name, w, path, aggregations(v.name), in, dag.onlyNoopSinksRead(v.name), counters)
    }
  }

  /** What every edge into `v` delivers, in input-ordinal order. */
  private def orderedInputs(v: Vertex): Seq[DataFrame] = dag.edgesInto(v.name).sortBy(_.toOrdinal).map(input)

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
    lazy val sender = typedOutputs.items(edge.from, output(dag.vertex(edge.from)))
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
    val out = typedOutputs.items(vertex, output(dag.vertex(vertex)))
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
    val udf = pythonUdfs(PythonUdfName.Extract(e.vertex.name, edge.toOrdinal))
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
    val rows = sourceRows(dag, v, typedPlan.numberedRowSources(v.name))
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
    case EdgeKind.Broadcast => rows // the receiver collects and broadcasts it (see HashJoinRunner)
    case other => throw new UnsupportedOperationException(s"edge ${edge.from} -> ${edge.to}: ${other.describe} edges are not run yet")
  }

  private def writeSink(v: Vertex): Unit =
    sinkPlans(v.name) = sinks.write(v, output(v), if (countedBySelf(v.name)) Some(counter(v.name)) else None)

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

object SparkBatchEngine {
  /** The counter of the dead letters that `stage`, fused into `vertex`, routes to its dead-letter sink. */
  def deadLettersOf(vertex: String, stage: String): String = s"$vertex.errors/$stage"

  /** An extraction's rows for the stage, and, where the stage routes failures to a dead-letter sink, the
    * dead letters (`item`, `failure`) of the records whose extractor failed.
    */
  private final case class ExtractedInput(rows: DataFrame, deadLetters: Option[DataFrame])
}
