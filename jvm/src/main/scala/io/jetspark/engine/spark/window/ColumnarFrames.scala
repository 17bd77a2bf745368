package io.jetspark.engine.spark.window

import io.jetspark.engine.spark.rows.InPlaceRows
import io.jetspark.engine.spark.window.TypedWindow.LongField
import io.jetspark.item.PickledKey
import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy, WindowResult}
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types._
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable.ArrayBuffer

/** The two stages of a sliding or tumbling window over a DataFrame's rows ([[TypedWindow]]) whose
  * operation keeps a number per frame, or a number and a row: `counting`, `min_by`/`max_by` of an integer
  * value, and `all_of` of those. Their frames are held as columns of primitives, not as the core's
  * accumulator objects.
  *
  * Why: at small slides a window has about as many frames as events (100 ms slides over 2M events make
  * 400k frames per partition). Through the core's processors each frame is an accumulator object in a
  * table, written by Kryo across the shuffle and combined through the operation's functions; here a
  * frame is a slot of numbers in a table per key ([[FrameTable]]), a key's frames cross the shuffle
  * together as varints, in frame order (where every part picks, only those that win one of the task's
  * windows: [[FrameSlide.winners]]), a key's runs of frames from each partition are merged
  * ([[FrameRun]]), and the windows slide over them in O(1) per window: a running count, and for a pick
  * a queue of the frames that can still win (a frame leaves it once a later frame beats it).
  *
  * The results are those of the core's window processors (see [[io.jetspark.core.window.SlidingWindowProcessor]]
  * for the contract): every non-empty window once, `[end - size, end)`, per key in end order; of equal
  * values a pick keeps the earlier frame's, and within a frame the first one accumulated or combined;
  * counts are `Long`s, a pick is `Some` of the item's fields kept from the row (made a [[RowItem]] by
  * `resultItems`), `all_of` an array of its parts' results.
  *
  * @param layout  how its frames hold the operation ([[FrameLayout]])
  * @param keys    the keys of projected rows ([[TypedWindow.keys]])
  * @param checked fails the stage on a projected row with a null timestamp or value ([[TypedWindow.checked]])
  * @param resultItems a result's kept rows as the [[RowItem]]s Python reads ([[TypedWindow.rowItemsAt]])
  * @param budget  a task's budget for its frame tables
  */
private[spark] object ColumnarFrames {
  /** What a task of stage 1 read: its rows, those of them that were late, and the highest time among them. */
  final case class TaskFigures(read: Long, late: Long, highest: Long)
}

