package io.jetspark.engine.spark.epoch

import io.jetspark.connector.{ItemsStreamSource, KafkaConnector, MicroBatchTable, RateStreamSource}
import io.jetspark.core.eventtime.SubstreamsByValueProcessor
import io.jetspark.engine.spark.rows.InPlaceRows
import io.jetspark.pipeline.definition.{Extractor, SourceDefinition, TimestampPolicy}
import io.jetspark.plan.Vertex
import io.jetspark.plan.VertexDescription.Source
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.functions.{col, lit, unix_millis}
import org.apache.spark.sql.types._
import org.apache.spark.sql.{Column, DataFrame, SparkSession}

/** The stream sources of the epoch engine (docs/streaming.md, "Sources"): the streaming DataFrame whose
  * micro-batches are the epochs, and what each source gives an epoch.
  *
  *  - `items_stream` and `rate_stream` are our own Structured Streaming sources ([[ItemsStreamSource]],
  *    [[RateStreamSource]]): micro-batch partition s holds substream s, so the source's tasks are its
  *    substreams and each has its own watermark.
  *  - A streaming DataFrame (`Sources.dataframe`) is read in one task per epoch, whatever the partitions
  *    of its micro-batch. With a `substream` column, each distinct value of it is a substream with its own
  *    watermark, kept in that task ([[SubstreamsByValueProcessor]]): the task's watermark is the least of
  *    those not idle, so every stage downstream, narrow edges included, sees the minimum over the values.
  */
object EpochSources {
  /** The columns the JVM reads beside a DataFrame's rows, which the rows' UDF passes on after the item. */
  val PassedColumns: Seq[StructField] = Seq(StructField("_jetspark_ts", LongType), StructField("_jetspark_substream", StringType))

  private def definition(v: Vertex): (SourceDefinition, Option[TimestampPolicy]) = v.description match {
    case Source(source, timestamps) => (source, timestamps)
    case other => throw new IllegalStateException(s"vertex '${v.name}' (${other.describe}) is not a source")
  }

  /** Whether the vertex is the stream source of its job: a source with a choice of timestamps (the other
    * sources of a stream job are batch stages, a join's enriching sides).
    */
  def isStreamSource(v: Vertex): Boolean = v.description match {
    case Source(_, timestamps) => timestamps.isDefined
    case _ => false
  }

  /** Whether the vertex reads a streaming DataFrame: a user's, or Kafka's records through Spark's
    * connector ([[KafkaConnector]]), each of its topics' partitions a substream.
    */
  def isDataFrame(v: Vertex): Boolean = Set("dataframe", "kafka")(definition(v)._1.name)

  /** Fails, naming the vertex, where the engine does not read this source with these timestamps. */
  def requireSupported(v: Vertex): Unit = {
    val (source, timestamps) = definition(v)
    def notYet(what: String) = throw new UnsupportedOperationException(
      s"vertex '${v.name}' (${v.description.describe}): the Spark streaming engine does not run this yet: $what")
    (source.name, timestamps) match {
      case (_, None) => notYet("a stream source without its choice of timestamps")
      case ("itemsStream", Some(TimestampPolicy.Native(_))) =>
        notYet("Sources.items_stream has no native timestamps (use with_timestamps)")
      case ("itemsStream" | "rateStream", Some(_)) => ()
      case ("dataframe" | "kafka", Some(TimestampPolicy.FromItems(Extractor.PythonFn(_, _), _))) if substream(source).isDefined =>
        notYet(s"a ${if (source.name == "kafka") "Kafka source" else "DataFrame with a substream column"} takes its " +
          "timestamps natively or from a column (a field name or a Column), not from a Python function")
      case ("dataframe" | "kafka", Some(_)) => ()
      case (other, _) => notYet(s"the stream source '$other'")
    }
  }

  /** What tells a DataFrame source's substreams apart: the column it names, or a Kafka record's partition. */
  def substream(source: SourceDefinition): Option[Column] =
    if (source.name == "kafka") Some(KafkaConnector.Substream)
    else source.parameters.get("substream").collect { case s: String => col(s"`$s`") }

  /** The streaming DataFrame of source `v`, and what to release when the job ends; `everyTrigger`: where
    * it is one of ours, with a micro-batch at every trigger ([[MicroBatchTable.EveryTriggerOption]]).
    */
  def stream(spark: SparkSession, v: Vertex, everyTrigger: Boolean): (DataFrame, () => Unit) = {
    val (source, _) = definition(v)
    def ours(format: String) = spark.readStream.format(format).option(MicroBatchTable.EveryTriggerOption, everyTrigger)
    source.name match {
      case "itemsStream" =>
        val partitions = source.parameters("partitions").asInstanceOf[Seq[Seq[Any]]].map(_.map(_.asInstanceOf[Array[Byte]]))
        val id = ItemsStreamSource.register(partitions, source.parameters("itemsPerBatch").asInstanceOf[Int])
        (ours(ItemsStreamSource.Format).option(ItemsStreamSource.IdOption, id).load(), () => ItemsStreamSource.unregister(id))
      case "rateStream" =>
        (ours(RateStreamSource.Format)
          .option(RateStreamSource.RateOption, source.parameters("itemsPerSecond").toString)
          .option(RateStreamSource.PartitionsOption, source.parameters("partitions").toString).load(), () => ())
      case "dataframe" => (source.parameters("dataframe").asInstanceOf[DataFrame], () => ())
      case "kafka" =>
        def text(name: String) = source.parameters(name).toString
        (KafkaConnector.stream(spark, text("bootstrapServers"), text("subscription"), text("topic"),
          source.parameters("options").asInstanceOf[Map[String, String]]), () => ())
      case other => throw new IllegalStateException(s"vertex '${v.name}': no stream source '$other'")
    }
  }

