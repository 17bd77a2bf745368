package io.jetspark.engine.spark.window

import io.jetspark.core.window.{KeyedWindowResult, WindowResult}
import io.jetspark.engine.spark.rows.{EncounterPositions, RowSchemas, StageFailedException, TypedExtraction}
import io.jetspark.item.{Extracted, PickledItem, PickledKey, PythonAggregations, PythonValues, RowItem}
import io.jetspark.pipeline.{PythonAggregateSpec, PythonOperation}
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.PythonOperation._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.sql.{Column, DataFrame}

/** A window whose items are the rows of a DataFrame source, read in the JVM (DESIGN.md "Items"): Catalyst
  * projects each row to its key, timestamp and the operation's values, and the core's window processors
  * take them from there ([[WindowRunner]]), or for counting and picks by an integer a table of frames as
  * numbers ([[ColumnarFrames]]); no row becomes a Python object on the way in.
  *
  * It applies where the JVM makes exactly the Python values the opaque path would: the key and the
  * values are field names or Columns of integer, float, string or boolean type, the timestamp an
  * integer column (ms), and the operation is `counting`, `summing`, `averaging`, `variance`,
  * `linear_trend`, or `min_by`/`max_by` where every field of the rows is of such a type (the item is then
  * the row, read in the JVM and written back to Python as the `Row` it would have been, see [[RowItem]]),
  * or `all_of` of those. Anything else reads the rows as Python items, as before. See [[TypedWindow.plan]].
  *
  * @param key    the grouping key's Column and type (None: a global window)
  * @param values the operation's value Columns and types, in slot order
  * @param row    where the operation's results are items: the rows' fields and their types
  * @param reused the row's fields that the key, the timestamp or a value is, unchanged: by name, their
  *               ordinal in a projected row, where the items read them
  */
final case class TypedWindow(stage: String, key: Option[(Column, DataType)], timestamp: Column, values: Seq[(Column, DataType)],
    row: Option[StructType], reused: Map[String, Int]) {
  import TypedWindow._

  /** `rows` as (key, ts, v0, v1, ..., then where the items are rows, those of their fields that are not
    * already among them): the key column is named [[rows.RowSchemas.Key]], so a partitioned edge moves
    * the rows by it.
    */
  def project(rows: DataFrame): DataFrame = rows.select(
    (key.fold(lit(null).as(RowSchemas.Key))(_._1.as(RowSchemas.Key)) +: timestamp.as(RowSchemas.Ts) +:
      (values.zipWithIndex.map { case ((c, _), i) => c.as(s"v$i") } ++
        row.toSeq.flatMap(_.fieldNames.toSeq.filterNot(reused.contains).zipWithIndex.map { case (f, i) =>
          col(TypedExtraction.quoted(f)).as(s"f$i")
        }))): _*)

  /** Where the items are rows, the ordinal of each of their fields in a projected row. */
  def itemOrdinals: Seq[Int] = {
    var next = 2 + values.length
    row.toSeq.flatMap(_.fieldNames).map(f => reused.getOrElse(f, { next += 1; next - 1 }))
  }

  /** The keys of projected rows. */
  def keys: KeyReader = new KeyReader(key.map(_._2))

  /** Fails the job naming the stage on a projected row whose timestamp or value is null, as it fails
    * where Python reads the items (None is no number).
    */
  def checked: TypedWindow.NullCheck = new TypedWindow.NullCheck(stage, values.map(_._1.toString).toArray)

  /** A projected row as the event the window processors take.
    *
    * Where the items are rows, an event keeps a copy of its projected row, which [[rowItems]] turns into
    * the [[RowItem]] Python gets only for the rows that win a window: most rows never win, and a frame's
    * winner crosses the shuffle as one array of bytes rather than a graph of boxed fields and names.
    */
  def events: InternalRow => TimedEvent = {
    val (keyed, check) = (keys(identity), checked)
    val valueOf = values.map(v => pythonValue(v._2)).toArray
    val itemOf: InternalRow => AnyRef = if (row.isDefined) _.copy() else _ => NoItem
    row => {
      check.row(row)
      val vs = if (valueOf.isEmpty) NoValues else new Array[Any](valueOf.length) // counting reads none
      var i = 0
      while (i < vs.length) { vs(i) = valueOf(i)(row, i + 2); i += 1 }
      new TimedEvent(row.getLong(1), new Extracted(keyed(row), itemOf(row), vs, null, EncounterPositions.next()))
    }
  }

  /** A result of this window with the rows its events kept (see [[events]]) as the [[RowItem]]s Python
    * reads: `min_by`/`max_by` give an `Option` of a row, `all_of` an array of its parts' results.
    */
  def rowItems: Any => Any = rowItemsAt(itemOrdinals)

  /** [[rowItems]] of rows that hold the item's fields at `ordinals`. */
  def rowItemsAt(ordinals: Seq[Int]): Any => Any = row.fold[Any => Any](identity) { schema =>
    val at = ordinals.toArray
    val names = schema.fieldNames
    val read = schema.fields.map(f => pythonValue(f.dataType))
    def items(result: Any): Any = result match {
      case r: InternalRow => new RowItem(names, Array.tabulate[AnyRef](read.length)(i => read(i)(r, at(i)).asInstanceOf[AnyRef]))
      case Some(x) => Some(items(x))
      case parts: Array[Any] => parts.map(items)
      case w: KeyedWindowResult[_, _] => w.copy(result = items(w.result))
      case w: WindowResult[_] => w.copy(result = items(w.result))
      case other => other
    }
    items
  }
}

