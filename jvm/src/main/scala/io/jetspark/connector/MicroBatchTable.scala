package io.jetspark.connector

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** One of our stream sources as a table that Spark reads in micro-batches only: rows of `tableSchema`,
  * from a new `stream()` for each query.
  */
private[connector] final class MicroBatchTable(tableName: String, tableSchema: StructType, stream: () => MicroBatchStream)
    extends Table with SupportsRead {
  override def name(): String = tableName
  override def schema(): StructType = tableSchema
  override def capabilities(): java.util.Set[TableCapability] = Set(TableCapability.MICRO_BATCH_READ).asJava

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new Scan {
    override def readSchema(): StructType = tableSchema
    override def description(): String = tableName
    override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = stream()
  }
}

object MicroBatchTable {
  /** The option that makes one of our sources give a micro-batch at every trigger, its offset advancing
    * even when it has nothing new. Spark leaves a source without new data out of a micro-batch (no tasks
    * at all), and in a union of several sources ([[io.jetspark.engine.spark.epoch.StreamUnion]]) each must
    * still give its every substream a partition in every epoch: a substream's control row, its watermark
    * and its end come from that partition.
    */
  val EveryTriggerOption = "everyTrigger"

  /** Whether a source's read `properties` ask for a micro-batch at every trigger ([[EveryTriggerOption]]). */
  def everyTrigger(properties: java.util.Map[String, String]): Boolean =
    new CaseInsensitiveStringMap(properties).getBoolean(EveryTriggerOption, false)
}
