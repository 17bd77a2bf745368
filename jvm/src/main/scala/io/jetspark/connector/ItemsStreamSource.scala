package io.jetspark.connector

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, ReadLimit, SupportsTriggerAvailableNow}
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** `Sources.itemsStream` as a Structured Streaming source: finite, deterministic, one cut per micro-batch.
  *
  * Micro-batch b holds, for every substream s, its items [b*k, (b+1)*k) as rows (s, position, item, false),
  * in DataFrame partition s (even when that slice is empty). From the batch holding s's last item on (for an
  * empty substream: in every batch), partition s ends with the marker (s, len(s), null, true), so a reader
  * knows a substream is done from the batch alone. There are max(1, ceil(longest / k)) batches; read with
  * [[MicroBatchTable.EveryTriggerOption]], batches after those hold the markers alone, one per trigger.
  *
  * A pause (Python's `Sources.PAUSE`, an empty pickle: no pickle is empty) takes an item's place in the
  * cut and delivers nothing, so a substream can be silent in some batches and deliver again later.
  *
  * The items stay in a driver-side registry under an id; each input partition carries its own slice of
  * them, so executors never need the registry.
  */
object ItemsStreamSource {

  /** For `spark.readStream.format(Format).option("id", id).load()`. */
  val Format: String = classOf[ItemsStreamProvider].getName

  val Schema: StructType = StructType(Seq(
    StructField("substream", IntegerType, nullable = false),
    StructField("offset", LongType, nullable = false),
    StructField("item", BinaryType, nullable = true),
    StructField("done", BooleanType, nullable = false)))

  /** The option naming the registered items. */
  val IdOption = "id"

  private val registry = new ConcurrentHashMap[String, RegisteredItems]()

  /** Keeps the substreams (each item a pickle) on the driver and returns the id a query reads them by. */
  def register(partitions: Seq[Seq[Array[Byte]]], itemsPerBatch: Int): String = {
    if (itemsPerBatch <= 0)
      throw new IllegalArgumentException(s"items stream: itemsPerBatch must be positive, was $itemsPerBatch")
    val id = s"items-stream-${UUID.randomUUID()}"
    registry.put(id, RegisteredItems(partitions.map(_.toVector).toVector, itemsPerBatch))
    id
  }

  /** Whether an item's pickle is a pause, which holds its place in the cut but is no item. */
  def isPause(pickle: Array[Byte]): Boolean = pickle.isEmpty

  /** Forgets the items; a query already started keeps reading the ones it was given. */
  def unregister(id: String): Unit = registry.remove(id)

  private[connector] def lookUp(id: String): RegisteredItems = Option(registry.get(id)).getOrElse(
    throw new IllegalArgumentException(
      s"items stream: no items are registered under id '$id' (register them with ItemsStreamSource.register " +
        "before the query starts, and again before it restarts from its checkpoint)"))
}

/** The substreams of one registration and the cut of its micro-batches: the one place that says which
  * items and markers a range of released batches holds.
  */
private[connector] final case class RegisteredItems(substreams: Vector[Vector[Array[Byte]]], itemsPerBatch: Int) {

  /** How many micro-batches the stream has; at least one, so even an empty stream says it is done. */
  val totalBatches: Long = math.max(1L, substreams.map(s => ceilDiv(s.size.toLong, itemsPerBatch)).maxOption.getOrElse(0L))

  /** One partition per substream, in order, for the batches [from, until). */
  def slices(from: Long, until: Long): Array[InputPartition] = substreams.zipWithIndex.map { case (items, s) =>
    val first = math.min(from * itemsPerBatch, items.size.toLong)
    val end = math.min(until * itemsPerBatch, items.size.toLong)
    ItemsSlice(s, first, items.slice(first.toInt, end.toInt).toArray, done = end == items.size): InputPartition
  }.toArray

  private def ceilDiv(n: Long, d: Long): Long = (n + d - 1) / d
}

/** The offset of an items stream: how many micro-batches have been released; read at every trigger, also
  * how many the items make (`total`), as a count past them no longer shows whether they changed.
  */
private[connector] final case class ReleasedBatches(count: Long, total: Option[Long] = None) extends Offset {
  override def json(): String = total.fold(count.toString)(t => s"""{"released":$count,"total":$t}""")
}

private[connector] object ReleasedBatches {
  // Spark may hand back an offset read from its log in its own serialized form rather than as this class.
  def of(offset: Offset): ReleasedBatches = offset match {
    case released: ReleasedBatches => released
    case other => parse(other.json())
  }

  def parse(json: String): ReleasedBatches = {
    def field(node: com.fasterxml.jackson.databind.JsonNode, name: String) =
      Option(node.get(name)).filter(_.canConvertToLong).map(_.asLong)
    val counted = json.trim.toLongOption.map(ReleasedBatches(_)).orElse(
      scala.util.Try(new com.fasterxml.jackson.databind.ObjectMapper().readTree(json)).toOption.flatMap { node =>
        for (count <- field(node, "released"); total <- field(node, "total")) yield ReleasedBatches(count, Some(total))
      })
    counted.filter(_.count >= 0).getOrElse(
      throw new IllegalArgumentException(s"items stream: offset '$json' in the checkpoint is not a count of batches"))
  }
}

/** Spark finds the source by this class's name ([[ItemsStreamSource.Format]]). */
final class ItemsStreamProvider extends TableProvider {
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = ItemsStreamSource.Schema

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: java.util.Map[String, String]): Table = {
    val id = new CaseInsensitiveStringMap(properties).get(ItemsStreamSource.IdOption)
    if (id == null)
      throw new IllegalArgumentException(s"items stream: option '${ItemsStreamSource.IdOption}' is required " +
        "(the id ItemsStreamSource.register returned)")
    val items = ItemsStreamSource.lookUp(id)
    val everyTrigger = MicroBatchTable.everyTrigger(properties)
    new MicroBatchTable(s"ItemsStream($id)", ItemsStreamSource.Schema, () => new ItemsMicroBatchStream(id, items, everyTrigger))
  }
}

