package io.jetspark.engine.spark.epoch

import io.jetspark.engine.spark.PythonUdfName
import io.jetspark.engine.spark.rows.RowSchemas
import io.jetspark.engine.spark.runner.HashJoinRunner
import io.jetspark.plan.VertexDescription.{HashJoin, Source, StatelessChain}
import io.jetspark.plan.{PhysicalDag, Vertex}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{BinaryType, LongType, StringType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

import scala.collection.mutable

/** The hash joins of a stream's epochs (`hash_join`, `inner_hash_join`, one or more clauses): the streamed
  * side is the epoch's items, the enriching sides are batch stages (`Sources.items`, a batch
  * `Sources.dataframe`, Python steps over them). A join keeps nothing from one epoch to the next, so the
  * epoch's control rows pass it untouched, after its joined rows, and a window behind it sees the
  * watermarks move as if the join were not there.
  *
  * The enriching sides are read once for the job's life: on the first epoch that joins, each side's (key,
  * item) pairs are collected and broadcast ([[HashJoinRunner.tables]]), and kept until the job ends
  * ([[close]]). Records whose right key fails, where the join routes failures to a dead-letter sink, are
  * its dead letters once, in that epoch.
  */
final class EpochJoins(spark: SparkSession, dag: PhysicalDag, pythonUdfs: Map[PythonUdfName, Column]) {
  import EpochJoins._

  private val tables = mutable.Map.empty[String, Seq[Broadcast[Array[(Array[Byte], Array[Byte])]]]]
  private val sideLetters = mutable.Map.empty[String, Seq[Array[Byte]]]

  /** The vertices that no stream source reaches: the batch stages of a stream job. */
  val batchVertices: Set[String] = {
    val streamed = mutable.Set.empty[String]
    dag.vertices.foreach { v => // in topological order
      val fromStream = EpochSources.isStreamSource(v) || dag.edgesInto(v.name).exists(e => streamed(e.from))
      if (fromStream) streamed += v.name
    }
    dag.vertices.map(_.name).toSet -- streamed
  }

  /** Whether the epoch engine runs batch vertex `v`: a source of items or of a batch DataFrame, or Python
    * steps that route no failures, whose items end in a join's enriching side.
    */
  def runsBatch(v: Vertex): Boolean = v.description match {
    case Source(source, None) => source.name == "items" || source.name == "dataframe"
    case StatelessChain(_) => pythonUdfs.contains(PythonUdfName.Chain(v.name)) && dag.edgesFrom(v.name).forall(_.errorsOf.isEmpty)
    case _ => false
  }

  /** The output of join vertex `v` in an epoch whose streamed items are `streamed` (item, ts, ctl): the
    * mapper's results (item, failure, ts, ctl); and, where it routes failures to a dead-letter sink, the
    * dead letters of the records whose keys failed (item, failure): streamed records of the epoch, and
    * enriching ones in the epoch that read the enriching sides. `keep` keeps a DataFrame two readers share.
    */
  def output(v: Vertex, streamed: DataFrame, keep: DataFrame => DataFrame): (DataFrame, Option[DataFrame]) = {
    val HashJoin(_, _, inner) = v.description: @unchecked
    val (entering, failed) = routed(SqlBridge.mapInArrow(streamed, pythonUdfs(PythonUdfName.Extract(v.name, 0))), keep)
    val joined = HashJoinRunner.joined(v.name, entering, tablesOf(v), inner, passedOn = Some(EpochControl.Column))
    val sides = sideLetters.remove(v.name).filter(_.nonEmpty).map { pickles =>
      val rows = spark.sparkContext.parallelize(pickles, numSlices = 1)
        .map(b => InternalRow(b, UTF8String.fromString(v.fusedChain.head)): InternalRow)
      SqlBridge.internalCreateDataFrame(spark, rows, LetterSchema)
    }
    (SqlBridge.mapInArrow(joined, pythonUdfs(PythonUdfName.Join(v.name))), (failed ++ sides).reduceOption(_ union _))
  }

  /** Lets go of the broadcast tables: the job has ended. */
  def close(): Unit = tables.values.flatten.foreach(_.destroy())

  private def tablesOf(v: Vertex): Seq[Broadcast[Array[(Array[Byte], Array[Byte])]]] = tables.getOrElseUpdate(v.name, {
    val sides = dag.edgesInto(v.name).filter(_.toOrdinal > 0).map { e =>
      SqlBridge.mapInArrow(batchOutput(dag.vertex(e.from)), pythonUdfs(PythonUdfName.Extract(v.name, e.toOrdinal)))
    }
    val kept = mutable.ArrayBuffer.empty[DataFrame]
    try {
      val routes = sides.map(routed(_, side => { kept += side.persist(StorageLevel.MEMORY_AND_DISK); side }))
      val failed = routes.flatMap(_._2)
      if (failed.nonEmpty) sideLetters(v.name) = failed.flatMap(_.select(RowSchemas.Item).collect().map(_.getAs[Array[Byte]](0)))
      HashJoinRunner.tables(spark, routes.map(_._1))
    } finally kept.foreach(_.unpersist())
  })

  /** The items of batch vertex `v` as the stream's Python steps take them: item, ts (none), ctl (none). */
  private def batchOutput(v: Vertex): DataFrame = v.description match {
    case Source(source, _) if source.name == "items" =>
      val pickles = source.parameters("items").asInstanceOf[Seq[Array[Byte]]]
      val rows = spark.sparkContext.parallelize(pickles, numSlices = 1).map(b => InternalRow(b, null, null): InternalRow)
      SqlBridge.internalCreateDataFrame(spark, rows, EpochEngine.ItemRowSchema)
    case Source(source, _) =>
      val rows = source.parameters("dataframe").asInstanceOf[DataFrame]
      untimed(SqlBridge.mapInArrow(rows, pythonUdfs(PythonUdfName.Rows(v.name))))
    case StatelessChain(_) =>
      SqlBridge.mapInArrow(batchOutput(dag.vertex(dag.edgesInto(v.name).head.from)), pythonUdfs(PythonUdfName.Chain(v.name)))
        .where(col(RowSchemas.Failure).isNull).drop(RowSchemas.Failure)
    case other => throw new IllegalStateException(s"vertex '${v.name}': no batch ${other.describe} in a stream job")
  }
}

object EpochJoins {
  /** A dead letter: its pickle, and the stage it failed in. */
  private val LetterSchema = StructType(Seq(StructField(RowSchemas.Item, BinaryType), StructField(RowSchemas.Failure, StringType)))

  private def untimed(items: DataFrame): DataFrame =
    items.select(col(RowSchemas.Item), lit(null).cast(LongType).as(RowSchemas.Ts), lit(null).cast(BinaryType).as(EpochControl.Column))

  /** An extraction's rows for its stage, and, where the stage routes failures, the dead letters of the
    * records it failed on (item, failure), both read from one run of it.
    */
  def routed(extracted: DataFrame, keep: DataFrame => DataFrame): (DataFrame, Option[DataFrame]) =
    if (!extracted.columns.contains(RowSchemas.Failure)) (extracted, None)
    else {
      val all = keep(extracted)
      (all.where(col(RowSchemas.Failure).isNull).drop(RowSchemas.Failure),
        Some(all.where(col(RowSchemas.Failure).isNotNull).select(RowSchemas.Item, RowSchemas.Failure)))
    }
}
