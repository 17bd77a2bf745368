package io.jetspark.engine.spark.epoch

import io.jetspark.engine.ListSinkRegistry
import io.jetspark.engine.spark.rows.RowSchemas
import io.jetspark.engine.spark.runner.{RowSinks, SinkRunner}
import io.jetspark.connector.{KafkaConnector, KafkaTransactions}
import io.jetspark.pipeline.definition.{PipelineDefinitionError, SinkDefinition}
import io.jetspark.plan.VertexDescription.Sink
import io.jetspark.plan.{PhysicalDag, Vertex}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.types.{BinaryType, LongType, StringType}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{DataFrame, SparkSession}

import scala.collection.mutable

/** The sinks of a stream's epochs (docs/streaming.md, "Sinks"): each takes the epoch's items of its input,
  * and its senders' control rows, which say whether the stream is complete. What a replayed epoch (the
  * same epoch run again after a failure, by this job or one resumed from its checkpoint) does to each:
  *  - a list or dead-letter sink writes the items as the epoch's ([[ListSinkRegistry.writeEpoch]]): a
  *    replay replaces them;
  *  - a files sink (appending) writes the epoch's rows as files named by the epoch
  *    ([[RowSinks.writeEpochFiles]]): a replay replaces them;
  *  - a foreach-batch function gets the epoch's rows and the epoch's id, as Spark's `foreachBatch` gives
  *    a micro-batch's: what it does again on a replay is the function's to decide, by the id;
  *  - a Kafka sink sends the epoch's records again, at least once; under EXACTLY_ONCE it sends them from
  *    the driver in a Kafka transaction that commits the epoch's number with them ([[KafkaTransactions]]),
  *    and a replayed epoch whose number is committed sends nothing;
  *  - a console sink prints the items again: it cannot take them back, and so is refused under
  *    EXACTLY_ONCE ([[requireExactlyOnce]]);
  *  - a noop sink computes, counts and drops them.
  * `writerRoot` names this job's writers for the life of its checkpoint; `jobId` scopes its console lists
  * and its Python row sinks.
  */
private[epoch] final class EpochSinks(spark: SparkSession, dag: PhysicalDag, writerRoot: String, jobId: String,
    exactlyOnce: Boolean) {
  private lazy val rowSinks = new RowSinks(spark, dag, jobId)
  // Under EXACTLY_ONCE, each Kafka sink's transactions.
  private val transactions = mutable.Map.empty[String, KafkaTransactions]

  /** Under EXACTLY_ONCE, the transactions of Kafka sink `v`, named after the streaming query (whose id its
    * checkpoint keeps: the same for the checkpoint's life, another for a new one at the same path) and `v`.
    */
  private def transactionsOf(v: Vertex, sink: SinkDefinition): Option[KafkaTransactions] =
    Option.when(exactlyOnce && sink.name == "kafka")(transactions.getOrElseUpdate(v.name, {
      KafkaConnector.requireConnector("sink")
      val query = Option(spark.sparkContext.getLocalProperty(EpochSinks.StreamingQueryIdProperty)).getOrElse(writerRoot)
      new KafkaTransactions(sink.parameters("bootstrapServers").toString, sink.parameters("topic").toString,
        sink.parameters("options").asInstanceOf[Map[String, String]], EpochSinks.transactionalId(s"$query/${v.name}"),
        InjectedTaskFailures.afterKafkaCommit(spark, v.name, _))
    }))

  /** Lets go of the sinks' Kafka producers. */
  def close(): Unit = { transactions.values.foreach(_.close()); transactions.clear() }

  /** The output of rows sink `v` that routes its failures, of `input` (item, ts, ctl), what it receives in
    * an epoch (item, failure, row, ts, ctl): its items' rows (`row`), the dead letters of those that do not
    * fit (`item`, and `failure` their stage), and its senders' control rows; for its error edge to read, and [[writeRouted]] to write.
    * `keep` keeps a DataFrame that is read twice until the epoch's end.
    */
  def routedRows(v: Vertex, input: DataFrame, keep: DataFrame => DataFrame): DataFrame = {
    val received = keep(input)
    val converted = rowSinks.rows(v, received.where(col(EpochControl.Column).isNull).select(RowSchemas.Item))
    val rowType = converted.schema(RowSinks.RowColumn).dataType
    // The control rows' column last, as in every vertex's output.
    keep(converted.select(col(RowSchemas.Item), col(RowSchemas.Failure), col(RowSinks.RowColumn),
      lit(null).cast(LongType).as(RowSchemas.Ts), lit(null).cast(BinaryType).as(EpochControl.Column))
      .union(received.where(col(EpochControl.Column).isNotNull).select(lit(null).cast(BinaryType).as(RowSchemas.Item),
        lit(null).cast(StringType).as(RowSchemas.Failure), lit(null).cast(rowType).as(RowSinks.RowColumn),
        col(RowSchemas.Ts), col(EpochControl.Column))))
  }

  /** Writes epoch `epochId` of rows sink `v` that routes its failures: the rows of its `output`
    * ([[routedRows]]) that fit; returns its senders' control rows.
    */
  def writeRouted(v: Vertex, output: DataFrame, epochId: Long): Seq[EpochControl] = {
    val Sink(sink) = v.description: @unchecked
    val rows = output.where(col(EpochControl.Column).isNull).select(RowSchemas.Item, RowSchemas.Failure, RowSinks.RowColumn)
    rowSinks.writeEpoch(v, rows, epochId, transactionsOf(v, sink))
    controlsOf(output)
  }

  private def controlsOf(rows: DataFrame): Seq[EpochControl] =
    rows.where(col(EpochControl.Column).isNotNull).select(EpochControl.Column).collect()
      .map(r => EpochControl.decode(r.getAs[Array[Byte]](0))).toSeq

  /** Writes `input` (item, ts, ctl), what sink vertex `v` receives in epoch `epochId`; returns its senders'
    * control rows. `keep` keeps a DataFrame that is read twice until the epoch's end.
    */
  def write(v: Vertex, input: RDD[InternalRow], epochId: Long, keep: DataFrame => DataFrame): Seq[EpochControl] = {
    val Sink(sink) = v.description: @unchecked
    sink.name match {
      case "list" | "deadLetter" =>
        val written = EpochSinks.collect(spark, input, keepItems = true)
        ListSinkRegistry.writeEpoch(sink.parameters("name").toString, ListSinkRegistry.Epoch(s"$writerRoot/${v.name}", epochId),
          written.flatMap(_.items).toSeq)
        EpochSinks.controls(written)
      case "console" =>
        val written = EpochSinks.collect(spark, input, keepItems = true)
        ListSinkRegistry.append(SinkRunner.consoleList(jobId, v.name), written.flatMap(_.items).toSeq)
        EpochSinks.controls(written)
      case "noop" => EpochSinks.controls(EpochSinks.collect(spark, input, keepItems = false))
      case _ if sink.takesRows =>
        val rows = keep(SqlBridge.internalCreateDataFrame(spark, input, EpochEngine.ItemRowSchema))
        val controls = controlsOf(rows)
        rowSinks.writeEpoch(v, rowSinks.rows(v, rows.where(col(EpochControl.Column).isNull).select(RowSchemas.Item)), epochId,
          transactionsOf(v, sink))
        controls
      case other => throw new IllegalStateException(s"sink '${v.name}': no $other sink on a stream")
    }
  }
}