/** Releases one batch per `latestOffset` call, whatever the trigger, up to the last one (`everyTrigger`:
  * and on after it, batches of markers alone). The next offset follows from the start Spark passes in, so
  * asking twice gives the same answer and a restart from a checkpoint goes on after the last batch Spark
  * logged.
  */
private[connector] final class ItemsMicroBatchStream(id: String, items: RegisteredItems, everyTrigger: Boolean = false)
    extends MicroBatchStream with SupportsTriggerAvailableNow {

  override def initialOffset(): Offset = ReleasedBatches(0)
  override def deserializeOffset(json: String): Offset = ReleasedBatches.parse(json)

  override def latestOffset(): Offset = throw new UnsupportedOperationException(
    "items stream: Spark asks a source with admission control for latestOffset(start, limit)")

  // The read limit is ignored on purpose: a micro-batch is always exactly one cut.
  override def latestOffset(start: Offset, limit: ReadLimit): Offset =
    if (everyTrigger) ReleasedBatches(released(start) + 1, Some(items.totalBatches))
    else ReleasedBatches(math.min(released(start) + 1, items.totalBatches))

  override def reportLatestOffset(): Offset = ReleasedBatches(items.totalBatches)

  // Every item is known from the start, so the target of Trigger.AvailableNow is always the last batch.
  override def prepareForTriggerAvailableNow(): Unit = ()

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] =
    items.slices(released(start), released(end))

  /** The batches an offset says were released, which a restart with fewer batches than its checkpoint (or,
    * read at every trigger, with another number of them) fails.
    */
  private def released(offset: Offset): Long = {
    val ReleasedBatches(count, total) = ReleasedBatches.of(offset)
    val checkpointed = total match {
      case Some(t) if t != items.totalBatches => Some(s"the checkpoint's items made $t batches")
      case None if count > items.totalBatches => Some(s"the checkpoint has released $count batches")
      case _ => None
    }
    checkpointed.foreach { what => throw new IllegalStateException(s"items stream '$id': $what, but the registered " +
      s"items make only ${items.totalBatches} (were other items or itemsPerBatch registered for the restart?)") }
    count
  }

  override def createReaderFactory(): PartitionReaderFactory = ItemsSliceReaderFactory
  override def commit(end: Offset): Unit = ()
  override def stop(): Unit = ()
  override def toString: String = s"ItemsStream($id)"
}
