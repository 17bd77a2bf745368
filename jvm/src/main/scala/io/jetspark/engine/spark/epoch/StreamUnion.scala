package io.jetspark.engine.spark.epoch

import io.jetspark.engine.spark.rows.InPlaceRows
import io.jetspark.plan.Vertex
import org.apache.spark.rdd.PartitionPruningRDD
import org.apache.spark.sql.functions.{col, lit, struct}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{DataFrame, SparkSession}

/** The stream sources of one job as the one streaming DataFrame that Structured Streaming drives, one query
  * a job, and each source's share of a micro-batch (docs/streaming.md, "Several stream sources").
  *
  * One source is its own stream. Several are a union: each row is a source's number and, in the column of
  * that source, its row as a struct (the others' columns null), so that sources of any schemas line up.
  * Spark leaves a source without new data out of a micro-batch; ours (items and rate streams) are read
  * with a micro-batch at every trigger ([[EpochSources.stream]]), so each gives its fixed partitions, one
  * per substream, to every epoch. They come first in the union, whose partitions are its inputs' in
  * order: a source of ours has the partitions at its place among them, taken as they are, since a
  * substream is its partition's index. A streaming DataFrame's share is its rows wherever they are (it is
  * read in one task anyway), and none when it has nothing new.
  */
final class StreamUnion(spark: SparkSession, sources: Seq[Vertex]) {
  import StreamUnion._

  // Ours first: their partitions' places in the union are then fixed.
  private val ordered = sources.sortBy(v => EpochSources.fixedPartitions(v).isEmpty)
  private val opened = ordered.map(v => EpochSources.stream(spark, v, everyTrigger = sources.size > 1))
  private val place: Map[String, Int] = ordered.map(_.name).zipWithIndex.toMap
  private val firstPartition: Map[String, Int] =
    ordered.zip(ordered.scanLeft(0)(_ + EpochSources.fixedPartitions(_).getOrElse(0))).map { case (v, at) => v.name -> at }.toMap

  /** The streaming DataFrame whose micro-batches are the epochs. */
  val stream: DataFrame = opened.map(_._1) match {
    case Seq(one) => one
    case streams =>
      val schemas = streams.map(_.schema)
      streams.zipWithIndex.map { case (df, i) =>
        df.select(lit(i).as(SourceColumn) +: schemas.indices.map { j =>
          (if (j == i) struct(df.columns.toSeq.map(c => col(s"`$c`")): _*) else lit(null).cast(schemas(j))).as(rowColumn(j))
        }: _*)
      }.reduce(_ union _)
  }

  /** Source `v`'s share of `batch`, a micro-batch of [[stream]]. */
  def of(batch: DataFrame, v: Vertex): DataFrame = if (opened.size == 1) batch else {
    val i = place(v.name)
    EpochSources.fixedPartitions(v) match {
      case None => batch.where(col(SourceColumn) === i).select(col(s"${rowColumn(i)}.*"))
      case Some(partitions) =>
        val rows = InPlaceRows.of(batch)
        val first = firstPartition(v.name)
        if (rows.getNumPartitions < first + partitions) throw new IllegalStateException(
          s"source '${v.name}': a micro-batch of the sources' union has ${rows.getNumPartitions} partitions, fewer " +
            s"than the ${first + partitions} its sources of fixed partitions give")
        val schema = opened(i)._1.schema
        val (at, width) = (1 + i, schema.length)
        val name = v.name
        val own = PartitionPruningRDD.create(rows, p => p >= first && p < first + partitions).mapPartitions(_.map { r =>
          if (r.getInt(0) != i) throw new IllegalStateException(
            s"source '$name': a micro-batch partition of the sources' union holds another source's rows")
          r.getStruct(at, width)
        })
        SqlBridge.internalCreateDataFrame(spark, own, schema)
    }
  }

  /** Lets go of what the sources hold for the job. */
  def release(): Unit = opened.foreach(_._2())
}

private object StreamUnion {
  /** A union's row: its source's number, and the row of source i in column `rowColumn(i)`. */
  val SourceColumn = "_jetspark_source"
  def rowColumn(i: Int): String = s"_jetspark_source_$i"
}
