package io.jetspark.engine.spark.epoch

import io.jetspark.core.eventtime.{EventTimePolicy, InsertWatermarksProcessor, SubstreamItem}
import io.jetspark.core.window.SlidingWindowPolicy
import io.jetspark.engine.spark.{PythonUdfName, Rebalancing}
import io.jetspark.engine.spark.rows.{InPlaceRows, RowSchemas}
import io.jetspark.engine.spark.window.{FrameWireFormat, WindowPath}
import io.jetspark.engine.spark.rows.RowSchemas.{Failure, Item, Ts}
import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{SlidingWindowDefinition, TimestampPolicy}
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{ArrayType, BinaryType, LongType, StringType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable

/** One run of a streaming job's epochs: where its state lives (`stateRoot`, under the job's checkpoint
  * directory) and the run's id, which Spark's state store scopes its loaded state by; `timeMs` is the
  * epoch's time, which idle timeouts and early-results periods are measured by ([[EpochClock]]).
  */
final case class EpochRun(id: Long, stateRoot: String, runId: java.util.UUID, timeMs: Long)

/** What an epoch ended with: whether the stream is complete (every sink heard that all its senders are
  * done), and the watermark the sinks' inputs coalesced to.
  */
final case class EpochOutcome(complete: Boolean, watermark: Long)

/** Runs a planned stream pipeline one epoch at a time on Spark (DESIGN.md, "Streaming on Spark: the
  * epoch engine"; docs/streaming.md): each micro-batch of the stream sources ([[StreamUnion]]) becomes one pass through the
  * physical DAG, as ordinary Spark jobs, with the epoch's control rows in band ([[EpochControl]],
  * [[EpochEdges]]) and each stateful vertex's state kept from one epoch to the next ([[EpochStage]]).
  *
  * The vertices it runs: stream sources ([[EpochSources]]) with their substreams' watermarks,
  * chains of Python steps, windows whose operations the JVM runs ([[EpochWindows]]; where the first stage
  * reads a streaming DataFrame's rows, [[RowsWindowStage]]) or, with a user-defined part, Python runs
  * ([[PythonEpochStage]]), rolling aggregations ([[EpochRolling]], or
  * Python's where [[EpochRolling.runsInPython]]), `map_stateful` (Python's, [[PythonEpochStage]]),
  * and sinks ([[EpochSinks]]; a rows sink's misfits on its error edge). Anything else fails before the
  * query starts, naming the vertex.
  */
final class EpochEngine(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[PythonUdfName, Column], stateRoot: String,
    idleTimeoutMs: Long, extractions: SourceExtractions, jobId: String, exactlyOnce: Boolean) {
  import EpochEngine._

  private val runId = java.util.UUID.randomUUID()
  private val clock = new EpochClock
  private val operatorIds: Map[String, Int] = dag.vertices.map(_.name).zipWithIndex.toMap
  /** The run's figures per vertex. */
  val metrics = new EpochMetrics(spark.sparkContext, dag,
    dag.vertices.collect { case v if v.description.isInstanceOf[WindowAggregate] => v.name }.toSet)

  private val joins = new EpochJoins(spark, dag, pythonUdfs)
  // The sinks' writers are named after the state's root: the same for the life of the checkpoint.
  private val sinks = new EpochSinks(spark, dag, stateRoot, jobId, exactlyOnce)
  private val rowsWatermarks = new RowsWatermarks(stateRoot, spark.sparkContext.hadoopConfiguration)

  dag.vertices.foreach(requireSupported)
  EpochSequence.requireSupported(dag, v => pythonUdfs.contains(PythonUdfName.Custom(v.name)))

  private def requireSupported(v: Vertex): Unit = v.description match {
    // A batch stage: read once, as a join's enriching side.
    case _ if joins.batchVertices(v.name) => if (!joins.runsBatch(v) || !dag.edgesFrom(v.name).forall(enriches)) unsupported(v)
    case Source(_, _) => EpochSources.requireSupported(v)
    case StatelessChain(_) if pythonUdfs.contains(PythonUdfName.Chain(v.name)) => ()
    case Merge(_, _) => ()
    case HashJoin(_, _, _) if pythonUdfs.contains(PythonUdfName.Join(v.name)) => ()
    case WindowAggregate(_, _, op: PythonAggregateSpec, _) if !PythonAggregations.runsInPython(op) => ()
    // A user-defined operation: the window runs in Python, one stage (the planner's AggregationStageRule).
    case WindowAggregate(AggregationStage.SingleStage, _, _, _) if pythonUdfs.contains(PythonUdfName.Custom(v.name)) => ()
    // In the JVM, or in Python with its state kept across epochs (EpochRolling.runsInPython).
    case RollingAggregate(_, op: PythonAggregateSpec) if !PythonAggregations.runsInPython(op) ||
      pythonUdfs.contains(PythonUdfName.Custom(v.name)) => ()
    case MapStateful(_, _, _) if pythonUdfs.contains(PythonUdfName.Stateful(v.name)) => ()
    case Sink(_) if EpochSinks.runs(dag, v) => ()
    case _ => unsupported(v)
  }

  private def unsupported(v: Vertex): Nothing = throw new UnsupportedOperationException(
    s"vertex '${v.name}' (${v.description.describe}): the Spark streaming engine does not run this yet")

  /** Whether `edge` takes a batch stage's items on to another batch stage or into a join's enriching side. */
  private def enriches(edge: Edge): Boolean = joins.batchVertices(edge.to) ||
    (edge.toOrdinal > 0 && dag.vertex(edge.to).description.isInstanceOf[HashJoin])

  /** Lets go of what the job kept for its whole life: the joins' enriching sides, the sinks' producers. */
  def close(): Unit = { joins.close(); sinks.close() }

  /** The windows whose first stage reads a source's rows in the JVM ([[RowsWindowStage]]). */
  def typedWindows: Seq[String] = extractions.rowsWindows.map(_.window.name)

  /** Those of them whose frames are columns ([[ColumnarEpochCombine]]). */
  def columnarWindows: Seq[String] = extractions.rowsWindows.collect { case RowsWindow(v, _: WindowPath.Columnar, _) => v.name }

  /** The path of the first stage of window second stage `v`, where that stage reads a source's rows. */
  private def rowsPathInto(v: Vertex): Option[WindowPath] =
    extractions.rowsWindows.collectFirst { case RowsWindow(first, path, _) if dag.edgesInto(v.name).head.from == first.name => path }

  /** Runs epoch `epochId` over `batch`: each stream source's micro-batch, by its vertex ([[StreamUnion.of]]). */
  def runEpoch(batch: Vertex => DataFrame, epochId: Long): EpochOutcome = {
    val epoch = EpochRun(epochId, stateRoot, runId, clock.nextEpoch())
    val outputs = mutable.Map.empty[String, DataFrame]
    val kept = mutable.ArrayBuffer.empty[DataFrame]
    // Per vertex, the dead letters of records its extractions failed on (item, failure).
    val extractionLetters = mutable.Map.empty[String, DataFrame]

    def keep(df: DataFrame): DataFrame = { kept += df.persist(StorageLevel.MEMORY_AND_DISK); df }

    // A vertex's output: item, ts, ctl; where its Python steps route failures, also `failure` after the item.
    def output(v: Vertex): DataFrame = outputs.getOrElseUpdate(v.name, read(v, counted(v, assignedWhereNeeded(v, v.description match {
      case Source(_, timestamps) => sourceOutput(v, batch(v), timestamps, epoch, lettersKept(v, _))
      case StatelessChain(_) => SqlBridge.mapInArrow(received(dag.edgesInto(v.name).head), pythonUdfs(PythonUdfName.Chain(v.name)))
      case Merge(_, ordered) =>
        val schema = if (dag.keepsSequenceIn(v)) EpochSequence.withIds(ItemRowSchema) else ItemRowSchema
        val branches = dag.edgesInto(v.name).map(e => InPlaceRows.of(received(e)))
        SqlBridge.internalCreateDataFrame(spark,
          StatelessEpoch.merged(v.name, branches, schema, v.localParallelism, epochId, ordered), schema)
      case HashJoin(_, _, _) =>
        val (out, failed) = joins.output(v, received(dag.edgesInto(v.name).head), keep)
        failed.foreach(keepLetters(v, _))
        out
      case WindowAggregate(_, _, _, _) if pythonUdfs.contains(PythonUdfName.Custom(v.name)) =>
        keptInPython(v, PythonUdfName.Custom(v.name), Some(metrics.lateEvents(v.name)))
      case WindowAggregate(_, s: SlidingWindowDefinition, op: PythonAggregateSpec, _) if extractions.readingRows(v).isDefined =>
        val extraction = extractions.readingRows(v).get
        val (source, rows) = (extraction.source, extraction.rowsWindow.get)
        // The substream's watermark as of the epoch before, as the stage's tasks noted it (or, in a driver's
        // first epoch, as the epoch before kept it).
        val before = metrics.watermarkOf(source.name).orElse(rowsWatermarks.after(source.name, epochId - 1))
          .getOrElse(Long.MinValue)
        val frames = new RowsWindowStage(v.name, rows.path, SlidingWindowPolicy(s.sizeMs, s.slideMs),
          PythonAggregations.bindInputs(Seq(op)), rows.allowedLagMs).run(batch(source), epochId, before,
          metrics.itemsOutCounter(source.name), metrics.lateEvents(v.name), metrics.watermarksOf(source.name))
        SqlBridge.internalCreateDataFrame(spark, frames, framesSchemaOf(rows.path))
      case w @ WindowAggregate(AggregationStage.Combine, s: SlidingWindowDefinition, _, key) if rowsPathInto(v).isDefined =>
        val path = rowsPathInto(v).get
        val (rows, senders, _) = stagedInput(v, framesSchemaOf(path))
        val unread = dag.onlyNoopSinksRead(v.name)
        val out = path match {
          case WindowPath.Columnar(_, frames) =>
            new ColumnarEpochCombine(v.name, frames, SlidingWindowPolicy(s.sizeMs, s.slideMs), key.isDefined, unread)
              .run(spark, rows, senders, epoch, operatorIds(v.name), metrics.stateOf(v.name), metrics.lateEvents(v.name))
          case _ =>
            // A result's items are the rows the first stage read.
            EpochWindows.stage(v.name, w, PythonAggregations.bindInputs(Seq(w.op.asInstanceOf[PythonAggregateSpec])), unread,
              epoch.timeMs, path.rows.get.rowItems).run(spark, rows, FramesSchema.length - 1, senders, epoch, operatorIds(v.name),
              metrics.stateOf(v.name), Some(metrics.lateEvents(v.name)))
        }
        SqlBridge.internalCreateDataFrame(spark, out, ItemRowSchema)
      case w: WindowAggregate =>
        val schema = if (w.stage == AggregationStage.Combine) FramesSchema else ExtractedSchema
        val (rows, senders, _) = stagedInput(v, schema)
        // A single-stage window that routes failures sends its late events to the dead-letter sink.
        val lateLetters = Option.when(dag.routesFailures(v))(dag.ownStage(v))
        val stage = EpochWindows.stage(v.name, w, PythonAggregations.bindInputs(Seq(w.op.asInstanceOf[PythonAggregateSpec])),
          dag.onlyNoopSinksRead(v.name), epoch.timeMs, identity, lateLetters)
        val out = stage.run(spark, rows, schema.length - 1, senders, epoch, operatorIds(v.name), metrics.stateOf(v.name),
          Some(metrics.lateEvents(v.name)))
        SqlBridge.internalCreateDataFrame(spark, out,
          if (w.stage == AggregationStage.Accumulate) FramesSchema else if (lateLetters.isDefined) RoutedItemRowSchema else ItemRowSchema)
      // A rows sink whose records that do not fit go to its error edge (EpochSinks.routedRows).
      case Sink(_) => sinks.routedRows(v, received(dag.edgesInto(v.name).head), keep)
      case MapStateful(_, _, _) => keptInPython(v, PythonUdfName.Stateful(v.name))
      case RollingAggregate(_, _) if pythonUdfs.contains(PythonUdfName.Custom(v.name)) => keptInPython(v, PythonUdfName.Custom(v.name))
      case RollingAggregate(key, op: PythonAggregateSpec) =>
        val (rows, senders, _) = stagedInput(v, ExtractedSchema)
        val out = EpochRolling.stage(v.name, key.isDefined, PythonAggregations.bindInputs(Seq(op)))
          .run(spark, rows, ExtractedSchema.length - 1, senders, epoch, operatorIds(v.name), metrics.stateOf(v.name), None)
        SqlBridge.internalCreateDataFrame(spark, out, ItemRowSchema)
      case other => throw new IllegalStateException(s"unsupported ${other.describe}")
    }))))

    // A vertex that starts an ordered stream gives each data row its id of the epoch (EpochSequence).
    def assignedWhereNeeded(v: Vertex, df: DataFrame): DataFrame =
      if (!v.assignsSequence) df
      else SqlBridge.internalCreateDataFrame(spark, EpochSequence.assigned(InPlaceRows.of(df), df.schema, dag.firstSubstream(v)),
        EpochSequence.withIds(df.schema))

    def counted(v: Vertex, df: DataFrame): DataFrame =
      SqlBridge.internalCreateDataFrame(spark, metrics.counted(v.name, InPlaceRows.of(df), df.schema.length - 1,
        Option.when(df.columns.contains(Failure))(df.schema.fieldIndex(Failure))), df.schema)

    // Read by several edges: computed once, so that a stateful vertex commits its epoch once.
    def read(v: Vertex, df: DataFrame): DataFrame = if (dag.edgesFrom(v.name).size > 1) keep(df) else df

    // What the sender of `edge` sends on it (item, ts, ctl): its results, with their ids where the edge
    // carries them, or on an error edge the dead letters of the stage, with the sender's control rows.
    def sent(edge: Edge): DataFrame = {
      val out = output(dag.vertex(edge.from))
      val results = EpochSequence.keptIf(edge.carriesSequence, out)
      edge.errorsOf match {
        case None if out.columns.contains(Failure) => results.where(col(Failure).isNull).drop(Failure)
        case None => results
        case Some(stage) =>
          val own = if (out.columns.contains(Failure)) out.where(col(Failure) === stage || col(EpochControl.Column).isNotNull)
            else out.where(col(EpochControl.Column).isNotNull)
          val letters = extractionLetters.get(edge.from).map(_.where(col(Failure) === stage).select(col(Item),
            lit(null).cast(LongType).as(Ts), lit(null).cast(BinaryType).as(EpochControl.Column)))
          (own.select(ItemColumns.map(col): _*) +: letters.toSeq).reduce(_ union _)
      }
    }

    // What `edge` delivers to a vertex that keeps nothing between epochs (item, ts, ctl; with their ids
    // where the receiver carries them on), moved as its kind says: behind a distributed edge, each
    // partition in sequence order where the edge restores it, and with one control row of its own
    // (StatelessEpoch).
    def received(edge: Edge): DataFrame = {
      val moved = edge.kind match {
        case EdgeKind.Local | EdgeKind.Isolated => sent(edge)
        case kind =>
          val receiver = dag.vertex(edge.to)
          val byKey = Rebalancing.rebalancedByKey(edge)
          val rows = if (byKey) extracted(receiver, edge.toOrdinal, sent(edge)) else sent(edge)
          val (schema, ctlAt) = (rows.schema, rows.schema.length - 1)
          val (shuffled, senders) = EpochEdges.realize(InPlaceRows.of(rows), schema, ctlAt, kind, receiver.localParallelism,
            Some(0).filter(_ => byKey))
          val ordered = if (edge.restoresSequence) EpochSequence.restored(shuffled, schema) else shuffled
          val own = StatelessEpoch.ownControls(receiver.name, ordered, ctlAt, schema.length, senders, epochId)
          SqlBridge.internalCreateDataFrame(spark, own, schema).select(itemColumns(schema).map(col): _*)
      }
      EpochSequence.keptIf(dag.keepsSequence(edge), moved)
    }

    /** What stateful vertex `v` receives over its one input edge, as rows of `schema` (with the items' ids
      * where `v` carries them on, in their order where the edge restores it): where that is an extraction,
      * its items taken apart by Python on the sending side; and from how many senders, and the rows' schema.
      */
    def stagedInput(v: Vertex, schema: StructType): (RDD[InternalRow], Int, StructType) = {
      val edge = dag.edgesInto(v.name).head
      val extractsHere = schema == ExtractedSchema && extractions.extractingAtSource(v).isEmpty
      val rows = if (extractsHere) extracted(v, 0, sent(edge)) else sent(edge)
      val sentSchema = if (EpochSequence.carried(rows.schema)) EpochSequence.withIds(schema) else schema
      val (moved, senders) = EpochEdges.realize(InPlaceRows.of(rows), sentSchema, sentSchema.length - 1, edge.kind,
        v.localParallelism, Some(0))
      if (!EpochSequence.carried(sentSchema)) (moved, senders, schema)
      else {
        val ordered = if (edge.restoresSequence) EpochSequence.restored(moved, sentSchema) else moved
        val kept = EpochSequence.keptIf(dag.keepsSequence(edge), SqlBridge.internalCreateDataFrame(spark, ordered, sentSchema))
        (InPlaceRows.of(kept), senders, kept.schema)
      }
    }

    // What Python takes apart of `items` entering input `ordinal` of `v` (ExtractedSchema); where `v`
    // routes its failures, the records its extraction failed on kept aside as its dead letters.
    def extracted(v: Vertex, ordinal: Int, items: DataFrame): DataFrame =
      lettersKept(v, SqlBridge.mapInArrow(items, pythonUdfs(PythonUdfName.Extract(v.name, ordinal))))

    // An extraction's rows at `v`, the records it failed on kept aside as dead letters of `v`'s edges.
    def lettersKept(v: Vertex, extraction: DataFrame): DataFrame = {
      val (rows, failed) = EpochJoins.routed(extraction, keep)
      failed.foreach(keepLetters(v, _))
      rows
    }

    // Dead letters (item, failure) of `v`'s extractions, beside those it already has this epoch.
    def keepLetters(v: Vertex, letters: DataFrame): Unit =
      extractionLetters(v.name) = extractionLetters.get(v.name).fold(letters)(_ union letters)

    // A stage whose Python UDF keeps state over its items (PythonEpochStage); `late` counts the events it drops.
    def keptInPython(v: Vertex, udf: PythonUdfName, late: Option[LongAccumulator] = None): DataFrame = {
      val (rows, senders, schema) = stagedInput(v, ExtractedSchema)
      new PythonEpochStage(v.name, pythonUdfs(udf), dag.routesFailures(v)).run(spark, rows, schema, senders, epoch,
        operatorIds(v.name), metrics.stateOf(v.name), late)
    }

    try {
      // Every sink's senders: the stream is complete when all of them are done.
      val sinkControls = dag.vertices.collect {
        case v @ Vertex(_, Sink(_), _, _, _) if dag.routesFailures(v) => sinks.writeRouted(v, output(v), epochId)
        case v @ Vertex(_, Sink(_), _, _, _) =>
          sinks.write(v, metrics.counted(v.name, InPlaceRows.of(received(dag.edgesInto(v.name).head)), ItemRowSchema.length - 1),
            epochId, keep)
      }.flatten
      for (extraction <- extractions.all if extraction.rowsWindow.isDefined; watermark <- metrics.watermarkOf(extraction.source.name))
        rowsWatermarks.write(extraction.source.name, epochId, watermark)
      val complete = sinkControls.forall(_.done)
      EpochOutcome(complete, if (complete) Long.MaxValue else EpochControl.coalesce(sinkControls, Long.MinValue).watermark)
    } finally kept.foreach(_.unpersist())
  }

  /** The source's items of the epoch, one partition per source task (EpochSources), each ending with its
    * control row; with timestamps, each substream's watermark from a processor kept across epochs, and
    * where a window reads the source straight, its extraction's rows ([[SourceExtraction]]). `routed` takes
    * Python's extraction apart, keeping the records whose time failed aside as dead letters.
    */
  private def sourceOutput(v: Vertex, batch: DataFrame, timestamps: Option[TimestampPolicy], epoch: EpochRun,
      routed: DataFrame => DataFrame): DataFrame =
    if (EpochSources.isDataFrame(v)) dataFrameOutput(v, batch, timestamps, epoch, routed)
    else timestamps match {
      case Some(policy) if EpochSources.stampedInJvm(policy) =>
        watermarked(v, EpochSources.stamped(batch, epoch.id, policy), EpochSources.allowedLag(policy), epoch)
      case _ => timedInPython(v, SqlBridge.internalCreateDataFrame(spark, EpochSources.marked(batch, epoch.id), SourceSchema),
        timestamps, epoch, routed)
    }

  /** The source's items (item, ctl) stamped by Python with their time, or without time. */
  private def timedInPython(v: Vertex, items: DataFrame, timestamps: Option[TimestampPolicy], epoch: EpochRun,
      routed: DataFrame => DataFrame): DataFrame =
    timestamps match {
      case Some(TimestampPolicy.FromItems(_, lagMs)) =>
        val reader = extractions.of(v).windowAtSource.getOrElse(v)
        val stamped = routed(SqlBridge.mapInArrow(items, pythonUdfs(PythonUdfName.Extract(reader.name, 0))))
        watermarked(v, InPlaceRows.of(stamped), lagMs, epoch)
      case _ => items.select(col("item"), org.apache.spark.sql.functions.lit(null).cast(LongType).as("ts"), col(EpochControl.Column))
    }

  /** Stamped items (rows of [[ExtractedSchema]]) through each substream's [[InsertWatermarksProcessor]]: the
    * items with their time, or where a window reads the source straight, the whole rows of its extraction.
    */
  private def watermarked(v: Vertex, stamped: RDD[InternalRow], lagMs: Long, epoch: EpochRun): DataFrame = {
    val policy = EventTimePolicy[(Long, InternalRow)](_._1, lagMs, idleTimeoutMs)
    val now = epoch.timeMs
    // An epoch's restore is no restart: the substream's idle timer runs on from the epoch before.
    val stage = new EpochStage(v.name, () => new InsertWatermarksProcessor(policy, 1, () => now, idleTimersSurviveRestore = true), rows => {
      val withoutControl = UnsafeProjection.create(ExtractedSchema.fields.init.map(_.dataType))
      rows.map(r => SubstreamItem(0, (r.getLong(TsAt), withoutControl(r).copy())))
    }, _.map(_.asInstanceOf[(Long, InternalRow)]._2), ExtractedSchema.length)
    val out = stage.run(spark, stamped, ExtractedSchema.length - 1, 1, epoch, operatorIds(v.name), metrics.stateOf(v.name), None)
    val extracted = SqlBridge.internalCreateDataFrame(spark, out, ExtractedSchema)
    if (extractions.of(v).windowAtSource.isDefined) extracted else extracted.select(ItemColumns.map(col): _*)
  }

  /** A streaming DataFrame's micro-batch: its rows as items in one task, their time read beside them in
    * the JVM and each substream value's watermark kept there, or their time read by Python.
    */
  private def dataFrameOutput(v: Vertex, batch: DataFrame, timestamps: Option[TimestampPolicy], epoch: EpochRun,
      routed: DataFrame => DataFrame): DataFrame = {
    val items = SqlBridge.mapInArrow(EpochSources.dataFrameRows(v, batch), pythonUdfs(PythonUdfName.Rows(v.name)))
    val rows = EpochSources.dataFrameItems(items, epoch.id, ingestion = timestamps.contains(TimestampPolicy.Ingestion))
    if (timestamps.exists(EpochSources.dataFrameTimeInJvm)) {
      val out = EpochSources.dataFrameWatermarks(v, idleTimeoutMs, epoch.timeMs)
        .run(spark, rows, 3, 1, epoch, operatorIds(v.name), metrics.stateOf(v.name), None)
      SqlBridge.internalCreateDataFrame(spark, out, ItemRowSchema)
    } else timedInPython(v, SqlBridge.internalCreateDataFrame(spark, rows, EpochSources.DataFrameItemsSchema)
      .select(col("item"), col(EpochControl.Column)), timestamps, epoch, routed)
  }
}

object EpochEngine {
  /** Items between vertices: the item's pickle, its time, the control row's bytes. */
  val ItemRowSchema: StructType = StructType(Seq(StructField("item", BinaryType), StructField("ts", LongType),
    StructField(EpochControl.Column, BinaryType)))
  private val ItemColumns = ItemRowSchema.fieldNames.toSeq
  /** The columns of an item between vertices among those of `schema`: with their ids where it has them. */
  private def itemColumns(schema: StructType): Seq[String] =
    if (EpochSequence.carried(schema)) EpochSequence.withIds(ItemRowSchema).fieldNames.toSeq else ItemColumns
  /** Items where the vertex routes failures: a dead letter's item is its pickle, and `failure` its stage. */
  val RoutedItemRowSchema: StructType = StructType(ItemRowSchema.fields.head +: StructField(Failure, StringType) +:
    ItemRowSchema.fields.tail)
  /** The source's items before their time is read. */
  val SourceSchema: StructType = StructType(Seq(StructField("item", BinaryType), StructField(EpochControl.Column, BinaryType)))
  /** An extraction where items enter a window (or are stamped at the source): key, values, item, ts, ctl. */
  val ExtractedSchema: StructType = StructType(Seq(StructField("key", BinaryType), StructField("values", ArrayType(BinaryType)),
    StructField("item", BinaryType), StructField("ts", LongType), StructField(EpochControl.Column, BinaryType)))
  private val TsAt = ExtractedSchema.fieldIndex("ts")
  /** One key's frames between a window's two stages, and the control row's bytes. */
  val FramesSchema: StructType = StructType(RowSchemas.FramesSchema.fields :+
    StructField(EpochControl.Column, BinaryType))
  /** The same where the frames are columns ([[FrameWireFormat]]). */
  val ColumnarFramesSchema: StructType = StructType(FrameWireFormat.Schema.fields :+ StructField(EpochControl.Column, BinaryType))

  /** The rows between the two stages of a window whose first stage reads the source's rows on `path`. */
  def framesSchemaOf(path: WindowPath): StructType = path match {
    case _: WindowPath.Columnar => ColumnarFramesSchema
    case _ => FramesSchema
  }
}
