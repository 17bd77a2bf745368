package io.jetspark.engine.spark

import io.jetspark.core.Processor
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.aggregate.AnyOrdering
import io.jetspark.core.processor._
import io.jetspark.core.snapshot.JavaSerialization
import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.core.processor.SortDefinition
import io.jetspark.pipeline.{Extractor, PythonAggregateSpec, PythonRef}
import io.jetspark.pipeline.transform.StatelessTransform
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.VertexDescription.SortPhase
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{ArrayType, BinaryType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable

/** Runs a planned batch pipeline on Spark ("Edges on Spark" in DESIGN.md): every vertex's output is a
  * DataFrame of opaque items (one binary column `item` holding a pickle); local and isolated edges are
  * narrow, round-robin edges `repartition(n)`, all-to-one edges `repartition(1)`, partitioned edges
  * `repartition(n, key)`. Fused Python steps run as one Arrow UDF per vertex (built by the Python layer,
  * see `pythonChains`); their failures of stages routed to a dead-letter sink come out on that stage's
  * error edge.
  *
  * The Python layer builds every Arrow UDF the job needs (see `pythonWork`) and hands them over by name:
  * `chain:<vertex>`, `extract:<vertex>:<input ordinal>`, `rows:<vertex>`, `stateful:<vertex>`, `join:<vertex>`.
  *
  * Aggregations: where items enter one (stage 1 of two, or the single stage), one Arrow UDF per vertex
  * extracts the grouping key and the operation's values (`pythonExtractions`); the core's aggregation
  * processors run in the Spark tasks; partial accumulators cross the shuffle Java-serialized, keyed by
  * the key's pickle; results go back to Python as pickles ([[PythonValues]]).
  *
  * A DataFrame source becomes items through one Arrow UDF that turns its rows into pickled PySpark `Row`s
  * (`dataframeSources`).
  *
  * What this engine does not run yet (windows, joins of several enriching sides, aggregate2, file
  * sources, JVM functions, typed items kept as columns) fails before any Spark job starts, naming the
  * vertex.
  */
final class SparkBatchEngine(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[String, Column], jobId: String) {
  import SparkBatchEngine._

  private val outputs = mutable.Map.empty[String, DataFrame]
  private val counters = mutable.LinkedHashMap.empty[String, LongAccumulator]
  private val fanOut: Map[String, Int] = dag.edges.groupBy(_.from).view.mapValues(_.size).toMap

  dag.vertices.foreach(requireSupported)
  SequenceStages.requireSupported(dag)
  private val sequences = new SequenceStages(spark, dag)

  /** Runs every sink; returns the items each vertex emitted (dead letters under "<vertex>.errors"). */
  def run(): Map[String, Long] = {
    try dag.vertices.foreach { v => v.description match { case Sink(_) => writeSink(v); case _ => () } }
    finally outputs.values.foreach(_.unpersist())
    counters.map { case (name, acc) => name -> acc.sum }.toMap
  }

  private val aggregations: Map[String, BoundAggregation] = dag.vertices.collect {
    case v @ Vertex(_, Aggregate(_, Seq(op: PythonAggregateSpec), _), _, _, _) => v.name -> PythonAggregations.bind(op.json)
    case v @ Vertex(_, RollingAggregate(_, op: PythonAggregateSpec), _, _, _) => v.name -> PythonAggregations.bind(op.json)
  }.toMap

  private val extractingInputs: Set[(String, Int)] = pythonExtractions(dag).map(e => (e._1.name, e._2)).toSet

  private def requireSupported(v: Vertex): Unit = v.description match {
    case Source(source, _) if source.name == "items" || source.name == "dataframe" => ()
    case StatelessChain(steps) if steps.forall(runsInPythonChain) => ()
    case Merge(_, _) | Sink(_) => ()
    case Aggregate(_, Seq(_: PythonAggregateSpec), _) | RollingAggregate(_, _: PythonAggregateSpec) => ()
    case Distinct(_) => ()
    case MapStateful(_, Extractor.PythonFn(_, _), Extractor.PythonFn(_, _)) => ()
    case HashJoin(Seq(_), Some(Extractor.PythonFn(_, _)), _) => ()
    case Sort(_, _, _) => ()
    case other => throw new UnsupportedOperationException(
      s"vertex '${v.name}' (${other.describe}): the Spark batch engine does not run this yet")
  }

  /** The vertex's whole output: for a Python chain, with the `failure` column that routes dead letters. */
  private def output(v: Vertex): DataFrame = outputs.getOrElseUpdate(v.name, {
    val df = sequences.assignedWhereNeeded(v, counted(v.name, v.description match {
      case Source(source, _) if source.name == "dataframe" =>
        SqlBridge.mapInArrow(source.parameters("dataframe").asInstanceOf[DataFrame], pythonUdfs(s"rows:${v.name}"))
      case Source(source, _) => itemsFrame(source.parameters("items").asInstanceOf[Seq[Any]], v)
      case StatelessChain(_) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(s"chain:${v.name}"))
      case Merge(_, true) => sequences.orderedMerge(v, dag.edgesInto(v.name).map(input))
      case Merge(_, _) => dag.edgesInto(v.name).map(input).reduce(_ union _)
      case Sink(_) => singleInput(v)
      case Aggregate(stage, _, keys) => aggregationStage(v.name, stage, keyed = keys.nonEmpty).run(singleInput(v))
      case RollingAggregate(key, _) =>
        val op = aggregations(v.name).op.asInstanceOf[io.jetspark.core.aggregate.AggregateOperation[Nothing, Any, Any]]
        sequences.oneToOne(v, ProcessorStage(v.name, () => if (key.isDefined) RollingAggregateProcessor.keyed(_.asInstanceOf[Extracted].key, op)
          else RollingAggregateProcessor.global(op), extracted, resultRow(keyed = key.isDefined), ItemSchema), singleInput(v))
      case Sort(SortPhase.LocalSort, _, reverse) => numberedRuns(ProcessorStage(v.name,
        () => new SortProcessor(SortDefinition(Some(sortValue), AnyOrdering, reverse)), extracted,
        e => { val x = e.asInstanceOf[Extracted]; InternalRow(x.key.bytes, rawValues(x), x.item.bytes) }, ExtractedSchema)
        .run(singleInput(v)))
      case Sort(SortPhase.MergeSorted, _, reverse) =>
        // The runs arrive in any order: (value, run, position) gives the k-way merge's order, ties to the
        // lower run, so the result does not depend on which run Spark delivers first.
        val byValue = if (reverse) AnyOrdering.reverse else AnyOrdering
        val order = Ordering.Tuple3(byValue, Ordering.Int, Ordering.Long).asInstanceOf[Ordering[Any]]
        ProcessorStage(v.name, () => new SortProcessor(SortDefinition(Some(runPosition), order, reverse = false)),
          row => (extractedFromRun(row), row.getInt(0), row.getLong(1)),
          r => InternalRow(r.asInstanceOf[(Extracted, Int, Long)]._1.item.bytes), ItemSchema).run(singleInput(v))
      case MapStateful(_, _, _) => SqlBridge.mapInArrow(singleInput(v), pythonUdfs(s"stateful:${v.name}"))
      case HashJoin(_, _, inner) => SqlBridge.mapInArrow(hashJoin(v, inner), pythonUdfs(s"join:${v.name}"))
      case Distinct(_) => ProcessorStage(v.name, () => new DistinctProcessor(_.asInstanceOf[Extracted].key), extracted,
        e => InternalRow(e.asInstanceOf[Extracted].item.bytes), ItemSchema).run(singleInput(v))
      case other => throw new IllegalStateException(s"unsupported ${other.describe}")
    }))
    // Read by several edges: computed once.
    if (fanOut.getOrElse(v.name, 0) > 1) df.persist(StorageLevel.MEMORY_AND_DISK) else df
  })

  private def itemsFrame(items: Seq[Any], v: Vertex): DataFrame = {
    val pickles = items.map {
      case bytes: Array[Byte] => bytes
      case other => throw new UnsupportedOperationException(
        s"vertex '${v.name}': the Spark batch engine runs items given from Python (pickles), not ${other.getClass.getName}")
    }
    // One partition: `Sources.items` is one substream, in the given order.
    val rows = spark.sparkContext.parallelize(pickles, numSlices = 1).map(b => InternalRow(b): InternalRow)
    SqlBridge.internalCreateDataFrame(spark, rows, ItemSchema)
  }

  private def singleInput(v: Vertex): DataFrame = dag.edgesInto(v.name) match {
    case Seq(edge) => input(edge)
    case edges => throw new IllegalStateException(s"vertex '${v.name}' has ${edges.size} inputs, expected one")
  }

  /** What `edge` delivers: the sender's data (or one stage's dead letters) — with key and values
    * extracted where the receiver aggregates items — moved as the edge kind says.
    */
  private def input(edge: Edge): DataFrame = {
    val sender = output(dag.vertex(edge.from))
    val selected = edge.errorsOf match {
      case Some(stage) => sender.where(col(Failure) === stage).select(Item)
      case None if sender.columns.contains(Failure) =>
        sender.where(col(Failure).isNull).select((Item +: sequences.columnsOn(edge)).map(col): _*)
      case None => sequences.forEdge(edge, sender)
    }
    val receiver = dag.vertex(edge.to)
    val consumesKeys = aggregations.contains(receiver.name) || (receiver.description match {
      case Distinct(_) | Sort(_, _, _) | MapStateful(_, _, _) | HashJoin(_, _, _) => true
      case _ => false
    })
    val extracting = extractingInputs((receiver.name, edge.toOrdinal))
    val rows = if (extracting) SqlBridge.mapInArrow(selected, pythonUdfs(s"extract:${receiver.name}:${edge.toOrdinal}")) else selected
    val target = receiver.localParallelism
    val moved = edge.kind match {
      case EdgeKind.Isolated => rows
      case EdgeKind.Local => if (rows.queryExecution.toRdd.getNumPartitions == target) rows else rows.repartition(target)
      case EdgeKind.RoundRobin => rows.repartition(target)
      case EdgeKind.AllToOne => rows.repartition(1)
      case EdgeKind.Partitioned(_, _) => rows.repartition(target, col(Key))
      case EdgeKind.Broadcast => rows // the receiver collects and broadcasts it (see hashJoin)
      case other => throw new UnsupportedOperationException(s"edge ${edge.from} -> ${edge.to}: ${other.describe} edges are not run yet")
    }
    val received = sequences.received(edge, moved)
    // Only vertices that consume keys read the extracted columns; a rebalanced stage gets its items back.
    if (extracting && !consumesKeys) sequences.itemsOf(received) else received
  }

  /** The processors of one aggregation vertex, with how rows become their items and back. */
  private def aggregationStage(vertex: String, stage: AggregationStage, keyed: Boolean): ProcessorStage = {
    val op = aggregations(vertex).op.asInstanceOf[io.jetspark.core.aggregate.AggregateOperation[Nothing, Any, Any]]
    val keyOf: Any => Any = _.asInstanceOf[Extracted].key
    val result = resultRow(keyed)
    def stageOf(p: () => Processor, in: InternalRow => Any, out: Any => InternalRow, schema: StructType) =
      ProcessorStage(vertex, p, in, out, schema)
    (stage, keyed) match {
      case (AggregationStage.Accumulate, true) => stageOf(() => new AccumulateByKeyProcessor(IndexedSeq(keyOf), op), extracted,
        pair => { val (key, acc) = pair.asInstanceOf[(PickledKey, Any)]; InternalRow(key.bytes, JavaSerialization.toBytes(acc)) },
        PartialSchema)
      case (AggregationStage.Accumulate, false) => stageOf(() => new AccumulateProcessor(op), extracted,
        acc => InternalRow(Array.emptyByteArray, JavaSerialization.toBytes(acc)), PartialSchema)
      case (AggregationStage.Combine, true) => stageOf(() => new CombineByKeyProcessor(op),
        row => (new PickledKey(row.getBinary(0)), JavaSerialization.fromBytes(row.getBinary(1))), result, ItemSchema)
      case (AggregationStage.Combine, false) => stageOf(() => new CombineProcessor(op),
        row => JavaSerialization.fromBytes(row.getBinary(1)), result, ItemSchema)
      case (AggregationStage.SingleStage, true) => stageOf(() => new AggregateByKeyProcessor(IndexedSeq(keyOf), op), extracted, result, ItemSchema)
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
      case "noop" => items.write.format("noop").mode("overwrite").save()
      case other => throw new UnsupportedOperationException(s"sink '${v.name}': $other sinks are not run yet")
    }
  }

  /** Every item of input 0 with its matches on input 1 (collected and broadcast), as pickled pairs
    * `(left, right)` (`right` None where nothing matches, unless `inner`), for the mapper's Python UDF.
    */
  private def hashJoin(v: Vertex, inner: Boolean): DataFrame = {
    val inputs = dag.edgesInto(v.name).map(input)
    val (streamed, enriching) = (inputs(0), inputs(1))
    val table = spark.sparkContext.broadcast(enriching.queryExecution.toRdd.map(r => (r.getBinary(0), r.getBinary(2))).collect())
    val (name, toItem) = (v.name, extracted)
    val rows = streamed.queryExecution.toRdd.mapPartitionsWithIndex { (index, partition) =>
      val builds = table.value.iterator.map { case (key, item) =>
        new Extracted(new PickledKey(key), new PickledItem(item), Array.empty, Array.empty)
      }
      val keyOf: Any => Any = _.asInstanceOf[Extracted].key
      val pair: (Any, Seq[Option[Any]]) => Any = (left, rights) =>
        (left.asInstanceOf[Extracted].item, rights.head.map(_.asInstanceOf[Extracted].item))
      val join = new HashJoinProcessor(Seq(io.jetspark.core.processor.JoinClause(keyOf, keyOf)), pair, outer = !inner)
      new ProcessorTasklet(join, io.jetspark.core.ProcessorContext(name, index, 1), IndexedSeq(partition.map(toItem), builds),
        Seq(Seq(1), Seq(0))).map(p => InternalRow(PythonValues.dumps(p)): InternalRow)
    }
    SqlBridge.internalCreateDataFrame(spark, rows, ItemSchema)
  }

  /** A result as the row of a pickled item: `(key, result)` when keyed, else the result. */
  private def resultRow(keyed: Boolean): Any => InternalRow = r => InternalRow(PythonValues.dumps(r match {
    case (key: PickledKey, value) if keyed => (key, value)
    case value => value
  }))

  /** Numbers each row of a local sort's output by its run (the partition) and its position in it. */
  private def numberedRuns(sorted: DataFrame): DataFrame = {
    val rows = sorted.queryExecution.toRdd.mapPartitionsWithIndex { (run, partition) =>
      partition.zipWithIndex.map { case (r, position) => InternalRow(run, position.toLong, r.getBinary(0), r.getArray(1), r.getBinary(2)) }
    }
    SqlBridge.internalCreateDataFrame(spark, rows, RunSchema)
  }

  /** Counts the rows of `df` as they pass (an accumulator per vertex; "<vertex>.errors" for dead letters). */
  private def counted(vertex: String, df: DataFrame): DataFrame = {
    val items = spark.sparkContext.longAccumulator(vertex)
    counters(vertex) = items
    val hasFailures = df.columns.contains(Failure)
    val errors = if (hasFailures) { val a = spark.sparkContext.longAccumulator(s"$vertex.errors"); counters(s"$vertex.errors") = a; a } else null
    val rows = df.queryExecution.toRdd.mapPartitions(_.map { row =>
      if (hasFailures && !row.isNullAt(1)) errors.add(1) else items.add(1)
      row
    })
    SqlBridge.internalCreateDataFrame(spark, rows, df.schema)
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
  /** A partial accumulator on its way to the combining stage. */
  val PartialSchema: StructType = StructType(Seq(StructField(Key, BinaryType), StructField("acc", BinaryType)))

  /** The vertices whose input items Python must first take apart, with what it extracts from each: at
    * an aggregation where items enter, the grouping key (None: a global aggregation) and the operation's
    * values in slot order; behind a `rebalance(key)` edge, the key alone (it decides the partition).
    */
  def pythonExtractions(dag: PhysicalDag): Seq[(Vertex, Int, Option[JsonNode], Seq[JsonNode])] =
    dag.vertices.flatMap {
      case v @ Vertex(_, Aggregate(stage, Seq(op: PythonAggregateSpec), keys), _, _, _) =>
        if (stage == AggregationStage.Combine) Nil
        else Seq((v, 0, keys.headOption.map(extractorJson), PythonAggregations.bind(op.json).extractors))
      case v @ Vertex(_, RollingAggregate(key, op: PythonAggregateSpec), _, _, _) =>
        Seq((v, 0, key.map(extractorJson), PythonAggregations.bind(op.json).extractors))
      case v @ Vertex(_, MapStateful(key, _, _), _, _, _) => Seq((v, 0, key.map(extractorJson), Nil))
      case v @ Vertex(_, Sort(SortPhase.LocalSort, key, _), _, _, _) =>
        Seq((v, 0, None, Seq(extractorJson(key.getOrElse(Extractor.WholeItem)))))
      case v @ Vertex(_, HashJoin(Seq(clause), _, _), _, _, _) =>
        Seq((v, 0, Some(extractorJson(clause.leftKey)), Nil), (v, 1, Some(extractorJson(clause.rightKey)), Nil))
      case v => dag.edgesInto(v.name).collect {
        case e if rebalancedByKey(e) => (v, e.toOrdinal, Some(extractorJson(e.kind.asInstanceOf[EdgeKind.Partitioned].key)), Nil)
      }
    }

  /** How Python extracts a key or value: `{"kind": "field", "name"}`, `{"kind": "python", "ref"}` (a
    * callable the Python layer numbered) or `{"kind": "item"}`.
    */
  private def extractorJson(e: Extractor): JsonNode = {
    val node = JsonNodeFactory.instance.objectNode()
    e match {
      case Extractor.FieldName(name) => node.put("kind", "field").put("name", name)
      case Extractor.PythonFn(PythonRef(ref), _) => node.put("kind", "python").put("ref", ref)
      case Extractor.WholeItem => node.put("kind", "item")
      case other => throw new UnsupportedOperationException(s"${other.describe}: keys of Python items are field names or Python functions")
    }
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
  private val extracted: InternalRow => Extracted = extractedAt(0)

  /** The same for a sorted run's row ([[RunSchema]]), whose run and position come first. */
  private val extractedFromRun: InternalRow => Extracted = extractedAt(2)

  private def extractedAt(at: Int): InternalRow => Extracted = { row =>
    val raw = row.getArray(at + 1).toObjectArray(BinaryType).map(_.asInstanceOf[Array[Byte]])
    new Extracted(new PickledKey(row.getBinary(at)), new PickledItem(row.getBinary(at + 2)), raw.map(PythonValues.loads), raw)
  }

  /** The `map_stateful` vertices whose functions run in Python: state per key (or one state) kept across
    * the items of a partition by a Python UDF, after a shuffle by key (or to one partition).
    */
  def pythonStateful(dag: PhysicalDag): Seq[(Vertex, Int, Int, Boolean, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, MapStateful(key, Extractor.PythonFn(PythonRef(create), _), Extractor.PythonFn(PythonRef(fn), _)), _, _, _) =>
      (v, create, fn, key.isDefined, dag.edgesFrom(v.name).exists(_.errorsOf.isDefined))
  }

  /** The hash joins, with their mapper (the number of its Python callable) and whether its failures go
    * to a dead-letter sink: Python applies the mapper to each `(left, right)` pair.
    */
  def pythonJoins(dag: PhysicalDag): Seq[(Vertex, Int, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, HashJoin(_, Some(Extractor.PythonFn(PythonRef(mapper), _)), _), _, _, _) =>
      (v, mapper, dag.edgesFrom(v.name).exists(_.errorsOf.isDefined))
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
