package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.{InPlaceRows, StageFailedException}
import io.jetspark.pipeline.Sources
import io.jetspark.pipeline.definition.BatchSource
import io.jetspark.plan.PhysicalDag
import io.jetspark.plan.VertexDescription.Source
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{DataFrame, SparkSession}

import scala.util.control.NonFatal

/** `Sources.files(path, format, options)` runs as `Sources.dataframe` of the DataFrame that
  * `spark.read.format(format).options(options).load(path)` gives: one code path for both, so a files
  * source's items are exactly the rows `df.collect()` gives for that DataFrame.
  */
object FileSources {

  /** `dag` with every files source replaced by the DataFrame source of what it reads (vertex names and
    * everything else unchanged). The files are opened here, before any Spark job of the pipeline runs:
    * a missing path or an unknown format fails the job at once, naming the source's stage.
    */
  def resolve(spark: SparkSession, dag: PhysicalDag): PhysicalDag = dag.copy(vertices = dag.vertices.map { v =>
    v.description match {
      case Source(files: BatchSource, timestamps) if files.name == "files" =>
        v.copy(description = Source(Sources.dataframe(read(spark, v.name, files)), timestamps))
      case _ => v
    }
  })

  private def read(spark: SparkSession, stage: String, files: BatchSource): DataFrame = {
    val path = files.parameters("path").toString
    val format = files.parameters("format").toString
    val options = files.parameters.collect { case (k, v) if k != "path" && k != "format" => k -> v.toString }
    val what = s"reading $format files at $path"
    val df =
      try spark.read.format(format).options(options).load(path)
      catch { case NonFatal(e) => throw new StageFailedException(stage, s"$what: ${StageFailedException.firstLine(e)}", e) }
    // Files that turn out unreadable only when scanned (a corrupt file) fail naming the stage as well.
    val rows = InPlaceRows.of(df).mapPartitions(StageFailedException.namingReadErrors(stage, what, _))
    SqlBridge.internalCreateDataFrame(spark, rows, df.schema)
  }
}