  /** How many partitions a micro-batch of source `v` has where that is fixed: an items or rate stream's,
    * one per substream (read at every trigger, [[stream]]); a streaming DataFrame's varies.
    */
  def fixedPartitions(v: Vertex): Option[Int] = definition(v)._1 match {
    case s if s.name == "itemsStream" => Some(s.parameters("partitions").asInstanceOf[Seq[Any]].size)
    case s if s.name == "rateStream" => Some(s.parameters("partitions").toString.toInt)
    case _ => None
  }

  /** An items or rate stream's micro-batch as the source's items (item, ctl), each partition (a substream)
    * ending with its control row.
    */
  def marked(batch: DataFrame, epochId: Long): RDD[InternalRow] =
    withControls(batch, epochId, 2)(r => InternalRow(r.getBinary(2), null))

  /** The same as rows of [[EpochEngine.ExtractedSchema]] (key, values, item, ts, ctl), their time read in
    * the JVM by `timestamps` ([[jvmStamp]]).
    */
  def stamped(batch: DataFrame, epochId: Long, timestamps: TimestampPolicy): RDD[InternalRow] = {
    val stamp = jvmStamp(timestamps)
    withControls(batch, epochId, 5)(r => InternalRow(null, null, r.getBinary(2), stamp(r), null))
  }

  /** Whether an items or rate stream's items get their time in the JVM ([[stamped]]). */
  def stampedInJvm(timestamps: TimestampPolicy): Boolean = timestamps match {
    case TimestampPolicy.Native(_) | TimestampPolicy.Ingestion => true
    case _ => false
  }

  /** `batch`'s items made rows of `width` columns by `item`, each partition ending with its control row
    * (`ctl`, the last column): done once the partition has read the source's end marker (its column 3).
    */
  private def withControls(batch: DataFrame, epochId: Long, width: Int)(item: InternalRow => InternalRow): RDD[InternalRow] =
    InPlaceRows.of(batch).mapPartitionsWithIndex { (partition, rows) =>
      var done = false
      rows.flatMap { r => if (r.getBoolean(3)) { done = true; None } else Some(item(r)) } ++ Iterator.single(()).map { _ =>
        val ctl = new GenericInternalRow(width)
        ctl.update(width - 1, EpochControl(partition, epochId, Long.MinValue, done).encode)
        ctl: InternalRow
      }
    }

  /** Where an items or rate stream's items get their time in the JVM: a rate stream's native timestamp
    * is its event's (its column 4), an ingestion timestamp the wall clock when the item is read.
    */
  private def jvmStamp(timestamps: TimestampPolicy): InternalRow => Long = timestamps match {
    case TimestampPolicy.Native(_) => _.getLong(4)
    case TimestampPolicy.Ingestion => _ => System.currentTimeMillis()
    case other => throw new IllegalArgumentException(s"no time read in the JVM for $other")
  }

  /** The allowed lag of a policy with timestamps; ingestion time never goes back, so it allows none. */
  def allowedLag(timestamps: TimestampPolicy): Long = timestamps match {
    case TimestampPolicy.FromItems(_, lag) => lag
    case TimestampPolicy.Native(lag) => lag
    case _ => 0L
  }

  /** Whether the DataFrame source's time is read in the JVM, beside its rows: from a column, natively,
    * or at ingestion; else from its items in Python, or it has none.
    */
  def dataFrameTimeInJvm(timestamps: TimestampPolicy): Boolean = timestamps match {
    case TimestampPolicy.FromItems(Extractor.PythonFn(_, _), _) | TimestampPolicy.NoTimestamps => false
    case _ => true
  }

  /** The extractor of the source's time where Python reads it from the items: `with_timestamps` on an
    * items or rate stream, or on a DataFrame whose time is not read in the JVM.
    */
  def timeInPython(v: Vertex): Option[Extractor] = definition(v) match {
    case (_, Some(policy @ TimestampPolicy.FromItems(ts, _))) if !(isDataFrame(v) && dataFrameTimeInJvm(policy)) => Some(ts)
    case _ => None
  }

