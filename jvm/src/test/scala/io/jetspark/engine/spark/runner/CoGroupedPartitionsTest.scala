package io.jetspark.engine.spark.runner

import io.jetspark.core.aggregate.AggregateOperations
import io.jetspark.core.processor.AggregateByKeyProcessor
import io.jetspark.engine.spark.SharedSparkSession
import io.jetspark.engine.spark.rows.ProcessorStage
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class CoGroupedPartitionsTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark

  /** Rows (key, n) for n in `range`, key = n % `keys`, spread over 2 partitions by key. */
  private def keyed(range: Range, keys: Int) = spark.range(range.start, range.end, 1, numPartitions = 3)
    .selectExpr(s"id % $keys as key", "id as n").repartition(2, col("key"))

  private val co = ProcessorStage(
    "co", () => new AggregateByKeyProcessor(IndexedSeq.fill(2)(_.asInstanceOf[(Long, Long)]._1),
      AggregateOperations.aggregateOperation2(AggregateOperations.counting(), AggregateOperations.summingLong[(Long, Long)](_._2))),
    (r: InternalRow) => (r.getLong(0), r.getLong(1)),
    { case (k: Long, (count: Long, sum: Long)) => InternalRow(k, count, sum) },
    StructType(Seq(StructField("key", LongType), StructField("count", LongType), StructField("sum", LongType))))

  test("both inputs of a key meet in one processor: a key of one input only still gets a result") {
    val out = CoGroupedPartitions.run(co, keyed(0 until 40, 4), keyed(100 until 130, 6)).collect()
      .map(r => r.getLong(0) -> (r.getLong(1), r.getLong(2))).toList
    // Brute force: count of the first input's items, sum of the second's, per key present in either.
    val first = (0L until 40L).groupBy(_ % 4)
    val second = (100L until 130L).groupBy(_ % 6)
    val expected = (first.keySet ++ second.keySet).toList.map(k =>
      k -> (first.get(k).fold(0L)(_.size.toLong), second.get(k).fold(0L)(_.sum)))
    assert(out.sortBy(_._1) == expected.sortBy(_._1))
    assert(out.map(_._1).toSet == Set(0L, 1L, 2L, 3L, 4L, 5L))
  }

  test("inputs of different partition counts are refused, naming the vertex") {
    val error = intercept[IllegalStateException](CoGroupedPartitions.run(co, keyed(0 until 4, 2), keyed(0 until 4, 2).repartition(3)))
    assert(error.getMessage.contains("vertex 'co'"))
  }
}
