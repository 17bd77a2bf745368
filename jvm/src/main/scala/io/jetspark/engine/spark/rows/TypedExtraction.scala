package io.jetspark.engine.spark.rows

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.pipeline.definition.Extractor
import org.apache.spark.sql.functions.{col, struct}
import org.apache.spark.sql.types.StructField
import org.apache.spark.sql.{Column, DataFrame}

import scala.util.control.NonFatal

/** Keys, timestamps and values of typed items, evaluated in the JVM as Catalyst expressions (DESIGN.md
  * "Items"): a typed item is a row of a DataFrame, and an extractor given as a field name or a Column is
  * a Column over that DataFrame. Any typed stage (an aggregation, a window) takes its extractions from
  * here: [[column]] for one extractor, [[typed]] with what it gives (type, nullability) before anything
  * runs.
  */
object TypedExtraction {

  /** What `e` gives on each row of `rows`, or why the JVM cannot evaluate it there (Left: only Python
    * can). A field name reads the one top-level field of exactly that name, as Python's `row[name]` does
    * (no case folding, no dotted paths); the whole item is the row as a struct of its fields.
    */
  def column(e: Extractor, rows: DataFrame): Either[String, Column] = e match {
    case Extractor.FieldName(name) =>
      rows.schema.fields.count(_.name == name) match {
        case 1 => Right(col(quoted(name)))
        case 0 => Left(s"the rows (${rows.schema.simpleString}) have no field '$name'")
        case n => Left(s"the rows have $n fields named '$name'")
      }
    case Extractor.ColumnExpr(c: Column) => Right(c)
    case Extractor.WholeItem => Right(wholeRow(rows))
    case other => Left(s"${other.describe} runs in Python")
  }

  /** The extractor an aggregate operation's value slot names (`{"kind": "field" | "column" | ...}`, see
    * `PythonAggregations`); `columns` holds the Columns the slots refer to by number. A slot that is not a
    * field or a Column is one only Python runs.
    */
  def slotExtractor(slot: JsonNode, columns: Map[Int, AnyRef]): Extractor = slot.get("kind").asText match {
    case "field" => Extractor.FieldName(slot.get("name").asText)
    case "column" => Extractor.ColumnExpr(columns.getOrElse(slot.get("ref").asInt, slot.path("name").asText))
    case _ => Extractor.PythonFn(null, slot.path("name").asText)
  }

  /** The row itself as one struct value (its fields, names and order kept). */
  def wholeRow(rows: DataFrame): Column = struct(rows.columns.toSeq.map(c => col(quoted(c))): _*)

  /** [[column]] with what it gives (type, nullability), known before anything runs: a field's from the
    * schema, a Column's from Spark's analysis (Left with Spark's reason when it does not resolve there:
    * a missing field, a type error).
    */
  def typed(e: Extractor, rows: DataFrame): Either[String, (Column, StructField)] = column(e, rows).flatMap { c =>
    e match {
      case Extractor.FieldName(name) => Right(c -> rows.schema(name))
      case _ =>
        try Right(c -> rows.select(c).schema.head)
        catch { case NonFatal(error) => Left(s"$c does not resolve on rows ${rows.schema.simpleString}: ${firstLine(error)}") }
    }
  }

  private[spark] def quoted(name: String): String = "`" + name.replace("`", "``") + "`"

  private def firstLine(e: Throwable): String = Option(e.getMessage).fold(e.getClass.getName)(_.linesIterator.next())
}