object EpochSinks {
  /** The Kafka transactional id (and consumer group) of a sink's writer `writer`: the same for the life of
    * the job's checkpoint, short and of safe characters whatever the path.
    */
  /** The local property that Structured Streaming sets, on the thread that runs a micro-batch, to its query's id. */
  private val StreamingQueryIdProperty = "sql.streaming.queryId"

  private[epoch] def transactionalId(writer: String): String =
    "jetspark-" + java.security.MessageDigest.getInstance("SHA-256").digest(writer.getBytes("UTF-8"))
      .take(12).map(b => f"$b%02x").mkString

  /** The sinks the epoch engine writes to; files only appended (each epoch adds its own). */
  private[epoch] def runs(dag: PhysicalDag, v: Vertex): Boolean = v.description match {
    case Sink(sink) if sink.takesRows => sink.parameters.get("mode").forall(_ == "append")
    case Sink(sink) => Set("list", "noop", "deadLetter", "console")(sink.name)
    case _ => false
  }

  /** Fails, naming the sink, where one would write a replayed epoch again: under EXACTLY_ONCE, every sink
    * must write each epoch once.
    */
  def requireExactlyOnce(dag: PhysicalDag): Unit = dag.vertices.foreach {
    case v @ Vertex(_, Sink(sink), _, _, _) if sink.name == "console" =>
      throw new PipelineDefinitionError(v.name, PipelineDefinitionError.ExactlyOnceSink,
        "a console sink prints a replayed epoch's items again, so it cannot be exactly-once: run the job " +
          "AT_LEAST_ONCE or NONE, or write to a list, files, foreach_batch or Kafka sink, which write a replayed epoch once")
    case _ => ()
  }

  /** What one partition of a sink's input holds in an epoch: its items' pickles where the sink keeps them
    * on the driver, and the senders' control rows. Only these reach the driver.
    */
  private[epoch] final case class Written(items: Array[Array[Byte]], controls: Array[Array[Byte]])

  private val CtlAt: Int = EpochEngine.ItemRowSchema.fieldIndex(EpochControl.Column)

  private[epoch] def collect(spark: SparkSession, rows: RDD[InternalRow], keepItems: Boolean): Array[Written] =
    spark.sparkContext.runJob(rows, (partition: Iterator[InternalRow]) => {
      val items = mutable.ArrayBuffer.empty[Array[Byte]]
      val controls = mutable.ArrayBuffer.empty[Array[Byte]]
      partition.foreach { r =>
        if (!r.isNullAt(CtlAt)) controls += r.getBinary(CtlAt)
        else if (keepItems) items += r.getBinary(0)
      }
      Written(items.toArray, controls.toArray)
    })

  private[epoch] def controls(written: Array[Written]): Seq[EpochControl] = written.toSeq.flatMap(_.controls).map(EpochControl.decode)
}
