package io.jetspark.connector

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.item.{PythonValues, SimpleEvent}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, ReadLimit, SupportsAdmissionControl}
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** `Sources.rate_stream(itemsPerSecond, partitions)` as a Structured Streaming source: unbounded, and
  * replayable from its offsets.
  *
  * The stream's items are numbered g = 0, 1, 2, ... from the query's first start, `start`: item g is due
  * at `start + floor(g * 1000 / itemsPerSecond)` ms, which is its timestamp. Item g belongs to substream
  * `g mod partitions`, as its sequence number `g div partitions`: each substream's sequences run
  * 0, 1, 2, ... with no gap and its timestamps never go back. A micro-batch holds the items due by the
  * time Spark asks for its end (none are made ahead of time), in DataFrame partition s for substream s
  * (even when that slice is empty), as rows (s, sequence, the SimpleEvent's pickle, false, timestamp):
  * the items stream's columns ([[ItemsStreamSource.Schema]]) and the event's time.
  */
object RateStreamSource {
  val Format: String = classOf[RateStreamProvider].getName

  val Schema: StructType = ItemsStreamSource.Schema.add(StructField("timestamp", LongType, nullable = false))

  val RateOption = "itemsPerSecond"
  val PartitionsOption = "partitions"
}

/** The offset of a rate stream: when its first item was due, how many items have been released, and (read
  * with [[MicroBatchTable.EveryTriggerOption]]) how many triggers have asked for it, which tells two
  * offsets apart when no item came due between them.
  */
private[connector] final case class RateOffset(start: Long, released: Long, triggers: Long = 0) extends Offset {
  override def json(): String = s"""{"start":$start,"released":$released,"triggers":$triggers}"""
}

private[connector] object RateOffset {
  def of(offset: Offset): RateOffset = offset match {
    case o: RateOffset => o
    case other => parse(other.json())
  }

  def parse(json: String): RateOffset = {
    val node = new ObjectMapper().readTree(json)
    if (node == null || !node.has("start") || !node.has("released"))
      throw new IllegalArgumentException(s"rate stream: offset '$json' in the checkpoint is not a rate stream's")
    RateOffset(node.get("start").asLong, node.get("released").asLong, Option(node.get("triggers")).fold(0L)(_.asLong))
  }
}

/** The items [from, until) of substream `substream` of a stream of `rate` items a second over `partitions`. */
private[connector] final case class RateSlice(substream: Int, partitions: Int, rate: Long, start: Long, from: Long,
    until: Long) extends InputPartition {
  /** The global numbers of the slice's items, in order. */
  def items: Iterator[Long] = {
    val first = from + Math.floorMod(substream - from, partitions.toLong)
    Iterator.iterate(first)(_ + partitions).takeWhile(_ < until)
  }

  def timestampOf(item: Long): Long = start + Math.multiplyExact(item, 1000L) / rate
}

private[connector] object RateSliceReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val slice = partition.asInstanceOf[RateSlice]
    val rows = slice.items.map { g =>
      val (ts, sequence) = (slice.timestampOf(g), g / slice.partitions)
      InternalRow(slice.substream, sequence, PythonValues.dumps(SimpleEvent(ts, sequence)), false, ts)
    }
    new PartitionReader[InternalRow] {
      private var current: InternalRow = _
      override def next(): Boolean = rows.hasNext && { current = rows.next(); true }
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
  }
}

/** Spark finds the source by this class's name ([[RateStreamSource.Format]]). */
final class RateStreamProvider extends TableProvider {
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = RateStreamSource.Schema

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: java.util.Map[String, String]): Table = {
    val options = new CaseInsensitiveStringMap(properties)
    def positive(name: String): Long = Option(options.get(name)).flatMap(_.toLongOption).filter(_ > 0).getOrElse(
      throw new IllegalArgumentException(s"rate stream: option '$name' must be a positive integer, was ${options.get(name)}"))
    val (rate, partitions) = (positive(RateStreamSource.RateOption), positive(RateStreamSource.PartitionsOption).toInt)
    val everyTrigger = MicroBatchTable.everyTrigger(properties)
    new MicroBatchTable(s"RateStream($rate/s, $partitions partitions)", RateStreamSource.Schema,
      () => new RateMicroBatchStream(rate, partitions, everyTrigger = everyTrigger))
  }
}

/** Releases every item due by now (`everyTrigger`: a new offset even when none is). The start is fixed by
  * the first offset and kept in every later one, so a replayed or restarted batch holds the same items with
  * the same timestamps.
  */
private[connector] final class RateMicroBatchStream(rate: Long, partitions: Int, clock: () => Long = () => System.currentTimeMillis(),
    everyTrigger: Boolean = false) extends MicroBatchStream with SupportsAdmissionControl {

  // Spark may ask more than once; the start must be one instant, the one the logged offsets carry on.
  private lazy val first = RateOffset(clock(), 0)
  override def initialOffset(): Offset = first
  override def deserializeOffset(json: String): Offset = RateOffset.parse(json)

  override def latestOffset(): Offset = throw new UnsupportedOperationException(
    "rate stream: Spark asks for latestOffset(start, limit)")

  // The read limit is ignored: a micro-batch holds every item due.
  override def latestOffset(start: Offset, limit: ReadLimit): Offset = {
    val from = RateOffset.of(start)
    // The items due by now, g with start + floor(g * 1000 / rate) <= now: those with g * 1000 < (now - start + 1) * rate.
    val due = (math.max(0L, clock() - from.start + 1) * rate + 999) / 1000
    RateOffset(from.start, math.max(from.released, due), if (everyTrigger) from.triggers + 1 else from.triggers)
  }

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = (RateOffset.of(start), RateOffset.of(end))
    Array.tabulate[InputPartition](partitions)(s => RateSlice(s, partitions, rate, until.start, from.released, until.released))
  }

  override def createReaderFactory(): PartitionReaderFactory = RateSliceReaderFactory
  override def commit(end: Offset): Unit = ()
  override def stop(): Unit = ()
  override def toString: String = s"RateStream($rate/s, $partitions partitions)"
}
