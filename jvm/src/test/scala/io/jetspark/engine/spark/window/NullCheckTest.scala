package io.jetspark.engine.spark.window

import io.jetspark.engine.spark.rows.StageFailedException
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types.LongType
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatchRow}
import org.scalatest.funsuite.AnyFunSuite

/** A typed window's check of a batch of projected rows (key, timestamp, value v) fails where the check of
  * its rows one by one fails, with the same message: at the first null timestamp or value in row order.
  */
class NullCheckTest extends AnyFunSuite {
  private val check = new TypedWindow.NullCheck("window", Array("v"))
  private val timestampIsNull = Some("stage 'window' failed: a row's timestamp is null")
  private val valueIsNull = Some("stage 'window' failed: a row's value v is null")

  /** The columns k, t, v of a batch of `rows` rows, null at each (row, ordinal) of `nulls`. */
  private def columns(rows: Int, nulls: Set[(Int, Int)]): Array[ColumnVector] = Array.tabulate(3) { c =>
    val column = new OnHeapColumnVector(rows, LongType)
    for (r <- 0 until rows) if (nulls((r, c))) column.putNull(r) else column.putLong(r, r * 10L + c)
    column
  }

  private def failure(check: => Unit): Option[String] = try { check; None } catch { case e: StageFailedException => Some(e.getMessage) }

  private def byRows(columns: Array[ColumnVector], rows: Int): Option[String] = failure {
    val row = new ColumnarBatchRow(columns)
    for (r <- 0 until rows) { row.rowId = r; check.row(row) }
  }

  test("a batch fails at its first null timestamp or value in row order, as its rows do") {
    val cases = Seq(
      Set.empty[(Int, Int)] -> None,
      Set((2, 0)) -> None, // a null key is a key
      Set((3, 2)) -> valueIsNull,
      Set((5, 1)) -> timestampIsNull,
      Set((3, 2), (5, 1)) -> valueIsNull, // row 3 comes first
      Set((5, 2), (5, 1)) -> timestampIsNull, // in one row, the timestamp first
      Set((7, 2)) -> valueIsNull)
    for ((nulls, expected) <- cases) {
      val batch = columns(8, nulls)
      assert(failure(check.batch(batch, 8)) == expected, nulls)
      assert(byRows(batch, 8) == expected, nulls)
    }
  }

  test("a column that holds a null in a row its batch leaves out fails nothing") {
    // (as a column of Iceberg's or Delta's says it may hold a null where its batch leaves deleted rows out)
    val batch = columns(8, Set((7, 1), (7, 2)))
    assert(batch(1).hasNull && batch(2).hasNull)
    assert(failure(check.batch(batch, 7)).isEmpty && byRows(batch, 7).isEmpty)
  }
}
