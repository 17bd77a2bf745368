package io.jetspark.engine.spark.runner

import io.jetspark.connector.{KafkaConnector, KafkaTransactions}
import io.jetspark.engine.spark.rows.{RowSchemas, StageFailedException}
import io.jetspark.pipeline.PythonRef
import io.jetspark.pipeline.definition.SinkDefinition
import io.jetspark.plan.{PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription.Sink
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.BinaryType
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.hadoop.fs.Path

import scala.util.control.NonFatal

/** Files and foreach-batch sinks on the Spark engines: they take a DataFrame of the items' rows.
  * Typed items (a DataFrame's own columns) are that DataFrame already; opaque items are turned into rows
  * by Python ([[PythonRowSinks.rows]]), and records that do not fit the schema fail the job or, when the
  * sink stage has `onError`, go out on its error edge as dead letters. A batch job is one batch: id 0; a
  * stream's epochs write one at a time ([[writeEpoch]]).
  */
private[spark] final class RowSinks(spark: SparkSession, dag: PhysicalDag, jobId: String) {
  import RowSinks._
  import RowSchemas.Failure

  /** Opaque items whose schema Python infers from them are read twice (inferring, converting): they
    * are kept until the sink has written, so that the pipeline upstream runs, and is counted, once.
    */
  private val inferredFrom = scala.collection.mutable.Map.empty[String, DataFrame]

  /** The sink vertex's output (what the engine counts and reads dead letters from): rows of the items. */
  def rows(v: Vertex, items: DataFrame): DataFrame =
    if (!isOpaque(items)) items
    else {
      val sink = definition(v)
      val stage = v.fusedChain.head
      val schema = sink.parameters.get("schema").map(_.toString)
      val deadLetter = dag.routesFailures(v)
      try {
        val input = if (schema.isDefined) items else {
          val kept = items.persist(StorageLevel.MEMORY_AND_DISK)
          inferredFrom(v.name) = kept
          // Computed here: a failure upstream fails the job as itself, not as this sink's inference.
          kept.count()
          kept
        }
        callingPython(stage, "turning items into rows")(
          if (sink.name == "kafka") python(stage).kafkaRecords(stage, functionRef(sink, "key"), functionRef(sink, "value"), deadLetter, input)
          else python(stage).rows(stage, schema.orNull, deadLetter, input))
      } catch {
        case NonFatal(e) => release(v); throw e
      }
    }

  /** Writes the sink's rows (`output` is [[rows]] as the engine counted and keeps it): a batch job's one
    * batch, files in the sink's mode.
    */
  def write(v: Vertex, output: DataFrame): Unit = writing(v, output, BatchId) { (rows, sink, path, format) =>
    rows.write.format(format).mode(param(sink, "mode")).options(options(sink)).save(path)
  }

  /** Writes epoch `epoch`'s rows of a stream's sink: its files named by the epoch, in place of those an
    * earlier attempt at the epoch wrote ([[writeEpochFiles]]); the foreach-batch function gets the
    * epoch's id as its batch id.
    */
  def writeEpoch(v: Vertex, output: DataFrame, epoch: Long, transactions: Option[KafkaTransactions] = None): Unit =
    writing(v, output, epoch, transactions) { (rows, sink, path, format) =>
      writeEpochFiles(spark, rows, format, options(sink), path, epoch)
    }

  /** Writes `output` as its sink says; a Kafka sink's records in one of `transactions` (exactly once,
    * on the driver) where given, else by the connector's tasks.
    */
  private def writing(v: Vertex, output: DataFrame, batchId: Long, transactions: Option[KafkaTransactions] = None)(
      files: (DataFrame, SinkDefinition, String, String) => Unit): Unit = try {
    val sink = definition(v)
    val stage = v.fusedChain.head
    val good =
      if (output.columns.contains(Failure)) output.where(col(Failure).isNull).select(col(s"$RowColumn.*")) else output
    sink.name match {
      case "files" =>
        val (path, format) = (param(sink, "path"), param(sink, "format"))
        // No items and no schema: nothing to infer columns from, and no format writes a row without columns.
        if (good.schema.nonEmpty) named(stage, s"writing $format files to $path")(files(good, sink, path, format))
      case "kafka" =>
        val topic = param(sink, "topic")
        named(stage, s"writing records to Kafka topic $topic")(transactions match {
          case Some(tx) =>
            tx.writeEpoch(() => good.select("key", "value").collect().iterator
              .map(r => (r.getAs[Array[Byte]](0), r.getAs[Array[Byte]](1))), batchId)
          case None => KafkaConnector.write(good, param(sink, "bootstrapServers"), topic, options(sink))
        })
      case "foreachBatch" =>
        val PythonRef(fnRef) = sink.parameters("fn"): @unchecked
        // Computed before the function runs: a failure upstream (or of a record that does not fit) is
        // not the function's, and the function's actions read the kept rows instead of rerunning the job.
        output.count()
        callingPython(stage, "the foreach_batch function raised")(
          python(stage).foreachBatch(stage, fnRef, good, batchId))
    }
  } finally release(v)

  private def release(v: Vertex): Unit = inferredFrom.remove(v.name).foreach(_.unpersist())

  private def python(stage: String): PythonRowSinks = PythonRowSinks.of(jobId).getOrElse(
    throw new StageFailedException(stage, s"job $jobId has no Python side for its rows sinks (PythonRowSinks.register)"))
}

object RowSinks {
  /** The column of a converted item's row (a struct of the sink's schema). */
  val RowColumn = "row"
  /** The batch id of a batch job's only batch. */
  val BatchId = 0L

  /** Writes `rows` as epoch `epoch`'s files under `path`, so that writing the epoch again replaces them:
    * into a staging directory first (its name starts with `_`, which Spark's readers skip), then each data
    * file is moved into `path` as `epoch-<epoch>-<its name>`, once the files an earlier attempt at the epoch
    * left there are deleted. A reader never sees one epoch's files twice.
    */
  def writeEpochFiles(spark: SparkSession, rows: DataFrame, format: String, options: Map[String, String], path: String,
      epoch: Long): Unit = {
    val staging = new Path(path, s"_staging-epoch-$epoch")
    rows.write.format(format).mode("overwrite").options(options).save(staging.toString)
    val fs = staging.getFileSystem(spark.sparkContext.hadoopConfiguration)
    val prefix = s"epoch-$epoch-"
    fs.listStatus(new Path(path)).filter(_.getPath.getName.startsWith(prefix)).foreach(f => fs.delete(f.getPath, false))
    // Data files only: not `_SUCCESS`, nor the checksum files (`.name.crc`) that move with their file.
    fs.listStatus(staging).map(_.getPath).filterNot(p => p.getName.startsWith("_") || p.getName.startsWith("."))
      .foreach { file =>
        if (!fs.rename(file, new Path(path, prefix + file.getName)))
          throw new java.io.IOException(s"could not move $file into $path")
      }
    fs.delete(staging, true)
  }

  /** Whether the engine must keep the vertex's output for more than one reading: a rows sink's output
    * feeds its writing and its dead letters, and a foreach-batch function may run several actions.
    */
  def keepsOutput(v: Vertex): Boolean = v.description match {
    case Sink(sink) => sink.takesRows
    case _ => false
  }

  private def definition(v: Vertex): SinkDefinition = v.description match {
    case Sink(sink) if sink.takesRows => sink
    case other => throw new IllegalStateException(s"vertex '${v.name}' (${other.describe}) is not a rows sink")
  }

  /** Opaque items: one binary column `item` (whatever its nullability), as every vertex of Python items gives. */
  private def isOpaque(df: DataFrame): Boolean =
    df.schema.fields.toSeq.map(f => f.name -> f.dataType) == Seq(RowSchemas.Item -> BinaryType)

  private def param(sink: SinkDefinition, name: String): String = sink.parameters(name).toString

  /** The number of the sink's Python function `name`, or -1 where it has none. */
  private def functionRef(sink: SinkDefinition, name: String): Int = sink.parameters.get(name).collect { case PythonRef(r) => r }.getOrElse(-1)

  private def options(sink: SinkDefinition): Map[String, String] = sink.parameters.get("options") match {
    case Some(m: Map[_, _]) => m.map { case (k, v) => k.toString -> v.toString }
    case _ => Map.empty
  }

  /** Runs an action of `stage`: a failure that already names a stage (a record failed, here or upstream)
    * keeps its message; anything else is this stage's failure.
    */
  private def named[T](stage: String, what: String)(body: => T): T =
    try body
    catch {
      case NonFatal(e) if StageFailedException.namesAStage(e) => throw e
      case NonFatal(e) => throw new StageFailedException(stage, s"$what: ${StageFailedException.firstLine(e)}", e)
    }

  /** Calls into Python: a Python error comes back as py4j's message holding the traceback; the failure
    * names the stage and what Python raised (`ValueError: ...`, its lines joined).
    */
  private def callingPython[T](stage: String, what: String)(body: => T): T =
    try body
    catch {
      case e: py4j.Py4JException => throw new StageFailedException(stage, s"$what: ${raisedInPython(e)}", e)
    }

  /** The exception at the end of the last traceback in `e`'s message: the lines after its frames (which
    * are indented).
    */
  private[spark] def raisedInPython(e: Throwable): String = {
    val message = Option(e.getMessage).getOrElse("")
    val traceback = message.lastIndexOf("Traceback (most recent call last):")
    if (traceback < 0) StageFailedException.firstLine(e)
    else message.substring(traceback).linesIterator.drop(1).dropWhile(_.startsWith(" "))
      .map(_.trim).filter(_.nonEmpty).mkString(" ")
  }
}