private[spark] final class ColumnarFrames(layout: FrameLayout, keys: KeyReader, checked: TypedWindow.NullCheck,
    val resultItems: Any => Any, budget: () => FrameTable.Budget) extends Serializable {
  import FrameLayout._
  import layout._

  /** How the frames cross from stage 1 to stage 2, and (a stream's second stage) how they are kept. */
  val wire = new FrameWireFormat(layout)
  /** How windows slide over a key's frames. */
  val frameSlide = new FrameSlide(layout)

  /** Stage 1: a partition's projected rows accumulated into frames per key, one [[FrameWireFormat.Schema]] row per key.
    * The number of rows read adds to each of `counters` (the items of the vertices before it).
    *
    * Rows are added as they come until the task's tables outgrow a core's cache
    * ([[FrameTable.CacheBytes]]) while its keys have many events each; from then on, where items are
    * numbers, in two passes: each row's time and numbers are first appended to its key's table
    * ([[FrameTable.defer]]), and then each table adds its own in turn ([[flush]]). Added as they come,
    * the events of a hundred keys at small slides touch frame indexes and numbers larger than the cache
    * at random, a miss or two per event; a key's own fit, and the appends are sequential. (While the
    * tables fit, the appends are only extra work; so they are where keys have few events each, whose
    * appends are as scattered as their tables; and where items are rows, every deferred event would be
    * a copy of its row, where adding at once copies only those that win.)
    */
  def accumulate(policy: SlidingWindowPolicy, rows: DataFrame, counters: Seq[LongAccumulator]): DataFrame = {
    val (read, checkedByBatch) = InPlaceRows.checkedByBatch(rows, checked.batch)
    val produced = accumulated(policy, read, checkedByBatch, Long.MinValue, identity) { (_, task) =>
      counters.foreach(_.add(task.read))
      Iterator.empty
    }
    SqlBridge.internalCreateDataFrame(rows.sparkSession, produced, FrameWireFormat.Schema)
  }

  /** [[accumulate]] of projected `rows` (checked already where `checkedByBatch`) as each key's packed row made
    * `packedRow`, then the rows `ended` makes of the partition (by its index) and what its task read. Events
    * of frames up to `lateUpTo` (a frame number) are late: dropped and counted.
    */
  def accumulated(policy: SlidingWindowPolicy, rows: RDD[InternalRow], checkedByBatch: Boolean, lateUpTo: Long,
      packedRow: InternalRow => InternalRow)(ended: (Int, ColumnarFrames.TaskFigures) => Iterator[InternalRow]): RDD[InternalRow] = {
    val (slide, fields) = (policy.slide, itemFields)
    rows.mapPartitionsWithIndex { (index, partition) =>
      // (The layout's arrays as locals, read once per partition rather than through it per event.)
      val (parts, numberColumns, layouts, picks) = (layout.parts, layout.numberColumns, layout.layouts, layout.picks)
      lazy val item = UnsafeProjection.create(fields.map { case (ordinal, f) => BoundReference(ordinal, f.dataType, f.nullable) })
      val encode = if (itemsAsNumbers) fieldTypes.map(encoder) else Array.empty[LongField]
      val tables = ArrayBuffer.empty[FrameTable]
      val tasks = budget()
      val tableOf = keys { key => val t = newTable(key, tasks); tables += t; t }
      var deferring = false // (once deferring, always: an event added at once must not overtake deferred ones)
      var (count, late, highest) = (0L, 0L, Long.MinValue)
      while (partition.hasNext) { // (not foreach: see InPlaceRows)
        val row = partition.next()
        count += 1
        if (!checkedByBatch) checked.row(row)
        val ts = row.getLong(TimestampOrdinal)
        if (ts > highest) highest = ts
        // (Only a stream's epochs have late events: a batch passes Long.MinValue, which closes no frame.)
        if (lateUpTo != Long.MinValue && policy.frameNumber(ts) <= lateUpTo) late += 1
        else {
          val frames = tableOf(row)
          if (fromKey >= 0 && frames.isEmpty) frames.keyNumber = if (row.isNullAt(0)) null else Long.box(encode(fromKey)(row, 0))
          deferring ||= rowColumns == 0 && tasks.tableBytes > tasks.cacheBytes && count >= tasks.eventsPerKey.toLong * tables.length
          if (!deferring) {
            // (Its own loop, not mergeInto of the event's numbers: a pick encodes its item only where it
            // wins, which most events do not.)
            val held = frames.size
            val slot = frames.slotOf(policy.frameNumber(ts))
            val isNew = frames.size > held
            var p = 0
            while (p < parts.length) {
              parts(p) match {
                case Count => frames.numbers(slot * numberColumns + p) += 1
                case Pick(ordinal, read, greatest) =>
                  val value = read(row, ordinal)
                  if (isNew || beats(value, frames.numbers(slot * numberColumns + p), greatest)) {
                    frames.numbers(slot * numberColumns + p) = value
                    if (itemsAsNumbers) keep(layouts(picks(p)), encode, row, ts, frames.numbers, slot * numberColumns, asInFrame)
                    else frames.rows(picks(p))(slot) = item(row).copy()
                  }
              }
              p += 1
            }
          } else {
            val at = frames.defer(ts)
            var p = 0
            while (p < parts.length) {
              parts(p) match {
                case Count =>
                case Pick(ordinal, read, _) =>
                  frames.deferred(at + deferredAt(p)) = read(row, ordinal)
                  if (itemsAsNumbers) keep(layouts(picks(p)), encode, row, ts, frames.deferred, at, deferredAt)
              }
              p += 1
            }
            if (tasks.deferredLeft <= 0) tables.foreach(flush(_, policy))
          }
        }
      }
      val framesPerWindow = policy.size / slide
      tables.iterator.map { t => flush(t, policy); packedRow(wire.packed(t, frameSlide.winners(t, framesPerWindow))) } ++
        Iterator.single(()).flatMap(_ => ended(index, ColumnarFrames.TaskFigures(count, late, highest)))
    }
  }

  /** Stage 2: the frames of each key combined over the partitions they came from, and its windows. A key's
    * frames from each partition arrive in frame order ([[FrameWireFormat.packed]]); they are merged as sorted runs, in the
    * order they arrived (which is the order in which a pick's ties are settled), not through a table.
    * A window's result becomes a row by `resultRow`; without one (no reader takes the results: noop
    * sinks only) each window is an empty row, its result computed in the sums and queues of its frames
    * but never made an object. The windows made add to each of `counters` (the window's items).
    *
    * (The windows of one key after another come from an iterator of this stage's own, and are counted
    * here, not by a step of their own: at small slides there are as many windows as events, and each
    * layer of Scala's iterators costs a call through an interface per window (see [[rows.InPlaceRows]]). The
    * second stage at 20 ms slides spent 67 ms of CPU with a `flatMap` and two counting steps, 31 without.)
    */
  def combine(policy: SlidingWindowPolicy, keyed: Boolean, frames: DataFrame,
      resultRow: Option[Any => InternalRow], resultSchema: StructType, counters: Seq[LongAccumulator]): DataFrame = {
    val produced = InPlaceRows.of(frames).mapPartitions { partition =>
      val keys = new java.util.LinkedHashMap[PickledKey, ArrayBuffer[(Array[Byte], Array[Byte])]]()
      partition.foreach { row =>
        val key = new PickledKey(row.getBinary(0))
        var runs = keys.get(key)
        if (runs == null) { runs = ArrayBuffer.empty; keys.put(key, runs) }
        runs += row.getBinary(1) -> row.getBinary(2) // (Spark reuses the row; its binaries are copies)
      }
      val left = keys.entrySet().iterator()
      new Iterator[InternalRow] {
        private var current: Iterator[InternalRow] = Iterator.empty
        private var made = 0L
        // (Also where a reader stops early: what it took counts, as a step per row would have counted it.)
        Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => addMade()))

        private def addMade(): Unit = if (made >= 0) { counters.foreach(_.add(made)); made = -1 } // (once)

        def hasNext: Boolean = current.hasNext || {
          while (!current.hasNext && left.hasNext) {
            val e = left.next()
            left.remove() // (a key's bytes go with its windows, which are all a pick's rows point into)
            val (key, runs) = (e.getKey, e.getValue)
            current = frameSlide.windows(wire.merged(runs, 0, runs.length), policy, resultRow.map(toRow => (end: Long, result: Any) =>
              toRow(if (keyed) KeyedWindowResult(end - policy.size, end, key, result) else WindowResult(end - policy.size, end, result))))
          }
          if (!current.hasNext) addMade()
          current.hasNext
        }

        def next(): InternalRow = {
          if (!hasNext) throw new NoSuchElementException("no window left")
          made += 1
          current.next()
        }
      }
    }
    SqlBridge.internalCreateDataFrame(frames.sparkSession, produced, resultSchema)
  }

  private def newTable(key: PickledKey, tasks: FrameTable.Budget) =
    new FrameTable(key, numberColumns, rowColumns, deferredAt.count(_ >= 0), tasks)

  /** Keeps the stored fields of `row`'s item (whose timestamp is `ts`) as `layout` says, in `numbers` from
    * `at`: the field of a frame's number column `c` at `at + columnAt(c)`, not at all where that is negative.
    */
  private def keep(layout: ItemLayout, encode: Array[LongField], row: InternalRow, ts: Long, numbers: Array[Long], at: Int,
      columnAt: Array[Int]): Unit = {
    var bits = 0L
    var j = 0
    while (j < layout.stored.length) {
      val c = columnAt(layout.first + j)
      if (c >= 0) {
        val i = layout.stored(j)
        // (The timestamp is never null, and is read already.)
        if (j == layout.timestamp) numbers(at + c) = ts
        else if (row.isNullAt(fieldOrdinals(i))) bits |= 1L << j
        else numbers(at + c) = encode(i)(row, fieldOrdinals(i))
      }
      j += 1
    }
    if (layout.nullBits) numbers(at + columnAt(layout.first + layout.stored.length)) = bits
  }

  /** Adds the events `t` deferred into its frames, in the order they came (items are numbers: see [[accumulate]]). */
  private def flush(t: FrameTable, policy: SlidingWindowPolicy): Unit = if (t.deferredEvents > 0) {
    t.reserveForDeferred(policy.frameNumber)
    val width = t.deferredWidth
    val event = Array.tabulate(numberColumns)(c => if (deferredAt(c) == OneEach) 1L else 0L) // an event's numbers as a frame's
    var e = 0
    while (e < t.deferredEvents) {
      val ts = t.deferred(e * width)
      var c = 0
      while (c < numberColumns) {
        val from = deferredAt(c)
        if (from >= 0) event(c) = t.deferred(e * width + 1 + from) else if (from == TheTimestamp) event(c) = ts
        c += 1
      }
      val held = t.size
      val slot = t.slotOf(policy.frameNumber(ts))
      mergeInto(t.numbers, slot * numberColumns, t.size > held, event, 0)
      e += 1
    }
    t.clearDeferred()
  }
}
