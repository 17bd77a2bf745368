package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy, WindowResult}
import io.jetspark.engine.spark.TypedWindow.LongField
import io.jetspark.pipeline.PythonAggregateSpec
import org.apache.spark.TaskContext
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BaseGenericInternalRow, BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.util.LongAccumulator

import java.nio.ByteBuffer
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

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
  * windows: [[winners]]), a key's runs of frames from each partition are merged
  * ([[FrameRun]]), and the windows slide over them in O(1) per window: a running count, and for a pick
  * a queue of the frames that can still win (a frame leaves it once a later frame beats it).
  *
  * The results are those of the core's window processors (see [[io.jetspark.core.window.SlidingWindowProcessor]]
  * for the contract): every non-empty window once, `[end - size, end)`, per key in end order; of equal
  * values a pick keeps the earlier frame's, and within a frame the first one accumulated or combined;
  * counts are `Long`s, a pick is `Some` of the item's fields kept from the row (made a [[RowItem]] by
  * `resultItems`), `all_of` an array of its parts' results.
  *
  * @param parts   the operation's leaf parts in order; a pick reads its value at its ordinal of the
  *                projected row ([[TypedWindow.project]])
  * @param shape   how the parts' results make the operation's
  * @param keys    the keys of projected rows ([[TypedWindow.keys]])
  * @param checked fails the stage on a projected row with a null timestamp or value ([[TypedWindow.checked]])
  * @param itemFields where a pick's item is the row: the ordinals of the item's fields in a projected row,
  *                and the fields, which are all a pick keeps of the row (nullable where a projected row may
  *                hold a null there)
  * @param keyField the index in `itemFields` of a field that is the key itself, of an integer type, which
  *                every row of a key holds alike (-1: none)
  * @param resultItems a result's kept rows as the [[RowItem]]s Python reads ([[TypedWindow.rowItemsAt]])
  * @param budget  a task's budget for its frame tables
  */
