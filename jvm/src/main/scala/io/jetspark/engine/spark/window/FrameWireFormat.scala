package io.jetspark.engine.spark.window

import io.jetspark.engine.spark.rows.RowSchemas
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}
import org.apache.spark.unsafe.Platform

import java.nio.ByteBuffer

/** How a columnar window's frames ([[ColumnarFrames]]) cross the shuffle from stage 1 to stage 2: one
  * [[FrameWireFormat.Schema]] row per key and partition, its frames in frame order, and how stage 2 reads
  * a key's rows back and merges them into one run ([[FrameRun]]).
  */
private[spark] final class FrameWireFormat(layout: FrameLayout) extends Serializable {
  import FrameWireFormat._
  import layout._

  /** The frames of a key at `order` (its slots, in frame order) as a [[Schema]] row: the frames with their
    * numbers, as [[Varints]] (how many; the key's number where an item's field is the key: 0 for null, else
    * 1 and the number; then per frame its distance from the one before and its numbers), and the picks'
    * rows in the same order, each as its size and its bytes.
    */
  def packed(t: FrameTable, order: Array[Int]): InternalRow = packed(t.key.bytes, t.keyNumber, t.frames, t.numbers, t.rows, order)

  /** The frames of `run` from its `from`-th on, of the key of pickle `key`, as [[packed]] packs a table's. */
  def packed(key: Array[Byte], run: FrameRun, from: Int): InternalRow =
    packed(key, run.keyNumber, run.frames, run.numbers, run.rows, Array.range(from, run.size))

  /** Frames held as a table holds them (frame `i`'s number at `frames(i)`, its numbers from
    * `numbers(i * numberColumns)`, its picks' rows at `rows(c)(i)`), those at `order`.
    */
  private def packed(key: Array[Byte], keyNumber: java.lang.Long, frames: Array[Long], numbers: Array[Long],
      kept: Array[Array[InternalRow]], order: Array[Int]): InternalRow = {
    val n = order.length
    val out = new Varints.Writer(n * (numberColumns + 1) * 2)
    out.put(n)
    if (fromKey >= 0) {
      out.put(if (keyNumber == null) 0 else 1)
      if (keyNumber != null) out.put(keyNumber)
    }
    var previous = 0L
    var i = 0
    while (i < n) { // (a loop: a closure over `previous` boxed every slot)
      val slot = order(i)
      out.put(frames(slot) - previous)
      previous = frames(slot)
      var c = 0
      while (c < numberColumns) { out.put(numbers(slot * numberColumns + c)); c += 1 }
      i += 1
    }
    // (stage 1's: UnsafeRows of the item's fields)
    var bytes = 0
    for (c <- kept.indices; slot <- order) bytes += 4 + kept(c)(slot).asInstanceOf[UnsafeRow].getSizeInBytes
    val rows = ByteBuffer.allocate(bytes)
    for (c <- kept.indices; slot <- order) {
      val row = kept(c)(slot).asInstanceOf[UnsafeRow]
      val size = row.getSizeInBytes
      rows.putInt(size)
      Platform.copyMemory(row.getBaseObject, row.getBaseOffset, rows.array(), Platform.BYTE_ARRAY_OFFSET + rows.position(), size)
      rows.position(rows.position() + size)
    }
    InternalRow(key, out.result, rows.array())
  }

  /** The frames of a [[Schema]] row (its frames' and rows' bytes) as a run. Rows point into those bytes. */
  def unpacked(packed: (Array[Byte], Array[Byte])): FrameRun = {
    val in = new Varints.Reader(packed._1)
    val bytes = ByteBuffer.wrap(packed._2)
    val n = in.next().toInt
    val keyNumber = if (fromKey >= 0 && in.next() != 0) Long.box(in.next()) else null
    val run = new FrameRun(n, numberColumns, rowColumns, keyNumber)
    var frame = 0L
    var i = 0
    while (i < n) {
      frame += in.next()
      run.frames(i) = frame
      var c = 0
      while (c < numberColumns) { run.numbers(i * numberColumns + c) = in.next(); c += 1 }
      i += 1
    }
    run.size = n
    for (c <- 0 until rowColumns; i <- 0 until n) {
      val size = bytes.getInt()
      val r = new UnsafeRow(itemFields.length)
      r.pointTo(bytes.array(), Platform.BYTE_ARRAY_OFFSET + bytes.position(), size)
      bytes.position(bytes.position() + size)
      run.rows(c)(i) = r
    }
    run
  }

  /** The packed runs `runs(from until until)` as one run, each frame's numbers combined in the runs' order.
    * Runs are made from their bytes as they are merged, so that the longs of all a key's runs are not
    * held at once.
    */
  def merged(runs: collection.IndexedSeq[(Array[Byte], Array[Byte])], from: Int, until: Int): FrameRun =
    if (until - from == 1) unpacked(runs(from))
    else {
      val middle = (from + until) / 2
      merged(merged(runs, from, middle), merged(runs, middle, until))
    }

  /** Runs `a` and `b` as one, each frame's numbers combined, `a`'s first. */
  def merged(a: FrameRun, b: FrameRun): FrameRun = {
    val out = new FrameRun(a.size + b.size, numberColumns, rowColumns, a.keyNumber)
    def take(run: FrameRun, i: Int, isNew: Boolean): Unit = {
      val won = mergeInto(out.numbers, out.size * numberColumns, isNew, run.numbers, i * numberColumns)
      var c = 0
      while (c < rowColumns) { if ((won & (1L << c)) != 0) out.rows(c)(out.size) = run.rows(c)(i); c += 1 }
    }
    var (i, j) = (0, 0)
    while (i < a.size || j < b.size) {
      val fromA = j == b.size || (i < a.size && a.frames(i) <= b.frames(j))
      out.frames(out.size) = if (fromA) a.frames(i) else b.frames(j)
      if (fromA) {
        take(a, i, isNew = true)
        if (j < b.size && b.frames(j) == a.frames(i)) { take(b, j, isNew = false); j += 1 }
        i += 1
      } else { take(b, j, isNew = true); j += 1 }
      out.size += 1
    }
    out.trimmed
  }
}

private[spark] object FrameWireFormat {
  /** One key's frames from one partition, from stage 1 to stage 2 (partitioned by its key column). */
  val Schema: StructType = StructType(Seq(StructField(RowSchemas.Key, BinaryType), StructField("frames", BinaryType),
    StructField("rows", BinaryType)))

  /** Longs as zigzag varints: most of what crosses from stage 1 to stage 2 is small (counts, the distance
    * from one frame to the next, fields of small integers), and a small number takes a byte or two, not
    * eight.
    */
  private object Varints {
    final class Writer(initial: Int) {
      private var bytes = new Array[Byte](math.max(16, initial))
      private var length = 0

      def put(v: Long): Unit = {
        if (length + 10 > bytes.length) bytes = java.util.Arrays.copyOf(bytes, bytes.length * 2)
        var z = (v << 1) ^ (v >> 63)
        while ((z & ~0x7FL) != 0) { bytes(length) = ((z & 0x7F) | 0x80).toByte; length += 1; z >>>= 7 }
        bytes(length) = z.toByte
        length += 1
      }

      def result: Array[Byte] = java.util.Arrays.copyOf(bytes, length)
    }

    final class Reader(bytes: Array[Byte]) {
      private var at = 0

      def next(): Long = {
        var z = 0L
        var shift = 0
        var b = 0
        while ({ b = bytes(at); at += 1; z |= (b & 0x7FL) << shift; shift += 7; (b & 0x80) != 0 }) ()
        (z >>> 1) ^ -(z & 1)
      }
    }
  }
}
