package io.jetspark.engine.spark.rows

import io.jetspark.core._
import io.jetspark.engine.spark.SharedSparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** Emits (partition index, running count) per item, and the partition's total on complete. */
final class CountPerPartition extends AbstractProcessor {
  private var count = 0L
  private var emission = Emission.Done
  override def process(ordinal: Int, inbox: Inbox): Unit = while (!inbox.isEmpty) {
    if (emission.isDone) { count += 1; emission = Emission(Seq((context.globalProcessorIndex, count))) }
    if (!emission.emitTo(outbox)) return
    inbox.remove()
  }
  override def tryProcessWatermark(wm: Watermark): Boolean = outbox.offer(wm)
  override def complete(): Boolean = {
    if (emission.isDone) emission = Emission(Seq((context.globalProcessorIndex, -count)))
    emission.emitTo(outbox)
  }
}

class ProcessorStageTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark

  test("one processor instance runs per partition and its output becomes the DataFrame") {
    val input = spark.range(0, 10, 1, numPartitions = 3).toDF("n")
    val sizes = input.rdd.mapPartitionsWithIndex((i, it) => Iterator(i -> it.size)).collect().toMap
    val stage = ProcessorStage(
      "count", () => new CountPerPartition, (r: InternalRow) => r.getLong(0),
      { case (p: Int, c: Long) => InternalRow(p, c) },
      StructType(Seq(StructField("partition", IntegerType), StructField("count", LongType))))
    val out = stage.run(input).collect().map(r => (r.getInt(0), r.getLong(1))).toList
    // Expected from the partition sizes alone: 1..n per partition, then -n on complete.
    val expected = sizes.toList.sortBy(_._1).flatMap { case (p, n) => (1L to n).map(p -> _) :+ (p -> -n.toLong) }
    assert(out.sortBy(x => (x._1, x._2 < 0, math.abs(x._2))) == expected)
  }
}
