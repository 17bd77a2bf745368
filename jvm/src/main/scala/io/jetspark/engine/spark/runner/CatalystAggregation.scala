package io.jetspark.engine.spark.runner

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import io.jetspark.core.aggregate.PythonNumbers
import io.jetspark.engine.spark.rows.TypedExtraction
import io.jetspark.pipeline.{PythonOperation, ValueSlot}
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.PythonOperation._
import org.apache.spark.sql.api.java.UDF2
import org.apache.spark.sql.expressions.UserDefinedFunction
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.apache.spark.sql.{Column, DataFrame}

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** A keyed or global aggregation over typed rows run by Catalyst as `groupBy(key).agg(...)` (or
  * `agg(...)`), because every operation in it has Spark functions that give the results the core's
  * operation gives ([[io.jetspark.core.aggregate.AggregateOperations]], Python's number semantics):
  *
  *  - `counting`: `count(1)`, an int; 0 for a global aggregation of nothing.
  *  - `summing` of integers: exact, as Python's `int`. Byte/short/int values are summed as longs;
  *    long values as their high and low 32-bit halves (two long sums that cannot overflow below 2^31
  *    rows), recombined exactly as `decimal(38,0)`. A sum that still overflows fails the job instead
  *    of wrapping. Floats/doubles: a double sum. The sum of nothing is the int 0 (Python's `sum([])`).
  *  - `averaging`: the same exact sum divided by the count the core's way
  *    ([[PythonNumbers.divideToDouble]]); NaN for nothing.
  *  - `min_by`/`max_by` over numbers, strings (UTF-8 byte order is code point order) or booleans:
  *    Spark's `min_by`/`max_by` of the whole row; NaN ranks above every number, as in
  *    [[io.jetspark.core.aggregate.AnyOrdering]]. Of tied items any one is returned: the core keeps
  *    the first it meets, and which that is depends on arrival order, which an aggregation does not
  *    promise.
  *  - `all_of` of such operations: a struct of their results, a tuple in Python.
  *
  * A null value where Python would fail (`sum` or `<` with None) fails the job naming the stage; a
  * single null under `min_by` is that item, as in Python. Anything else (variance, linear_trend,
  * top_n, to_list, to_set, Python extractors, other value types) is not delegated: `plan` says why.
  *
  * The output has the columns `key` (when keyed) and `result`. [[shape]] tells Python how a result row
  * becomes the value the API promises (`python/jetspark/worker/typed_results.py`).
  */
final class CatalystAggregation private (key: Option[Column], aggregates: Seq[Column], result: Column, val shape: JsonNode,
    positioned: Boolean) {
  import CatalystAggregation._

  /** The results over `rows`; `keep` is a condition on each group's row count that keeps every group
    * (a counter for metrics, see [[rows.RowCounting.groups]]).
    */
  def run(source: DataFrame, keep: Column => Column): DataFrame = {
    // (An aggregate function takes no nondeterministic argument: the positions are a column of their own.)
    val rows = if (positioned) source.withColumn(PositionColumn, monotonically_increasing_id()) else source
    val named = count(lit(1)).as(RowsColumn) +: aggregates.zipWithIndex.map { case (a, i) => a.as(s"a$i") }
    val grouped = key.fold(rows.agg(named.head, named.tail: _*))(k => rows.groupBy(k.as(KeyColumn)).agg(named.head, named.tail: _*))
    // `keep` is always true; inside the projection it costs one analysis less than a filter of its own
    // (each Dataset step analyses its plan again, a fixed cost of every job). The `otherwise` keeps the
    // result as nullable as it was. A projected column is counted only where it is computed: whoever
    // reads these results must read `result` (noop sinks and the conversion to items do), since Catalyst
    // prunes an unread column, nondeterministic or not.
    grouped.select(key.map(_ => col(KeyColumn)).toSeq :+
      when(keep(col(RowsColumn)), result).otherwise(result).as(ResultColumn): _*)
  }
}

object CatalystAggregation {
  val KeyColumn = "key"
  val ResultColumn = "result"

  /** The Catalyst plan of aggregating `rows` by `key` (None: globally) with the operation `op`
    * (`columns` resolves its Column refs), or why it cannot be delegated. `stage` names the stage in the
    * errors the plan raises while it runs.
    */
  def plan(stage: String, op: PythonOperation, columns: Map[Int, AnyRef], key: Option[Extractor],
      rows: DataFrame): Either[String, CatalystAggregation] = {
    val translator = new Translator(stage, columns, rows)
    for {
      keyColumn <- key.fold[Either[String, Option[Column]]](Right(None))(k => translator.groupingKey(k).map(Some(_)))
      translated <- translator.translate(op)
    } yield new CatalystAggregation(keyColumn, translator.aggregates.toSeq, translated._1, translated._2, translator.positioned)
  }

  private val Exact = DecimalType(38, 0)
  private val RowsColumn = "__rows"
  /** Each row's encounter position (monotonically_increasing_id counts partition by partition, in each in
    * order, as the Python items' EncounterPositions), by which picks break ties.
    */
  private val PositionColumn = "__position"

  /** A value extractor of an operation as a Column, with what it gives and how to name it in errors. */
  private final case class Value(column: Column, field: StructField, text: String)

  /** The core's mean of an exact integer sum (None: no rows) over `n` rows. A Java UDF interface: a Scala
    * function's input encoders are resolved again in every job's analysis.
    */
  private val exactMean: UserDefinedFunction = {
    val mean: UDF2[java.math.BigDecimal, java.lang.Long, java.lang.Double] = (sum, n) =>
      if (n == 0L || sum == null) Double.NaN else PythonNumbers.divideToDouble(BigInt(sum.toBigIntegerExact), n.longValue)
    udf(mean, DoubleType)
  }

  /** One operation at a time: its Spark aggregates (collected in `aggregates`, read back as `a<i>`) and
    * the expression of its result over them.
    */
  private final class Translator(stage: String, columns: Map[Int, AnyRef], rows: DataFrame) {
    val aggregates: ArrayBuffer[Column] = ArrayBuffer.empty
    /** Whether the aggregates read the rows' positions ([[PositionColumn]]). */
    var positioned = false
    private val rowCount = col(RowsColumn)

    private def aggregate(c: Column): Column = { aggregates += c; col(s"a${aggregates.size - 1}") }

    private def fail(message: String): Column = raise_error(lit(s"stage '$stage' failed: $message"))

    def groupingKey(e: Extractor): Either[String, Column] = TypedExtraction.typed(e, rows).flatMap { case (c, f) =>
      if (hasMap(f.dataType)) Left(s"the key ${e.describe} is a map (${f.dataType.simpleString}), which Spark cannot group by")
      else Right(c)
    }

    private def value(slot: ValueSlot): Either[String, Value] = {
      val extractor = TypedExtraction.slotExtractor(slot.extractor, columns)
      values.getOrElseUpdate(extractor, TypedExtraction.typed(extractor, rows).map { case (c, f) => Value(c, f, extractor.describe) })
    }

    // Each distinct extractor analysed once (analysis is the cost of planning).
    private val values = scala.collection.mutable.Map.empty[Extractor, Either[String, Value]]

    def translate(op: PythonOperation): Either[String, (Column, JsonNode)] = op match {
      case Counting => Right(aggregate(count(lit(1))) -> shapeOf("plain"))
      case Summing(v) => value(v).flatMap(exactSum(_, op.name)).map { case (sum, _) => sum -> shapeOf("sum") }
      case Averaging(v) => value(v).flatMap(exactSum(_, op.name)).map { case (sum, integral) =>
        val mean = if (integral) exactMean(sum.cast(Exact), rowCount)
          else when(rowCount === 0, lit(Double.NaN)).otherwise(sum / rowCount.cast(DoubleType))
        mean -> shapeOf("plain")
      }
      case MinBy(v) => value(v).flatMap(pick(_, op.name, greatest = false))
      case MaxBy(v) => value(v).flatMap(pick(_, op.name, greatest = true))
      case AllOf(operations) =>
        val parts = operations.map(translate)
        parts.collectFirst { case Left(why) => why }.toLeft {
          val done = parts.collect { case Right(part) => part }
          val shape = shapeOf("tuple")
          shape.putArray("parts").addAll(done.map(_._2).asJava)
          struct(done.zipWithIndex.map { case ((c, _), i) => c.as(s"p$i") }: _*) -> shape
        }
      case Variance(_) | LinearTrend(_, _) | TopN(_, _) | BottomN(_, _) | ToList | ToSet | UserDefined(_) =>
        Left(s"${op.name} has no Catalyst function with the same results")
    }

    /** The exact sum of `v` and whether it is an integer sum; a null value fails the stage. */
    private def exactSum(v: Value, op: String): Either[String, (Column, Boolean)] = {
      // One message for every operation that sums this value: the sums are then one expression, which
      // Catalyst computes once per row (summing and averaging of a field share it).
      val checked = if (v.field.nullable) when(v.column.isNull, fail(s"a sum met None (a null ${v.text})")).otherwise(v.column) else v.column
      def overflowing(sums: Column*): Column = sums.map(_.isNull).reduce(_ || _) && rowCount > 0
      val overflow = fail(s"$op of ${v.text} overflows what the JVM sums exactly")
      v.field.dataType match {
        case ByteType | ShortType | IntegerType =>
          val sum = aggregate(try_sum(checked.cast(LongType)))
          Right(when(overflowing(sum), overflow).otherwise(sum) -> true)
        case LongType =>
          val high = aggregate(try_sum(shiftright(checked, 32)))
          val low = aggregate(try_sum(checked.bitwiseAND(0xFFFFFFFFL)))
          Right(when(overflowing(high, low), overflow).otherwise(high.cast(Exact) * lit(1L << 32) + low.cast(Exact)) -> true)
        case FloatType | DoubleType => Right(aggregate(sum(checked.cast(DoubleType))) -> false)
        case other => Left(s"$op of ${v.text}, a ${other.simpleString}")
      }
    }

    private def pick(v: Value, op: String, greatest: Boolean): Either[String, (Column, JsonNode)] = v.field.dataType match {
      case t if orderedAsInPython(t) =>
        val row = TypedExtraction.wholeRow(rows)
        // Of tied rows the first in encounter order.
        positioned = true
        val position = col(PositionColumn)
        val picked = aggregate(if (greatest) max_by(row, struct(v.column, -position)) else min_by(row, struct(v.column, position)))
        val result = if (!v.field.nullable) picked else {
          // Python compares None only against a second item; Spark's min_by skips null values.
          val nulls = aggregate(count_if(v.column.isNull))
          val only = aggregate(any_value(row))
          when(nulls > 0 && rowCount > 1, fail(s"$op cannot order None (a null ${v.text}) against other values"))
            .when(nulls > 0, only).otherwise(picked)
        }
        Right(result -> shapeOf("item"))
      case other => Left(s"$op by ${v.text}, a ${other.simpleString}")
    }
  }

  private def shapeOf(kind: String): ObjectNode = JsonNodeFactory.instance.objectNode().put("kind", kind)

  /** Types whose Spark order is Python's order of the values a Row gives (the default string collation
    * compares UTF-8 bytes, which is code point order).
    */
  private def orderedAsInPython(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BooleanType => true
    case s: StringType => s == StringType
    case _ => false
  }

  private def hasMap(t: DataType): Boolean = t match {
    case _: MapType => true
    case s: StructType => s.fields.exists(f => hasMap(f.dataType))
    case a: ArrayType => hasMap(a.elementType)
    case _ => false
  }
}