object TypedWindow {
  /** The check of [[TypedWindow.checked]]: the timestamp (ordinal 1) and the values (from 2, named
    * `values`) of projected rows are never null.
    */
  final class NullCheck(stage: String, values: Array[String]) extends Serializable {
    def row(r: InternalRow): Unit = {
      var ordinal = 1
      while (ordinal < values.length + 2) { if (r.isNullAt(ordinal)) fail(ordinal); ordinal += 1 }
    }

    /** The same check of a batch of `rows` rows, its columns in the projected rows' order: at once
      * where no column says it may hold a null (checks per row and column were about a tenth of a
      * window's first stage's CPU at 100 ms slides), else row by row. (A column may say so of a null
      * in a row its batch leaves out, as Iceberg's and Delta's columns of rows not deleted do.)
      */
    def batch(columns: Array[ColumnVector], rows: Int): Unit = {
      var ordinal = 1
      var mayHoldNull = false
      while (ordinal < values.length + 2) { mayHoldNull ||= columns(ordinal).hasNull; ordinal += 1 }
      var r = 0
      while (mayHoldNull && r < rows) {
        ordinal = 1
        while (ordinal < values.length + 2) { if (columns(ordinal).isNullAt(r)) fail(ordinal); ordinal += 1 }
        r += 1
      }
    }

    private def fail(ordinal: Int): Nothing = throw new StageFailedException(stage,
      if (ordinal == 1) "a row's timestamp is null" else s"a row's value ${values(ordinal - 2)} is null")
  }

  private val NoValues = Array.empty[Any]
  private val NoItem = new PickledItem(Array.emptyByteArray)

  /** The typed reading of a window over `rows` with these extractors, or why there is none. */
  def plan(stage: String, key: Option[Extractor], timestamp: Extractor, op: PythonAggregateSpec,
      rows: DataFrame): Either[String, TypedWindow] = {
    def typed(e: Extractor): Either[String, (Column, DataType)] = TypedExtraction.typed(e, rows).flatMap {
      case (_, f) if !pythonTypes(f.dataType) => Left(s"${e.describe} is of type ${f.dataType.simpleString}")
      case (c, f) => Right(c -> f.dataType)
    }
    val givesRows = picksRows(op.operation)
    val valueExtractors = PythonAggregations.extractors(op).map(TypedExtraction.slotExtractor(_, op.columns))
    for {
      _ <- Either.cond(readsTyped(op.operation), (), s"${op.name} gives other items or runs in Python")
      _ <- rows.schema.fields.find(f => givesRows && !pythonTypes(f.dataType))
        .map(f => s"${op.name} gives the rows, and field ${f.name} is of type ${f.dataType.simpleString}").toLeft(())
      k <- key.fold[Either[String, Option[(Column, DataType)]]](Right(None))(e => typed(e).map(Some(_)))
      ts <- typed(timestamp).filterOrElse(t => Integral(t._2), s"${timestamp.describe} is not an integer")
      vs <- valueExtractors.foldLeft[Either[String, Seq[(Column, DataType)]]](Right(Nil)) { (acc, e) =>
        acc.flatMap(done => typed(e).map(done :+ _))
      }
    } yield {
      // A key, timestamp or value that is a field as it is can stand for that field of the item.
      // (extractor, its projected type, its ordinal in a projected row)
      val projected = key.zip(k.map(_._2)).map { case (e, t) => (e, t, 0) }.toSeq ++ Seq((timestamp, LongType, 1)) ++
        valueExtractors.zip(vs).zipWithIndex.map { case ((e, (_, t)), i) => (e, t, 2 + i) }
      val reused = projected.reverse.collect { // the first ordinal of a field that several are wins
        case (Extractor.FieldName(name), t, ordinal) if givesRows && rows.schema(name).dataType == t => name -> ordinal
      }.toMap
      TypedWindow(stage, k, ts._1.cast(LongType), vs, if (givesRows) Some(rows.schema) else None, reused)
    }
  }

  /** Whether `op` gives values computed from the extracted values alone, or the rows themselves as its
    * items ([[picksRows]]), in every part.
    */
  private def readsTyped(op: PythonOperation): Boolean = op match {
    case Counting | Summing(_) | Averaging(_) | Variance(_) | LinearTrend(_, _) | MinBy(_) | MaxBy(_) => true
    case AllOf(parts) => parts.forall(readsTyped)
    case TopN(_, _) | BottomN(_, _) | ToList | ToSet | UserDefined(_) => false
  }