  /** A DataFrame micro-batch's rows in one partition, with the columns [[PassedColumns]] after them: the
    * time read from a column (null where it is read otherwise) and the substream value as a string.
    */
  def dataFrameRows(v: Vertex, batch: DataFrame): DataFrame = {
    val (source, timestamps) = definition(v)
    val time: Column = timestamps match {
      case Some(TimestampPolicy.FromItems(Extractor.FieldName(name), _)) => millis(v, batch, name, col(name))
      case Some(TimestampPolicy.FromItems(Extractor.ColumnExpr(c: Column), _)) => millis(v, batch, c.toString, c)
      case Some(TimestampPolicy.Native(_)) => val name = nativeTimeColumn(v, batch.schema); millis(v, batch, name, col(name))
      case _ => lit(null).cast(LongType)
    }
    val substream = this.substream(source).fold(lit(null).cast(StringType))(_.cast(StringType))
    batch.coalesce(1).select(batch.columns.map(c => col(s"`$c`")).toSeq ++
      Seq(time.as(PassedColumns(0).name), substream.as(PassedColumns(1).name)): _*)
  }

  /** `with_native_timestamps` on a streaming DataFrame reads its column `timestamp` (as Spark's rate and
    * Kafka sources name it) if it has one, else its only column of a timestamp type.
    */
  private def nativeTimeColumn(v: Vertex, schema: StructType): String =
    schema.fields.find(_.name == "timestamp").orElse(schema.fields.filter(f => isTimestamp(f.dataType)) match {
      case Array(only) => Some(only)
      case _ => None
    }).map(_.name).getOrElse(throw new IllegalArgumentException(
      s"vertex '${v.name}': with_native_timestamps on a streaming DataFrame reads its column 'timestamp', or else its " +
        s"only column of a timestamp type; this one has neither (columns: ${schema.simpleString})"))

  private def isTimestamp(t: DataType): Boolean = t == TimestampType || t == TimestampNTZType

  /** Column `c` (shown as `name`) of `batch` as milliseconds: a timestamp's, or an integer taken as ms. */
  private def millis(v: Vertex, batch: DataFrame, name: String, c: Column): Column = batch.select(c).schema.head.dataType match {
    case TimestampType => unix_millis(c)
    case TimestampNTZType => unix_millis(c.cast(TimestampType))
    case ByteType | ShortType | IntegerType | LongType => c.cast(LongType)
    case other => throw new IllegalArgumentException(s"vertex '${v.name}': timestamps from '$name', of type " +
      s"${other.simpleString}: a timestamp must be a timestamp or an integer number of milliseconds")
  }

  /** The items (item, ts, substream, ctl) of a DataFrame's micro-batch (`items`: the rows' UDF's output,
    * one partition), stamped `now` where the time is the ingestion time, and ending with the control row.
    */
  def dataFrameItems(items: DataFrame, epochId: Long, ingestion: Boolean): RDD[InternalRow] = {
    val rows = InPlaceRows.of(items)
    if (rows.getNumPartitions > 1) throw new IllegalStateException(s"a DataFrame source's epoch in ${rows.getNumPartitions} partitions")
    atLeastOneTask(rows).mapPartitions { it =>
      it.map { r =>
        val ts: Any = if (ingestion) System.currentTimeMillis() else if (r.isNullAt(1)) null else r.getLong(1)
        InternalRow(r.getBinary(0), ts, if (r.isNullAt(2)) null else r.getUTF8String(2).clone(), null)
      } ++ Iterator.single(()).map(_ => InternalRow(null, null, null, EpochControl(0, epochId, Long.MinValue, done = false).encode))
    }
  }

  /** `rows` of a micro-batch, in one empty task where they have none: every epoch's senders end it with a
    * control row, its barrier, and a micro-batch of no tasks would send none (its receivers would take
    * zero senders as all of them done).
    */
  def atLeastOneTask(rows: RDD[InternalRow]): RDD[InternalRow] =
    if (rows.getNumPartitions > 0) rows else rows.sparkContext.parallelize(Seq.empty[InternalRow], 1)

  /** The stage of a DataFrame source with timestamps in an epoch whose time is `nowMs`: each substream
    * value's watermark, the least of those not idle for `idleTimeoutMs` sent on; rows (item, ts, substream,
    * ctl) in, (item, ts, ctl) out.
    */
  def dataFrameWatermarks(v: Vertex, idleTimeoutMs: Long, nowMs: Long): EpochStage = {
    val lag = allowedLag(definition(v)._2.get)
    val name = v.name
    new EpochStage(name, () => new SubstreamsByValueProcessor[(Long, Array[Byte], String)](_._1, _._3, lag, idleTimeoutMs, () => nowMs),
      _.map { r =>
        if (r.isNullAt(1)) throw new IllegalArgumentException(s"vertex '$name': a row without a timestamp (null)")
        (r.getLong(1), r.getBinary(0), if (r.isNullAt(2)) null else r.getUTF8String(2).toString)
      },
      _.map { stamped => val (ts, item, _) = stamped.asInstanceOf[(Long, Array[Byte], String)]; InternalRow(item, ts) }, 3)
  }

  /** The schema of [[dataFrameItems]]. */
  val DataFrameItemsSchema: StructType = StructType(Seq(StructField("item", BinaryType), StructField("ts", LongType),
    StructField("substream", StringType), StructField(EpochControl.Column, BinaryType)))
}
