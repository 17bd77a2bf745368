package io.jetspark.engine.spark.epoch

import io.jetspark.engine.spark.SharedSparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

class EpochSequenceTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark
  private val schema = StructType(Seq(StructField("item", BinaryType), StructField("ts", LongType), StructField("ctl", BinaryType)))
  private val sequenced = EpochSequence.withIds(schema)

  private def data(name: String): InternalRow = InternalRow(name.getBytes("UTF-8"), 0L, null)
  private def control(sender: Int): InternalRow = InternalRow(null, null, EpochControl(sender, 0L, 5L, done = false).encode)
  private def name(row: InternalRow): String = if (row.isNullAt(0)) s"ctl" else new String(row.getBinary(0), "UTF-8")
  private def ints(xs: Int*) = new GenericArrayData(xs.toArray[Any])
  /** A row with its id: substream, offset, fan-out path and ties. */
  private def withId(item: String, substream: Int, offset: Long, path: Seq[Int] = Nil, ties: Seq[Int] = Nil): InternalRow =
    InternalRow(item.getBytes("UTF-8"), 0L, substream, offset, ints(path: _*), ints(ties: _*), null)

  test("each partition's data rows are numbered in order from the vertex's first substream; control rows get no id") {
    val rows = spark.sparkContext.parallelize(Seq(Seq(data("a0"), data("a1"), control(0)), Seq(data("b0"), control(1))), 2)
      .flatMap(identity)
    val got = EpochSequence.assigned(rows, schema, 8).glom().collect().toSeq.map(_.toSeq.map(_.copy()))
    val ids = got.map(_.map(r => if (r.isNullAt(2)) (name(r), None) else (name(r), Some((r.getInt(2), r.getLong(3))))))
    assert(ids == Seq(Seq("a0" -> Some((8, 0L)), "a1" -> Some((8, 1L)), "ctl" -> None), Seq("b0" -> Some((9, 0L)), "ctl" -> None)))
    assert(got.flatten.filter(_.isNullAt(0)).forall(r => !r.isNullAt(sequenced.length - 1)))
  }

  test("a restore gives a partition's data rows in id order, whatever order the shuffle brought them in, its controls last") {
    def ctl(sender: Int) = InternalRow(null, null, null, null, null, null, EpochControl(sender, 0L, 5L, done = false).encode)
    val mixed = Seq(withId("b1", 1, 1), ctl(1), withId("a2", 0, 2), withId("a0-x1", 0, 0, Seq(1)), withId("b0", 1, 0), ctl(0),
      withId("a0", 0, 0), withId("a0-x0", 0, 0, Seq(0)), withId("a1", 0, 1))
    val got = EpochSequence.restored(spark.sparkContext.parallelize(mixed, 1), sequenced).collect().map(name).toSeq
    // the record before what a flat_map made of it, its outputs in their order; substream 0 before 1
    assert(got == Seq("a0", "a0-x0", "a0-x1", "a1", "a2", "b0", "b1", "ctl", "ctl"))
  }

  test("an ordered merge ties rows by branch before earlier ties: of one record's copies, the earlier branch's first") {
    val first = spark.sparkContext.parallelize(Seq(withId("x-late", 0, 0, ties = Seq(0)), withId("y", 0, 1)), 1)
    val second = spark.sparkContext.parallelize(Seq(withId("x-early", 0, 0, ties = Seq(1))), 1)
    val laned = EpochSequence.laned(second, sequenced, 0).union(EpochSequence.laned(first, sequenced, 1)).coalesce(1)
    val got = EpochSequence.restored(laned, sequenced).collect().map(name).toSeq
    assert(got == Seq("x-early", "x-late", "y"))
  }

  test("what a flat_map after an ordered merge makes of its rows is restored in the merge's order, each row's outputs together") {
    // merged: 99 (path [], branch 1), -1 (path [0], branch 0), -1 (path [1], branch 0); then a flat_map
    // appends 0 and 1 to each path, as Python's steps do to the fan-out column
    val flatMapBranch = spark.sparkContext.parallelize(Seq(withId("-1a", 0, 0, Seq(0)), withId("-1b", 0, 0, Seq(1))), 1)
    val mapBranch = spark.sparkContext.parallelize(Seq(withId("99", 0, 0)), 1)
    val merged = EpochSequence.restored(EpochSequence.laned(flatMapBranch, sequenced, 0)
      .union(EpochSequence.laned(mapBranch, sequenced, 1)).coalesce(1), sequenced).collect().toSeq
    val fanOut = sequenced.fieldIndex("seq_fan_out")
    val flatMapped = merged.flatMap { row =>
      Seq(0, 1).map { j =>
        val values = row.toSeq(sequenced).toArray
        values(0) = s"${name(row)}/$j".getBytes("UTF-8")
        values(fanOut) = ints(row.getArray(fanOut).toIntArray() :+ j: _*)
        InternalRow.fromSeq(values.toSeq)
      }
    }
    val got = EpochSequence.restored(spark.sparkContext.parallelize(flatMapped.reverse, 1), sequenced).collect().map(name).toSeq
    assert(got == Seq("99/0", "99/1", "-1a/0", "-1a/1", "-1b/0", "-1b/1"))
  }
}
