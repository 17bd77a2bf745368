package io.jetspark.connector

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

/** One substream's items in one micro-batch, shipped to the executor with the task. `first` is the position
  * of the first item in its substream; `done` says whether the slice reaches the substream's end, so the
  * marker's position (the substream's length) is the one after the slice's last item.
  */
private[connector] final case class ItemsSlice(
    substream: Int, first: Long, items: Array[Array[Byte]], done: Boolean) extends InputPartition

private[connector] object ItemsSliceReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new ItemsSliceReader(partition.asInstanceOf[ItemsSlice])
}

/** The slice's rows in order (schema [[ItemsStreamSource.Schema]]), pauses left out, then the done marker
  * if it has one.
  */
private[connector] final class ItemsSliceReader(slice: ItemsSlice) extends PartitionReader[InternalRow] {
  private val rows = slice.items.length + (if (slice.done) 1 else 0)
  private var index = -1

  override def next(): Boolean = {
    index += 1
    while (index < slice.items.length && ItemsStreamSource.isPause(slice.items(index))) index += 1
    index < rows
  }

  override def get(): InternalRow =
    if (index < slice.items.length) InternalRow(slice.substream, slice.first + index, slice.items(index), false)
    else InternalRow(slice.substream, slice.first + slice.items.length, null, true)

  override def close(): Unit = ()
}