  /** Whether some part of `op` gives rows as its items. */
  private def picksRows(op: PythonOperation): Boolean = op match {
    case MinBy(_) | MaxBy(_) => true
    case AllOf(parts) => parts.exists(picksRows)
    case Counting | Summing(_) | Averaging(_) | Variance(_) | LinearTrend(_, _) | TopN(_, _) | BottomN(_, _) | ToList |
         ToSet | UserDefined(_) => false
  }

  private val Integral: Set[DataType] = Set(ByteType, ShortType, IntegerType, LongType)
  private val pythonTypes: Set[DataType] = Integral ++ Set(FloatType, DoubleType, StringType, BooleanType)

  /** Reads a field of a row as a Long. A method of primitives, where a `Function2` would box the ordinal
    * and the result of every call.
    */
  private[spark] abstract class LongField extends Serializable {
    def apply(row: InternalRow, ordinal: Int): Long
  }

  /** How a column of type `t` at an ordinal is read as a Long, where `t` is an integer type. */
  private[spark] def integral(t: DataType): Option[LongField] = t match {
    case ByteType => Some((r, i) => r.getByte(i).toLong)
    case ShortType => Some((r, i) => r.getShort(i).toLong)
    case IntegerType => Some((r, i) => r.getInt(i).toLong)
    case LongType => Some((r, i) => r.getLong(i))
    case _ => None
  }

  /** How a column of type `t` at an ordinal becomes the Java value Python's unpickling would give (an int
    * as Integer or Long, a float as Double); null stays null (None).
    */
  private[spark] def pythonValue(t: DataType): (InternalRow, Int) => Any = t match {
    case ByteType => (r, i) => if (r.isNullAt(i)) null else Int.box(r.getByte(i).toInt)
    case ShortType => (r, i) => if (r.isNullAt(i)) null else Int.box(r.getShort(i).toInt)
    case IntegerType => (r, i) => if (r.isNullAt(i)) null else Int.box(r.getInt(i))
    case LongType => (r, i) => if (r.isNullAt(i)) null else Long.box(r.getLong(i))
    case FloatType => (r, i) => if (r.isNullAt(i)) null else Double.box(r.getFloat(i).toDouble)
    case DoubleType => (r, i) => if (r.isNullAt(i)) null else Double.box(r.getDouble(i))
    case StringType => (r, i) => if (r.isNullAt(i)) null else r.getUTF8String(i).toString
    case BooleanType => (r, i) => if (r.isNullAt(i)) null else Boolean.box(r.getBoolean(i))
    case other => throw new IllegalArgumentException(s"no Python value for ${other.simpleString}")
  }
}

/** Reads the key of a projected row (its column 0, of type `t`; None: a global window, whose key is empty)
  * and gives what `make` made of its pickle, made once per distinct key: a task has few keys, and keys
  * compare by their pickles. An integral key is looked up by its primitive value, with no boxing and no
  * object hashing per row (a fifth of a window's first stage went to looking keys up).
  *
  * The tables of a reader's function are not thread-safe: make one per task (a function made on the
  * driver is deserialized anew by each task, and one task's thread uses it).
  */
private[spark] final class KeyReader(t: Option[DataType]) extends Serializable {
  import KeyReader._
  import TypedWindow.{integral, pythonValue}

  def apply[S <: AnyRef](make: PickledKey => S): InternalRow => S = t match {
    case None =>
      lazy val only = make(NoKey)
      _ => only
    case Some(keyType) =>
      val read = pythonValue(keyType)
      def made(row: InternalRow): S = make(new PickledKey(PythonValues.dumps(read(row, 0) match {
        // A number key as Python's canonical keys make it (jetspark._items.canonical_key): a bool or an
        // integral float is the int it equals (-0.0 is 0), so that the Python items' path keys alike.
        case b: java.lang.Boolean => java.lang.Long.valueOf(if (b) 1L else 0L)
        case d: java.lang.Double if !d.isInfinite && d == Math.rint(d) => new java.math.BigDecimal(d.doubleValue).toBigInteger
        case other => other
      })))
      lazy val none = make(new PickledKey(PythonValues.dumps(null)))
      integral(keyType) match {
        case Some(value) =>
          // Small non-negative keys (ids, codes) index an array; others a primitive map.
          val small = new Array[AnyRef](SmallKeys)
          val others = new scala.collection.mutable.LongMap[S]()
          row => if (row.isNullAt(0)) none else {
            val k = value(row, 0)
            if (k >= 0 && k < SmallKeys) {
              val known = small(k.toInt)
              if (known != null) known.asInstanceOf[S] else { val s = made(row); small(k.toInt) = s; s }
            } else others.getOrElseUpdate(k, made(row))
          }
        case None =>
          val others = new java.util.HashMap[Any, S]()
          row => if (row.isNullAt(0)) none else {
            val value = read(row, 0)
            val known = others.get(value)
            if (known != null) known else { val s = made(row); others.put(value, s); s }
          }
      }
  }
}

private object KeyReader {
  private val SmallKeys = 1024
  private val NoKey = new PickledKey(Array.emptyByteArray)
}
