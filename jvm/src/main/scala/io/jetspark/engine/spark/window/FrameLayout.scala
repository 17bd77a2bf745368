package io.jetspark.engine.spark.window

import io.jetspark.engine.spark.window.TypedWindow.LongField
import org.apache.spark.sql.catalyst.expressions.BaseGenericInternalRow
import org.apache.spark.sql.types._

/** How a columnar window's frames ([[ColumnarFrames]]) hold its operation: the leaf parts, the columns of
  * numbers in a frame's slot (a number per part, then the items picks keep as numbers), the rows beside
  * them, and how two frames' numbers combine.
  *
  * @param parts   the operation's leaf parts in order; a pick reads its value at its ordinal of the
  *                projected row ([[TypedWindow.project]])
  * @param shape   how the parts' results make the operation's
  * @param itemFields where a pick's item is the row: the ordinals of the item's fields in a projected row,
  *                and the fields, which are all a pick keeps of the row (nullable where a projected row may
  *                hold a null there)
  * @param keyField the index in `itemFields` of a field that is the key itself, of an integer type, which
  *                every row of a key holds alike (-1: none)
  */
private[spark] final class FrameLayout(val parts: Array[FrameLayout.Part], val shape: FrameLayout.Shape,
    val itemFields: Seq[(Int, StructField)], keyField: Int) extends Serializable {
  import FrameLayout._

  val picks: Array[Int] = { var n = -1; parts.map { case _: Pick => n += 1; n; case Count => -1 } }
  val fieldCount = itemFields.length
  val fieldTypes = itemFields.map(_._2.dataType).toArray
  val fieldOrdinals = itemFields.map(_._1).toArray
  // A pick keeps an item of fixed-width fields as numbers beside its value (see ItemLayout), other items
  // as rows. (Every frame holds an item for each pick: a frame is made for an event, which every part takes.)
  val itemsAsNumbers = fieldCount < 64 && itemFields.forall(f => FixedWidth.contains(f._2.dataType))
  val rowColumns = if (itemsAsNumbers) 0 else picks.count(_ >= 0)
  /** The item field read from the key's number, where items are numbers (-1: none). */
  val fromKey = if (itemsAsNumbers) keyField else -1
  /** Per pick, where items are numbers: how its item is kept. */
  val layouts: Array[ItemLayout] = {
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
  val numberColumns = layouts.lastOption.fold(parts.length)(l => l.first + l.width)
  /** Where each of a frame's number columns is among a deferred event's numbers, or [[OneEach]] (a count's)
    * or [[TheTimestamp]] (an item's field that is the timestamp, which the event is deferred by): the
    * parts' columns but the counts', in order, then the columns of [[layouts]] but the timestamps'.
    */
  val deferredAt: Array[Int] = {
    val timestamps = layouts.filter(_.timestamp >= 0).map(l => l.first + l.timestamp).toSet
    var kept = -1
    Array.tabulate(numberColumns)(c =>
      if (c < parts.length && parts(c) == Count) OneEach else if (timestamps(c)) TheTimestamp else { kept += 1; kept })
  }
  /** Each of a frame's number columns at its own place (where [[keep]] keeps an item in a frame's slot). */
  val asInFrame: Array[Int] = Array.tabulate(numberColumns)(identity)

  /** Adds the numbers of one frame (`from`, at `fromAt`) into those of another (`into`, at `at`; holding
    * nothing yet if `isNew`): counts add up, a pick takes the incoming value and item unless the one it
    * holds beats or ties it. Returns the picks that took the incoming item, a bit each (by pick index).
    */
  def mergeInto(into: Array[Long], at: Int, isNew: Boolean, from: Array[Long], fromAt: Int): Long = {
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
}

private[spark] object FrameLayout {
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
  val TimestampOrdinal = 1

  /** Of [[FrameLayout.deferredAt]]: a count's column, 1 for every event and not deferred. */
  val OneEach = -1
  /** Of [[FrameLayout.deferredAt]]: a column that is the event's timestamp, which it is deferred by. */
  val TheTimestamp = -2

  /** How the leaf parts' results make the operation's result. */
  sealed trait Shape extends Serializable
  final case class Leaf(part: Int) extends Shape
  final case class AllOf(parts: Seq[Shape]) extends Shape

  def beats(value: Long, kept: Long, greatest: Boolean): Boolean = if (greatest) value > kept else value < kept

  /** Field types that a pick keeps as numbers. */
  private val FixedWidth: Set[DataType] = Set(ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, BooleanType)

  /** How a non-null field of a FixedWidth type is kept as a number; [[KeptFields]] reads it back. */
  def encoder(t: DataType): LongField = t match {
    case FloatType => (row, i) => java.lang.Float.floatToRawIntBits(row.getFloat(i)).toLong
    case DoubleType => (row, i) => java.lang.Double.doubleToRawLongBits(row.getDouble(i))
    case BooleanType => (row, i) => if (row.getBoolean(i)) 1L else 0L
    case integral => TypedWindow.integral(integral).getOrElse(throw new IllegalArgumentException(s"no number for ${t.simpleString}"))
  }

  /** A kept item's fields, read where they are held: the numbers of a run's frame at `at`, laid out
    * by `layout`, and the key's number (null: the key is null). Made for a window's result and read at once.
    */
  final class KeptFields(numbers: Array[Long], at: Int, layout: ItemLayout, types: Array[DataType], key: java.lang.Long)
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
