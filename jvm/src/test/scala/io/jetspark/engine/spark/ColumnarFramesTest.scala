package io.jetspark.engine.spark

import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy}
import io.jetspark.pipeline.{Extractor, PythonAggregateSpec}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/** The two stages of columnar frames give each key's windows as a brute-force reference computes them
  * from the rows: every non-empty window `[end - size, end)` once, per key in end order, its count, and
  * its row of greatest `v` (of equal values, the earlier frame's, and within a frame the first in row
  * order, where the partitions' frames meet in partition order). However a task adds its events: as they
  * come, all deferred with flushes every few events, or switching to deferring part way through; with
  * direct or hashed frame indexes; its picks' items kept as numbers or (with a string field, always
  * added as they come) as rows. Without a reader, each window is still one (empty) row.
  */
class ColumnarFramesTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark

  private val countAndMax = PythonAggregateSpec("op", """{"name": "all_of", "extractors": [], "parts": [
    {"name": "counting", "extractors": []}, {"name": "max_by", "extractors": [{"kind": "field", "name": "v"}]}]}""",
    canCombineSpec = true, canDeductSpec = false, orderSensitive = false)
  private val counting = PythonAggregateSpec("op", """{"name": "counting", "extractors": []}""",
    canCombineSpec = true, canDeductSpec = true, orderSensitive = false)

  /** (key, start, end, count, and the max row's k, t, v and s) */
  private type Result = (Option[Int], Long, Long, Long, Option[Int], Long, Int, Option[String])

  private def key(r: Row): Option[Int] = if (r.isNullAt(0)) None else Some(r.getInt(0))

  private def reference(rows: Seq[Row], policy: SlidingWindowPolicy): Seq[Result] =
    rows.groupBy(key).flatMap { case (k, own) =>
      val ends = own.flatMap(r => (0L until policy.size / policy.slide).map(i => (Math.floorDiv(r.getLong(1), policy.slide) + 1 + i) * policy.slide))
      ends.distinct.map { end =>
        val in = own.filter(r => r.getLong(1) >= end - policy.size && r.getLong(1) < end)
        // of the greatest, the one of the earliest frame, and of those the first (minBy keeps the first)
        val best = in.filter(_.getInt(2) == in.map(_.getInt(2)).max).minBy(r => Math.floorDiv(r.getLong(1), policy.slide))
        (k, end - policy.size, end, in.size.toLong, key(best), best.getLong(1), best.getInt(2),
          if (best.length > 3) Option(best.getString(3)) else None)
      }
    }.toSeq

  private val ordered: Ordering[Result] = Ordering.by((r: Result) => (r._1.fold(Int.MinValue)(identity), r._3))

  /** The windows of `rows` in `partitions`, whose frames meet by key or (`inOrder`) all in one partition in
    * partition order; checked to come once and per key in end order, then sorted.
    */
  private def run(rows: Seq[Row], schema: StructType, partitions: Int, policy: SlidingWindowPolicy,
      budget: () => FrameTable.Budget, inOrder: Boolean = false, op: PythonAggregateSpec = countAndMax): Seq[Result] = {
    val df = spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)
    val typed = TypedWindow.plan("window", Some(Extractor.FieldName("k")), Extractor.FieldName("t"), op, df)
      .fold(why => fail(why), identity)
    val frames = ColumnarFrames.plan(typed, op, budget).getOrElse(fail("no columnar frames"))
    val withString = schema.fieldNames.contains("s")
    val resultSchema = StructType(Seq("key_is_null" -> BooleanType, "key" -> IntegerType, "start" -> LongType, "end" -> LongType,
      "count" -> LongType, "k_is_null" -> BooleanType, "k" -> IntegerType, "t" -> LongType, "v" -> IntegerType, "s" -> StringType)
      .map { case (name, t) => StructField(name, t) })
    def keyed(key: PickledKey, start: Long, end: Long, count: Long, item: Seq[Any]) = {
      val k = PythonValues.loads(key.bytes)
      InternalRow.fromSeq(Seq[Any](k == null, if (k == null) 0 else k.asInstanceOf[Number].intValue, start, end, count) ++ item)
    }
    val resultRow: Any => InternalRow = {
      case KeyedWindowResult(start, end, key: PickledKey, Array(count: Long, Some(item: InternalRow)), _) =>
        keyed(key, start, end, count, Seq[Any](item.isNullAt(0), if (item.isNullAt(0)) 0 else item.getInt(0), item.getLong(1), item.getInt(2),
          if (withString && !item.isNullAt(3)) item.getUTF8String(3).clone() else null))
      case KeyedWindowResult(start, end, key: PickledKey, count: Long, _) => keyed(key, start, end, count, Seq[Any](true, 0, 0L, 0, null))
      case other => throw new AssertionError(s"not a result of these operations: $other")
    }
    val accumulated = frames.accumulate(policy, typed.project(df), Nil)
    val byKey = if (inOrder) accumulated.coalesce(1) else accumulated.repartition(2, col(SparkBatchEngine.Key))
    val got = frames.combine(policy, keyed = true, byKey, Some(resultRow), resultSchema).collect().map { r =>
      (if (r.getBoolean(0)) None else Some(r.getInt(1)), r.getLong(2), r.getLong(3), r.getLong(4),
        if (r.getBoolean(5)) None else Some(r.getInt(6)), r.getLong(7), r.getInt(8), Option(r.getString(9)))
    }.toSeq
    for ((key, windows) <- got.groupBy(_._1)) {
      val ends = windows.map(_._3) // (groupBy keeps the order of each key's results)
      assert(ends == ends.distinct.sorted, s"key $key: windows once each, in end order")
    }
    val unread = frames.combine(policy, keyed = true, byKey, None, StructType(Nil)).count()
    assert(unread == got.size, "without a reader, one row per window")
    got.sorted(ordered)
  }

  private val budgets: Seq[(String, () => FrameTable.Budget)] = Seq(
    "added as they come" -> (() => new FrameTable.Budget()),
    "all deferred, flushed every few events, hashed" ->
      (() => new FrameTable.Budget(left = 0, deferredLeft = 40, cacheBytes = 0, eventsPerKey = 0)),
    "deferred part way through" -> (() => new FrameTable.Budget(deferredLeft = 300, cacheBytes = 6000, eventsPerKey = 10)),
  )

  private def rows(random: Random, n: Int, withString: Boolean, ties: Boolean): Seq[Row] = Seq.tabulate(n) { i =>
    val k: Integer = if (random.nextInt(8) == 0) null else random.nextInt(5)
    val t = if (random.nextInt(6) == 0) (random.nextInt(60) - 20) * 1009L else random.nextInt(60) - 20L
    val v = if (ties) random.nextInt(4) else i * 7 - 50 // without ties: whichever partition comes first, one wins
    if (withString) Row(k, t, v, if (random.nextBoolean()) null else s"s$i") else Row(k, t, v)
  }

  test("counting alone, all deferred: its events keep no numbers") {
    val random = new Random(7)
    val schema = StructType(Seq(StructField("k", IntegerType), StructField("t", LongType, nullable = false),
      StructField("v", IntegerType, nullable = false)))
    for (policy <- policies) {
      val data = rows(random, 300, withString = false, ties = false)
      val want = reference(data, policy).map(r => (r._1, r._2, r._3, r._4, None, 0L, 0, None)).sorted(ordered)
      assert(run(data, schema, 3, policy, budgets(1)._2, op = counting) == want, policy)
    }
  }

  private val policies = Seq(SlidingWindowPolicy(6, 2), SlidingWindowPolicy(10, 1), SlidingWindowPolicy(9, 3), SlidingWindowPolicy(4, 4))

  for ((name, budget) <- budgets; withString <- Seq(false, true)) {
    val items = if (withString) "rows" else "numbers"
    val schema = StructType(Seq(StructField("k", IntegerType), StructField("t", LongType, nullable = false),
      StructField("v", IntegerType, nullable = false)) ++ (if (withString) Seq(StructField("s", StringType)) else Nil))

    test(s"one partition, ties by row order: $name, items as $items") {
      val random = new Random(name.hashCode + items.hashCode)
      for (policy <- policies) {
        val data = rows(random, 300, withString, ties = true)
        assert(run(data, schema, 1, policy, budget) == reference(data, policy).sorted(ordered), policy)
      }
    }

    test(s"three partitions, no ties: $name, items as $items") {
      val random = new Random(name.hashCode - items.hashCode)
      for (policy <- policies) {
        val data = rows(random, 300, withString, ties = false)
        assert(run(data, schema, 3, policy, budget) == reference(data, policy).sorted(ordered), policy)
      }
    }

    test(s"three partitions met in order, ties by row order: $name, items as $items") {
      val random = new Random(name.hashCode ^ items.hashCode)
      for (policy <- policies) {
        val data = rows(random, 300, withString, ties = true) // (parallelize slices the rows in order)
        assert(run(data, schema, 3, policy, budget, inOrder = true) == reference(data, policy).sorted(ordered), policy)
      }
    }
  }
}
