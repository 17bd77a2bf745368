package io.jetspark.engine.spark.runner

import io.jetspark.engine.spark.rows.{RowSchemas, StageFailedException}
import io.jetspark.pipeline.PythonRef
import io.jetspark.pipeline.definition.SinkDefinition
import io.jetspark.plan.{PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription.Sink
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.BinaryType
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.storage.StorageLevel

import scala.util.control.NonFatal

/** Files and foreach-batch sinks on the Spark batch engine: they take a DataFrame of the items' rows.
  * Typed items (a DataFrame's own columns) are that DataFrame already; opaque items are turned into rows
  * by Python ([[PythonRowSinks.rows]]), and records that do not fit the schema fail the job or, when the
  * sink stage has `onError`, go out on its error edge as dead letters. A batch job is one batch: id 0.
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
        callingPython(stage, "turning items into rows")(python(stage).rows(stage, schema.orNull, deadLetter, input))
      } catch {
        case NonFatal(e) => release(v); throw e
      }
    }

  /** Writes the sink's rows (`output` is [[rows]] as the engine counted and keeps it). */
  def write(v: Vertex, output: DataFrame): Unit = try {
    val sink = definition(v)
    val stage = v.fusedChain.head
    val good =
      if (output.columns.contains(Failure)) output.where(col(Failure).isNull).select(col(s"$RowColumn.*")) else output
    sink.name match {
      case "files" =>
        val (path, format, mode) = (param(sink, "path"), param(sink, "format"), param(sink, "mode"))
        // No items and no schema: nothing to infer columns from, and no format writes a row without columns.
        if (good.schema.nonEmpty)
          named(stage, s"writing $format files to $path")(good.write.format(format).mode(mode).options(options(sink)).save(path))
      case "foreachBatch" =>
        val PythonRef(fnRef) = sink.parameters("fn"): @unchecked
        // Computed before the function runs: a failure upstream (or of a record that does not fit) is
        // not the function's, and the function's actions read the kept rows instead of rerunning the job.
        output.count()
        callingPython(stage, "the foreach_batch function raised")(
          python(stage).foreachBatch(stage, fnRef, good, BatchId))
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