private[spark] final class ColumnarFrames(parts: Array[ColumnarFrames.Part], shape: ColumnarFrames.Shape,
    keys: KeyReader, checked: TypedWindow.NullCheck, itemFields: Seq[(Int, StructField)], keyField: Int,
    val resultItems: Any => Any, budget: () => FrameTable.Budget) extends Serializable {
  import ColumnarFrames._

  private val picks: Array[Int] = { var n = -1; parts.map { case _: Pick => n += 1; n; case Count => -1 } }
  private val fieldCount = itemFields.length
  private val fieldTypes = itemFields.map(_._2.dataType).toArray
  private val fieldOrdinals = itemFields.map(_._1).toArray
  // A pick keeps an item of fixed-width fields as numbers beside its value (see ItemLayout), other items
  // as rows. (Every frame holds an item for each pick: a frame is made for an event, which every part takes.)
  private val itemsAsNumbers = fieldCount < 64 && itemFields.forall(f => FixedWidth.contains(f._2.dataType))
  private val rowColumns = if (itemsAsNumbers) 0 else picks.count(_ >= 0)
  /** The item field read from the key's number, where items are numbers (-1: none). */
  private val fromKey = if (itemsAsNumbers) keyField else -1
  /** Per pick, where items are numbers: how its item is kept. */
  private val layouts: Array[ItemLayout] = {
    var first = parts.length
    parts.toSeq.zipWithIndex.collect { case (Pick(valueOrdinal, _, _), p) if itemsAsNumbers =>
      val stored = itemFields.indices.filter(i => i != fromKey && fieldOrdinals(i) != valueOrdinal).toArray
      val sources = itemFields.indices.map(i =>
        if (i == fromKey) FromKey else if (fieldOrdinals(i) == valueOrdinal) FromValue else stored.indexOf(i)).toArray
      val timestamp = stored.indexWhere(fieldOrdinals(_) == TimestampOrdinal)
      // (A field stands for the timestamp only where it is of its type: TypedWindow.plan.)
      require(timestamp < 0 || fieldTypes(stored(timestamp)) == LongType, "an item's timestamp field is a long")
      val layout = ItemLayout(p, first, stored, sources, stored.exists(itemFields(_)._2.nullable), timestamp)
      first += layout.width
      layout
    }.toArray
  }
  private val numberColumns = layouts.lastOption.fold(parts.length)(l => l.first + l.width)
  /** Where each of a frame's number columns is among a deferred event's numbers, or [[OneEach]] (a count's)
    * or [[TheTimestamp]] (an item's field that is the timestamp, which the event is deferred by): the
    * parts' columns but the counts', in order, then the columns of [[layouts]] but the timestamps'.
    */
  private val deferredAt: Array[Int] = {
    val timestamps = layouts.filter(_.timestamp >= 0).map(l => l.first + l.timestamp).toSet
    var kept = -1
    Array.tabulate(numberColumns)(c =>
      if (c < parts.length && parts(c) == Count) OneEach else if (timestamps(c)) TheTimestamp else { kept += 1; kept })
  }
  /** Each of a frame's number columns at its own place (where [[keep]] keeps an item in a frame's slot). */
  private val asInFrame: Array[Int] = Array.tabulate(numberColumns)(identity)

  /** Stage 1: a partition's projected rows accumulated into frames per key, one [[Schema]] row per key.
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
    val (slide, fields) = (policy.slide, itemFields)
    val (read, checkedByBatch) = InPlaceRows.checkedByBatch(rows, checked.batch)
    val produced = read.mapPartitions { partition =>
      lazy val item = UnsafeProjection.create(fields.map { case (ordinal, f) => BoundReference(ordinal, f.dataType, f.nullable) })
      val encode = if (itemsAsNumbers) fieldTypes.map(encoder) else Array.empty[LongField]
      val tables = ArrayBuffer.empty[FrameTable]
      val tasks = budget()
      val tableOf = keys { key => val t = newTable(key, tasks); tables += t; t }
      var deferring = false // (once deferring, always: an event added at once must not overtake deferred ones)
      var count = 0L
      while (partition.hasNext) { // (not foreach: see InPlaceRows)
        val row = partition.next()
        count += 1
        if (!checkedByBatch) checked.row(row)
        val frames = tableOf(row)
        if (fromKey >= 0 && frames.isEmpty) frames.keyNumber = if (row.isNullAt(0)) null else Long.box(encode(fromKey)(row, 0))
        val ts = row.getLong(TimestampOrdinal)
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
      counters.foreach(_.add(count))
      val framesPerWindow = policy.size / slide
      tables.iterator.map { t => flush(t, policy); packed(t, winners(t, framesPerWindow)) }
    }
    SqlBridge.internalCreateDataFrame(rows.sparkSession, produced, Schema)
  }

  /** Stage 2: the frames of each key combined over the partitions they came from, and its windows. A key's
    * frames from each partition arrive in frame order ([[packed]]); they are merged as sorted runs, in the
    * order they arrived (which is the order in which a pick's ties are settled), not through a table.
    * A window's result becomes a row by `resultRow`; without one (no reader takes the results: noop
    * sinks only) each window is an empty row, its result computed in the sums and queues of its frames
    * but never made an object. The windows made add to each of `counters` (the window's items).
    *
    * (The windows of one key after another come from an iterator of this stage's own, and are counted
    * here, not by a step of their own: at small slides there are as many windows as events, and each
    * layer of Scala's iterators costs a call through an interface per window (see [[InPlaceRows]]). The
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
            current = windows(merged(runs, 0, runs.length), policy, resultRow.map(toRow => (end: Long, result: Any) =>
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

  /** Adds the numbers of one frame (`from`, at `fromAt`) into those of another (`into`, at `at`; holding
    * nothing yet if `isNew`): counts add up, a pick takes the incoming value and item unless the one it
    * holds beats or ties it. Returns the picks that took the incoming item, a bit each (by pick index).
    */
  private def mergeInto(into: Array[Long], at: Int, isNew: Boolean, from: Array[Long], fromAt: Int): Long = {
    var won = 0L
    var p = 0
    while (p < parts.length) {
      parts(p) match {
        case Count => into(at + p) = if (isNew) from(fromAt + p) else Math.addExact(into(at + p), from(fromAt + p))
        case Pick(_, _, greatest) =>
          if (isNew || beats(from(fromAt + p), into(at + p), greatest)) {
            into(at + p) = from(fromAt + p)
            if (itemsAsNumbers) {
              val layout = layouts(picks(p))
              System.arraycopy(from, fromAt + layout.first, into, at + layout.first, layout.width)
            }
            won |= 1L << picks(p)
          }
      }
      p += 1
    }
    won
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

  /** Of `t`'s slots in frame order, those stage 2 needs: all of them where a part counts; where every part
    * picks, only the frames that win a window of this task's events for some pick.
    *
    * Why: at small slides a window spans many frames and few of them ever win one (of random values, 2 in
    * 100 at 100 frames per window), so the rest need not cross the shuffle. No window's result changes:
    * its winner over every task's frames is the value and item of the first task (in the order stage 2
    * merges them) whose frame holds that value, and among that task's own frames nothing beats it and
    * nothing before it ties it, so that task keeps it; the tasks before it hold less in that frame, and
    * the other frames of the window, kept or not, nothing that beats it or ties it from before. A window
    * with an event in some task holds that task's winner, so the same windows are non-empty. (Frame `i`
    * wins a window unless the nearest frame before it that beats or ties it and the nearest after it that
    * beats it lie no more than a window apart: then every window holding `i` holds one of them.)
    */
  private def winners(t: FrameTable, framesPerWindow: Long): Array[Int] = {
    val order = t.slotsInOrder
    if (framesPerWindow == 1 || parts.contains(Count)) return order
    val n = order.length
    val wins = new Array[Boolean](n)
    val stack = new Array[Int](n) // frames not yet beaten by a later one, of values that fall (or tie) towards the top
    var i = 0
    var p = 0
    while (p < parts.length) {
      val (pick, greatest) = (p, parts(p).asInstanceOf[Pick].greatest)
      def value(i: Int) = t.numbers(order(i) * numberColumns + pick)
      def frame(i: Int) = t.frames(order(i))
      /** Whether a window holds a frame between `before` and `after` but neither of them (-1: none). */
      def fitsBetween(before: Int, after: Int): Boolean = before < 0 || after < 0 || {
        val gap = frame(after) - frame(before)
        gap < 0 || gap > framesPerWindow // (negative: overflowed, farther apart than any window)
      }
      var top = -1
      i = 0
      while (i < n) {
        while (top >= 0 && beats(value(i), value(stack(top)), greatest)) {
          val beaten = stack(top)
          top -= 1
          wins(beaten) ||= fitsBetween(if (top >= 0) stack(top) else -1, i)
        }
        top += 1
        stack(top) = i
        i += 1
      }
      while (top >= 0) { wins(stack(top)) ||= fitsBetween(if (top > 0) stack(top - 1) else -1, -1); top -= 1 }
      p += 1
    }
    val kept = new Array[Int](n)
    var k = 0
    i = 0
    while (i < n) { if (wins(i)) { kept(k) = order(i); k += 1 }; i += 1 }
    java.util.Arrays.copyOf(kept, k)
  }

  /** The frames of a key at `order` (its slots, in frame order) as a [[Schema]] row: the frames with their
    * numbers, as [[Varints]] (how many; the key's number where an item's field is the key: 0 for null, else
    * 1 and the number; then per frame its distance from the one before and its numbers), and the picks'
    * rows in the same order, each as its size and its bytes.
    */
  private def packed(t: FrameTable, order: Array[Int]): InternalRow = {
    val n = order.length
    val out = new Varints.Writer(n * (numberColumns + 1) * 2)
    out.put(n)
    if (fromKey >= 0) {
      out.put(if (t.keyNumber == null) 0 else 1)
      if (t.keyNumber != null) out.put(t.keyNumber)
    }
    var previous = 0L
    var i = 0
    while (i < n) { // (a loop: a closure over `previous` boxed every slot)
      val slot = order(i)
      out.put(t.frames(slot) - previous)
      previous = t.frames(slot)
      var c = 0
      while (c < numberColumns) { out.put(t.numbers(slot * numberColumns + c)); c += 1 }
      i += 1
    }
    val kept = t.rows // stage 1's: UnsafeRows of the item's fields
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
    InternalRow(t.key.bytes, out.result, rows.array())
  }

  /** The frames of a [[Schema]] row (its frames' and rows' bytes) as a run. Rows point into those bytes. */
  private def unpacked(packed: (Array[Byte], Array[Byte])): FrameRun = {
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
  private def merged(runs: collection.IndexedSeq[(Array[Byte], Array[Byte])], from: Int, until: Int): FrameRun =
    if (until - from == 1) unpacked(runs(from))
    else {
      val middle = (from + until) / 2
      val (a, b) = (merged(runs, from, middle), merged(runs, middle, until))
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

  /** What `emit` makes of each of a key's non-empty windows (its end and its result), in end order; without
    * `emit`, an empty row for each. Windows are counted in slides as frames are: window `w` ends at
    * `w * slide` and holds frames `w - size / slide + 1` to `w`.
    */
  private def windows(run: FrameRun, policy: SlidingWindowPolicy, emit: Option[(Long, Any) => InternalRow]): Iterator[InternalRow] = {
    val made = emit.orNull
    val (n, frames, numbers, framesPerWindow) = (run.size, run.frames, run.numbers, policy.size / policy.slide)
    val sums = new Array[Long](parts.length)
    // Per pick, the frames that may still win a window, best first: a frame enters at the back once every
    // frame it beats has left from there (ties stay: the earlier wins).
    val queues = Array.fill(parts.length)(new Array[Int](n))
    val heads = new Array[Int](parts.length)
    val tails = new Array[Int](parts.length)
    var entered = 0 // the window's frames are left until entered
    var left = 0
    var w = if (n == 0) 0L else frames(0)
    def enter(frame: Int): Unit = {
      var p = 0
      while (p < parts.length) {
        parts(p) match {
          case Count => sums(p) += numbers(frame * numberColumns + p)
          case Pick(_, _, greatest) =>
            while (tails(p) > heads(p) &&
              beats(numbers(frame * numberColumns + p), numbers(queues(p)(tails(p) - 1) * numberColumns + p), greatest)) tails(p) -= 1
            queues(p)(tails(p)) = frame
            tails(p) += 1
        }
        p += 1
      }
    }
    def leave(frame: Int): Unit = {
      var p = 0
      while (p < parts.length) {
        parts(p) match {
          case Count => sums(p) -= numbers(frame * numberColumns + p)
          case _: Pick => if (queues(p)(heads(p)) == frame) heads(p) += 1
        }
        p += 1
      }
    }
    def resultOf(s: Shape): Any = s match {
      case Leaf(p) => parts(p) match {
        case Count => Long.box(sums(p))
        case _: Pick =>
          val frame = queues(p)(heads(p))
          Some(if (itemsAsNumbers) new KeptFields(numbers, frame * numberColumns, layouts(picks(p)), fieldTypes, run.keyNumber)
            else run.rows(picks(p))(frame))
      }
      case AllOf(of) => of.map(resultOf).toArray[Any]
    }
    new Iterator[InternalRow] {
      private var nextResult: InternalRow = advance()

      def hasNext: Boolean = nextResult != null
      def next(): InternalRow = { val r = nextResult; nextResult = advance(); r }

      private def advance(): InternalRow = {
        while (left < n) {
          while (entered < n && frames(entered) <= w) { enter(entered); entered += 1 }
          while (left < entered && frames(left) <= w - framesPerWindow) { leave(left); left += 1 }
          if (left < entered) {
            val result = if (made == null) InternalRow.empty else made(w * policy.slide, resultOf(shape))
            w += 1
            return result
          }
          if (entered < n) w = frames(entered) // no frame in this window: on to the next that has one
        }
        null
      }
    }
  }
}

/** A key's frames in frame order, in stage 2: frame `i` is `frames(i)`, with its numbers from
  * `i * columns` and, per row column, its row. `capacity` frames fit; `size` are held.
  */
private[spark] final class FrameRun(capacity: Int, columns: Int, rowColumns: Int, val keyNumber: java.lang.Long) {
  var size = 0
  val frames = new Array[Long](capacity)
  val numbers = new Array[Long](capacity * columns)
  val rows: Array[Array[InternalRow]] = Array.fill(rowColumns)(new Array[InternalRow](capacity))

  /** This run, or a copy of it without the room it does not use where that is a quarter or more (a merge
    * makes room for both runs' frames, and runs share frames).
    */
  def trimmed: FrameRun = if (size * 4 > capacity * 3) this else {
    val out = new FrameRun(size, columns, rowColumns, keyNumber)
    out.size = size
    System.arraycopy(frames, 0, out.frames, 0, size)
    System.arraycopy(numbers, 0, out.numbers, 0, size * columns)
    for (c <- rows.indices) System.arraycopy(rows(c), 0, out.rows(c), 0, size)
    out
  }
}

private[spark] object ColumnarFrames {
  /** A leaf operation: how its frame's number is made. */
  sealed trait Part extends Serializable
  /** `counting`: the number of events. */
  case object Count extends Part
  /** `min_by`/`max_by`: the least/greatest value (read at `ordinal` of the projected row) and its row. */
  final case class Pick(ordinal: Int, read: LongField, greatest: Boolean) extends Part

  /** How a pick keeps an item whose fields are all numbers, in the columns of a frame's slot: field `i` is
    * `sources(i)`, which is [[FromKey]] (the key's own number, held once per key), [[FromValue]] (the
    * pick's value, in column `value`) or `j`, the field stored in column `first + j` (`stored(j)` is `i`).
    * A word of null bits (bit `j` for stored field `j`) follows the stored fields where one may be null.
    * A field stands for the key or the value only where it is that very column, so the frame need not
    * hold it again: a pick by a field of a row of three keeps one number of the row, not three.
    * `timestamp` is the stored field that is the timestamp column itself (-1: none): it is kept from the
    * timestamp already read, and a deferred event holds it once, as what it is deferred by.
    */
  final case class ItemLayout(value: Int, first: Int, stored: Array[Int], sources: Array[Int], nullBits: Boolean, timestamp: Int) {
    def width: Int = stored.length + (if (nullBits) 1 else 0)
  }
  val FromKey: Int = -1
  val FromValue: Int = -2

  /** The ordinal of a projected row's timestamp ([[TypedWindow.project]]). */
  private val TimestampOrdinal = 1

  /** Of [[ColumnarFrames.deferredAt]]: a count's column, 1 for every event and not deferred. */
  private val OneEach = -1
  /** Of [[ColumnarFrames.deferredAt]]: a column that is the event's timestamp, which it is deferred by. */
  private val TheTimestamp = -2

  /** How the leaf parts' results make the operation's result. */
  sealed trait Shape extends Serializable
  final case class Leaf(part: Int) extends Shape
  final case class AllOf(parts: Seq[Shape]) extends Shape

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

  /** The columnar frames of `window` with operation `op`, or None where `op` has another part or a pick
    * reads a value that is not an integer (floats compare as Python compares them, NaN included, in the
    * core's operations).
    */
  def plan(window: TypedWindow, op: PythonAggregateSpec, budget: () => FrameTable.Budget = () => new FrameTable.Budget()): Option[ColumnarFrames] = {
    val parts = Array.newBuilder[Part]
    var count = 0
    def shapeOf(spec: JsonNode): Option[Shape] = {
      def slot = spec.get("slots").get(0).asInt
      spec.get("name").asText match {
        case "counting" => parts += Count; count += 1; Some(Leaf(count - 1))
        case name @ ("min_by" | "max_by") => TypedWindow.integral(window.values(slot)._2).map { read =>
          parts += Pick(2 + slot, read, greatest = name == "max_by"); count += 1; Leaf(count - 1)
        }
        case "all_of" =>
          val shapes = spec.get("parts").elements().asScala.map(shapeOf).toSeq
          if (shapes.forall(_.isDefined)) Some(AllOf(shapes.flatten)) else None
        case _ => None
      }
    }
    // A projected row's timestamp and values are never null (checked fails the stage on a null).
    val neverNull = 1 until 2 + window.values.length
    val itemFields = window.itemOrdinals.zip(window.row.toSeq.flatMap(_.fields)).map { case (ordinal, f) =>
      ordinal -> f.copy(nullable = f.nullable && !neverNull.contains(ordinal))
    }
    // Every row of an integer key holds the same number there; of a float key, 0.0 and -0.0 are one key.
    val keyField = if (window.key.exists(k => TypedWindow.integral(k._2).isDefined)) itemFields.indexWhere(_._1 == 0) else -1
    val shape = shapeOf(PythonAggregations.slotted(op)._1)
    val leaves = parts.result()
    // (A frame's merge tells which picks took the incoming item in the bits of a Long.)
    shape.filter(_ => leaves.count(_.isInstanceOf[Pick]) <= 64).map(new ColumnarFrames(leaves, _, window.keys, window.checked,
      itemFields, keyField, window.rowItemsAt(itemFields.indices), budget))
  }

  private def beats(value: Long, kept: Long, greatest: Boolean): Boolean = if (greatest) value > kept else value < kept

  /** Field types that a pick keeps as numbers. */
  private val FixedWidth: Set[DataType] = Set(ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, BooleanType)

  /** How a non-null field of a FixedWidth type is kept as a number; [[KeptFields]] reads it back. */
  private def encoder(t: DataType): LongField = t match {
    case FloatType => (row, i) => java.lang.Float.floatToRawIntBits(row.getFloat(i)).toLong
    case DoubleType => (row, i) => java.lang.Double.doubleToRawLongBits(row.getDouble(i))
    case BooleanType => (row, i) => if (row.getBoolean(i)) 1L else 0L
    case integral => TypedWindow.integral(integral).getOrElse(throw new IllegalArgumentException(s"no number for ${t.simpleString}"))
  }

  /** A kept item's fields, read where they are held: the numbers of a run's frame at `at`, laid out
    * by `layout`, and the key's number (null: the key is null). Made for a window's result and read at once.
    */
  private final class KeptFields(numbers: Array[Long], at: Int, layout: ItemLayout, types: Array[DataType], key: java.lang.Long)
      extends BaseGenericInternalRow {
    override def numFields: Int = types.length
    override def isNullAt(i: Int): Boolean = layout.sources(i) match {
      case FromKey => key == null
      case FromValue => false
      case j => layout.nullBits && (numbers(at + layout.first + layout.stored.length) & (1L << j)) != 0
    }
    override protected def genericGet(i: Int): Any = if (isNullAt(i)) null else {
      val bits = layout.sources(i) match {
        case FromKey => key.longValue
        case FromValue => numbers(at + layout.value)
        case j => numbers(at + layout.first + j)
      }
      types(i) match {
        case ByteType => bits.toByte
        case ShortType => bits.toShort
        case IntegerType => bits.toInt
        case LongType => bits
        case FloatType => java.lang.Float.intBitsToFloat(bits.toInt)
        case DoubleType => java.lang.Double.longBitsToDouble(bits)
        case BooleanType => bits != 0
        case other => throw new IllegalArgumentException(s"no number for ${other.simpleString}")
      }
    }
    override def setNullAt(i: Int): Unit = throw new UnsupportedOperationException("a kept item is read-only")
    override def update(i: Int, value: Any): Unit = throw new UnsupportedOperationException("a kept item is read-only")
  }
}

/** One key's frames in one task, each named by its end in slides (frame `f` holds the times in
  * `[(f - 1) * slide, f * slide)`): per slot the frame, `columns` numbers (slot after slot: an event
  * touches one slot's numbers, which then share a cache line) and a row per row column (null until the
  * frame has one). Slots are found through an index of the frames: a direct one (the slot of frame `f`
  * at position `f - base`), which costs one look-up and no hashing per event, while the frames fill a
  * quarter of its span (plus some slack) or the task's `budget` of direct positions lasts; else an
  * open-addressing hash table. (A key's frames are sparse over their span until most have come; the
  * budget keeps a key's first frames from starting out hashed, the density rule bounds the memory of an
  * index once the budget is spent.)
  *
  * Events may be deferred ([[defer]]): held in arrival order, each as its time (from which its owner tells
  * its frame) and `deferredColumns` numbers, until the owner adds them all at once. The task's budget
  * bounds what its tables defer.
  */
private[spark] final class FrameTable(val key: PickledKey, columns: Int, rowColumns: Int, deferredColumns: Int,
    budget: FrameTable.Budget) {
  import FrameTable._

  var size = 0
  /** Where a kept item's field is the key: the key's number, null for a null key (see [[ColumnarFrames.ItemLayout]]). */
  var keyNumber: java.lang.Long = null
  var frames = new Array[Long](8)
  var numbers = new Array[Long](8 * columns)
  val rows: Array[Array[InternalRow]] = Array.fill(rowColumns)(new Array[InternalRow](8))
  private var direct = true
  private var base = 0L // direct: the frame at position 0
  private var lowest = 0L // the least and the greatest frame held
  private var highest = 0L
  private var index = { budget.left -= 64; budget.tableBytes += 8 * 8 + 8 * 8 * columns + 64 * 4; free(64) }

  /** The deferred events: per event, its time and then `deferredColumns` numbers. */
  var deferred: Array[Long] = noneDeferred
  /** How many longs an event takes in [[deferred]]. */
  val deferredWidth: Int = deferredColumns + 1
  var deferredEvents = 0
  private var deferredLowest = 0L
  private var deferredHighest = 0L

  /** Whether the table holds no frame and no deferred event. */
  def isEmpty: Boolean = size == 0 && deferredEvents == 0

  /** The slot of frame `f`, added if it is not held. */
  def slotOf(f: Long): Int = if (direct) directSlot(f) else hashedSlot(f)

  /** Defers an event of time `time`: returns where its numbers go in [[deferred]]. */
  def defer(time: Long): Int = {
    val width = deferredWidth
    val at = deferredEvents * width
    if (at + width > deferred.length) deferred = java.util.Arrays.copyOf(deferred, math.max(deferred.length * 2, 8 * width))
    deferred(at) = time
    if (deferredEvents == 0) { deferredLowest = time; deferredHighest = time }
    else if (time < deferredLowest) deferredLowest = time
    else if (time > deferredHighest) deferredHighest = time
    budget.deferredLeft -= width
    deferredEvents += 1
    at + 1
  }

  /** Makes room for the deferred events' frames (`frameOf` a time, which never falls as time rises), so that
    * adding them grows nothing.
    */
  def reserveForDeferred(frameOf: Long => Long): Unit = if (deferredEvents > 0) {
    val (deferredLow, deferredHigh) = (frameOf(deferredLowest), frameOf(deferredHighest))
    val (low, high) = if (size == 0) (deferredLow, deferredHigh) else (math.min(lowest, deferredLow), math.max(highest, deferredHigh))
    val spread = deferredHigh - deferredLow // (negative where it overflows)
    val fresh = if (spread >= 0 && spread < deferredEvents) spread.toInt + 1 else deferredEvents
    val range = high - low // (negative where it overflows)
    val room = if (range >= 0 && range < Int.MaxValue) range + 1 - size else Long.MaxValue // the range's frames not held yet
    val most = size + math.min(room, fresh.toLong).toInt
    // (Doubling, and a direct index with room beyond a range that grows: tables whose frames come in
    // time order grow O(log n) times over a task's flushes, not at each.)
    if (most > frames.length) grow(math.max(most, frames.length * 2))
    val covered =
      if (direct) size > 0 && covers(low) && covers(high)
      else most * 2 <= index.length
    if (!covered) reindex(low, high, most, spare = size > 0, growLeft = size > 0 && low < lowest)
  }

  /** Forgets the deferred events, once they are added; the room they took goes too, so that what a task's
    * tables hold stays within the budget, not within the most that each of them ever deferred.
    */
  def clearDeferred(): Unit = {
    budget.deferredLeft += deferredEvents.toLong * deferredWidth
    deferredEvents = 0
    deferred = noneDeferred
  }

  /** The slots in frame order. */
  def slotsInOrder: Array[Int] =
    if (direct) {
      // (a loop: ArrayOps.filter boxes every position of an index of tens of thousands)
      val order = new Array[Int](size)
      var (at, n) = (0, 0)
      while (at < index.length) { if (index(at) >= 0) { order(n) = index(at); n += 1 }; at += 1 }
      order
    } else {
      val sorted = java.util.Arrays.copyOf(frames, size)
      java.util.Arrays.sort(sorted)
      sorted.map(hashedSlot)
    }

  private def directSlot(f: Long): Int = {
    if (size == 0 && !covers(f)) base = if (f < Long.MinValue + index.length / 2) Long.MinValue else f - index.length / 2
    if (covers(f)) {
      val at = (f - base).toInt
      val held = index(at)
      if (held >= 0) held else { val s = add(f); index(at) = s; s }
    } else {
      reindex(math.min(lowest, f), math.max(highest, f), size + 1, spare = true, growLeft = f < lowest)
      slotOf(f)
    }
  }

  /** Whether a direct index has a position for frame `f` (as longs do not overflow). */
  private def covers(f: Long): Boolean = f >= base && f - base >= 0 && f - base < index.length

  private def hashedSlot(f: Long): Int = {
    var i = position(f)
    while (index(i) >= 0) {
      if (frames(index(i)) == f) return index(i)
      i = (i + 1) & (index.length - 1)
    }
    if ((size + 1) * 2 > index.length) {
      reindex(math.min(lowest, f), math.max(highest, f), size + 1, spare = true, growLeft = false)
      return slotOf(f)
    }
    index(i) = add(f)
    index(i)
  }

  /** A new index for frames from `low` to `high`, `most` of them held at most: direct where they are
    * dense enough (which a key's frames in random order become only as more arrive, so a hashed index is
    * reconsidered each time it grows), else hashed. With `spare`, a direct index has room for as much
    * again on the side it grew to, so that frames arriving in time order grow it O(log n) times.
    */
  private def reindex(low: Long, high: Long, most: Int, spare: Boolean, growLeft: Boolean): Unit = {
    val before = index.length
    val span = if (high - low >= 0 && high - low < Long.MaxValue) high - low + 1 else Long.MaxValue // (overflows to negative)
    val capacity = math.min(Int.MaxValue - 8L, if (spare) math.min(span, Int.MaxValue) * 2 else span)
    val held = if (direct) index.length else 0
    direct = span <= 4L * most + Slack || capacity - held <= budget.left
    budget.left -= (if (direct) capacity else 0) - held
    if (direct) {
      base = if (!growLeft) low else if (high - capacity + 1 > high) Long.MinValue else high - capacity + 1 // (> high: overflowed)
      index = free(capacity.toInt)
      var s = 0
      while (s < size) { index((frames(s) - base).toInt) = s; s += 1 }
    } else {
      index = free(math.max(64, Integer.highestOneBit(most) * 4))
      var s = 0
      while (s < size) {
        var i = position(frames(s))
        while (index(i) >= 0) i = (i + 1) & (index.length - 1)
        index(i) = s
        s += 1
      }
    }
    budget.tableBytes += (index.length - before) * 4L
  }

  private def grow(capacity: Int): Unit = {
    budget.tableBytes += (capacity - frames.length) * 8L * (1 + columns)
    frames = java.util.Arrays.copyOf(frames, capacity)
    numbers = java.util.Arrays.copyOf(numbers, capacity * columns)
    for (c <- rows.indices) rows(c) = java.util.Arrays.copyOf(rows(c), capacity)
  }

  private def add(f: Long): Int = {
    if (size == frames.length) grow(size * 2)
    frames(size) = f
    if (size == 0) { lowest = f; highest = f } else if (f < lowest) lowest = f else if (f > highest) highest = f
    size += 1
    size - 1
  }

  private def position(f: Long): Int = {
    val h = f * 0x9E3779B97F4A7C15L // Fibonacci hashing
    (h ^ (h >>> 32)).toInt & (index.length - 1)
  }

}

private[spark] object FrameTable {
  /** About what one core's cache holds besides the rest of a task's work: tables beyond it are slower to
    * add to at random than through deferred events.
    */
  val CacheBytes: Long = 2L << 20

  /** How many events a task's keys must have had on average before it defers events: the appends of keys
    * with few events each are as scattered as their tables.
    */
  val EventsPerKey = 64

  /** How many positions a direct index may have beyond four per frame held. */
  private val Slack = 4096

  /** What one task's tables may still hold: direct index positions beyond the density rule, and deferred
    * events (in longs: an event's time and numbers); and past how many bytes of tables (their frames,
    * numbers and indexes) and events per key a task defers events.
    */
  final class Budget(var left: Long = 4L << 20, var deferredLeft: Long = 4L << 20, val cacheBytes: Long = CacheBytes,
      val eventsPerKey: Int = EventsPerKey) {
    /** The bytes of the tables' frames, numbers and indexes. */
    var tableBytes = 0L
  }

  private val noneDeferred = Array.emptyLongArray

  /** An index with no slot in it. */
  private def free(capacity: Int): Array[Int] = { val index = new Array[Int](capacity); java.util.Arrays.fill(index, -1); index }
}
