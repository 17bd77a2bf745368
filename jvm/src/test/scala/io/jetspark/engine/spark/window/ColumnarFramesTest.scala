package io.jetspark.engine.spark.window

import io.jetspark.core.window.{KeyedWindowResult, SlidingWindowPolicy}
import io.jetspark.engine.spark.SharedSparkSession
import io.jetspark.engine.spark.rows.{InPlaceRows, RowSchemas}
import io.jetspark.item.{PickledKey, PythonValues}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.Extractor
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random
import io.jetspark.core.testing.TestSeed

/** The two stages of columnar frames give each key's windows as a brute-force reference computes them
  * from the rows: every non-empty window `[end - size, end)` once, per key in end order, its counts, and
  * for each pick its row of greatest (least) value (of equal values, the earlier frame's, and within a
  * frame the first in row order, where the partitions' frames meet in partition order). However a task
  * adds its events: as they come, all deferred with flushes every few events, or switching to deferring
  * part way through; with direct or hashed frame indexes; its picks' items kept as numbers (with a word
  * of null bits where a field may be null) or, with a string field, as rows (always added as they come).
  * Without a reader, each window is still one (empty) row. Where every part picks, a task sends exactly the
  * frames that win one of its own windows, and the windows are as the reference computes them.
  */
class ColumnarFramesTest extends AnyFunSuite {
  import ColumnarFramesTest._

  private lazy val spark = SharedSparkSession.spark

  private def spec(leaves: Seq[Leaf]): PythonAggregateSpec = {
    val parts = leaves.map {
      case Counting => """{"name": "counting", "extractors": []}"""
      case Pick(field, greatest) =>
        s"""{"name": "${if (greatest) "max_by" else "min_by"}", "extractors": [{"kind": "field", "name": "$field"}]}"""
    }
    val json = if (parts.size == 1) parts.head else s"""{"name": "all_of", "extractors": [], "parts": [${parts.mkString(", ")}]}"""
    PythonAggregateSpec(json, canCombineSpec = true, canDeductSpec = false, orderSensitive = false)
  }

  private val countAndMax = Seq(Counting, Pick("v", greatest = true))

  /** Each window of `rows` as "key|end|part|part...", a count as its number and a pick as its row's fields. */
  private def reference(rows: Seq[Row], schema: StructType, policy: SlidingWindowPolicy, leaves: Seq[Leaf]): Seq[String] =
    rows.groupBy(r => described(r.get(0))).toSeq.flatMap { case (key, own) =>
      val ends = own.flatMap(r => (0L until policy.size / policy.slide).map(i => (Math.floorDiv(timeOf(r), policy.slide) + 1 + i) * policy.slide))
      ends.distinct.map { end =>
        val in = own.filter(r => timeOf(r) >= end - policy.size && timeOf(r) < end)
        val parts = leaves.map {
          case Counting => in.size.toString
          case Pick(field, greatest) =>
            val at = schema.fieldIndex(field)
            val best = if (greatest) in.map(_.getInt(at)).max else in.map(_.getInt(at)).min
            // of the best, the one of the earliest frame, and of those the first (minBy keeps the first)
            in.filter(_.getInt(at) == best).minBy(r => Math.floorDiv(timeOf(r), policy.slide)).toSeq.map(described).mkString(",")
        }
        (key +: end.toString +: parts).mkString("|")
      }
    }.sorted

  /** The windows of `rows` in `partitions` as [[reference]] describes them, sorted: their frames meet by key
    * or (`inOrder`) all in one partition in partition order. Checked to come once each and per key in end
    * order, without a reader to be one row each, and to be counted as they are made.
    */
  private def run(rows: Seq[Row], schema: StructType, partitions: Int, policy: SlidingWindowPolicy,
      budget: () => FrameTable.Budget, leaves: Seq[Leaf], inOrder: Boolean = false): Seq[String] = {
    val (frames, sent) = firstStage(rows, schema, partitions, policy, leaves, budget)
    val resultRow = windowRow(schema.fields.map(_.dataType))
    val resultSchema = StructType(Seq(StructField("key", StringType), StructField("end", LongType), StructField("window", StringType)))
    val byKey = if (inOrder) sent.coalesce(1) else sent.repartition(2, col(RowSchemas.Key))
    val (made, madeUnread) = (spark.sparkContext.longAccumulator, spark.sparkContext.longAccumulator)
    val got = frames.combine(policy, keyed = true, byKey, Some(resultRow), resultSchema, Seq(made)).collect().toSeq
    for ((key, windows) <- got.groupBy(_.getString(0))) {
      val ends = windows.map(_.getLong(1)) // (groupBy keeps the order of each key's results)
      assert(ends == ends.distinct.sorted, s"key $key: windows once each, in end order")
    }
    val unread = frames.combine(policy, keyed = true, byKey, None, StructType(Nil), Seq(madeUnread)).count()
    assert(unread == got.size, "without a reader, one row per window")
    assert((made.value, madeUnread.value) == (got.size, got.size), "the windows made, counted")
    got.map(_.getString(2)).sorted
  }

  /** The columnar frames of `leaves` over `rows` in `partitions` (keyed by k, timed by t), and what their
    * first stage sends on.
    */
  private def firstStage(rows: Seq[Row], schema: StructType, partitions: Int, policy: SlidingWindowPolicy, leaves: Seq[Leaf],
      budget: () => FrameTable.Budget): (ColumnarFrames, DataFrame) = {
    val df = spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)
    val op = spec(leaves)
    val typed = TypedWindow.plan("window", Some(Extractor.FieldName("k")), Extractor.FieldName("t"), op, df)
      .fold(why => fail(why), identity)
    val frames = ColumnarFramesPlanner.plan(typed, op, budget).getOrElse(fail("no columnar frames"))
    (frames, frames.accumulate(policy, typed.project(df), Nil))
  }

  private val budgets: Seq[(String, () => FrameTable.Budget)] = Seq(
    "added as they come" -> (() => new FrameTable.Budget()),
    "all deferred, flushed every few events, hashed" ->
      (() => new FrameTable.Budget(left = 0, deferredLeft = 40, cacheBytes = 0, eventsPerKey = 0)),
    "deferred part way through" -> (() => new FrameTable.Budget(deferredLeft = 300, cacheBytes = 6000, eventsPerKey = 10)),
  )

  private val policies = Seq(SlidingWindowPolicy(6, 2), SlidingWindowPolicy(10, 1), SlidingWindowPolicy(9, 3), SlidingWindowPolicy(4, 4))

  private def field(name: String, t: DataType, nullable: Boolean) = StructField(name, t, nullable)

  /** Rows of (k, t, v, then `extra` fields): k now and then null, t (a long, or an int with `intTime`) near 0
    * or now and then far from it; v and an extra int field (w) with ties, or (without `ties`) distinct; a
    * nullable int (n) or string (s) field null half the time.
    */
  private def rows(random: Random, n: Int, extra: Seq[String], ties: Boolean, intTime: Boolean = false): (Seq[Row], StructType) = {
    val schema = StructType(Seq(field("k", IntegerType, nullable = true), field("t", if (intTime) IntegerType else LongType, nullable = false),
      field("v", IntegerType, nullable = false)) ++ extra.map {
      case "w" => field("w", IntegerType, nullable = false)
      case "n" => field("n", IntegerType, nullable = true)
      case "s" => field("s", StringType, nullable = true)
    })
    val data = Seq.tabulate(n) { i =>
      val k: Integer = if (random.nextInt(8) == 0) null else random.nextInt(5)
      val t = if (random.nextInt(6) == 0) (random.nextInt(60) - 20) * 1009L else random.nextInt(60) - 20L
      val v = if (ties) random.nextInt(4) else i * 7 - 50 // without ties: whichever partition comes first, one wins
      Row.fromSeq(Seq[Any](k, if (intTime) t.toInt else t, v) ++ extra.map {
        case "w" => if (ties) random.nextInt(4) else 900 - i * 3
        case "n" => if (random.nextBoolean()) null else random.nextInt(100)
        case "s" => if (random.nextBoolean()) null else s"s$i"
      })
    }
    (data, schema)
  }

  private def check(name: String, seed: Int, extra: Seq[String], leaves: Seq[Leaf], budget: () => FrameTable.Budget,
      partitions: Int, ties: Boolean, inOrder: Boolean, intTime: Boolean = false): Unit = {
    val random = new Random(TestSeed(seed))
    for (policy <- policies) {
      val (data, schema) = rows(random, 300, extra, ties, intTime)
      assert(run(data, schema, partitions, policy, budget, leaves, inOrder) == reference(data, schema, policy, leaves), (name, policy))
    }
  }

  for (((name, budget), b) <- budgets.zipWithIndex; (extra, items) <- Seq(Nil -> "numbers", Seq("s") -> "rows")) {
    test(s"one partition, ties by row order: $name, items as $items") {
      check(name, 10 * b + items.length, extra, countAndMax, budget, partitions = 1, ties = true, inOrder = false)
    }
    test(s"three partitions, no ties: $name, items as $items") {
      check(name, 20 * b + items.length, extra, countAndMax, budget, partitions = 3, ties = false, inOrder = false)
    }
    test(s"three partitions met in order, ties by row order: $name, items as $items") {
      check(name, 30 * b + items.length, extra, countAndMax, budget, partitions = 3, ties = true, inOrder = true)
    }
  }

  // Counts between picks, and items with a field that may be null: a deferred event keeps a pick's value,
  // its item's stored fields (but t, the time it is deferred by) and their null bits, and no count, each
  // where its frame's columns expect it.
  private val picksAroundCounts = Seq(Pick("v", greatest = true), Counting, Pick("w", greatest = false), Counting)
  for (((name, budget), b) <- budgets.zipWithIndex) {
    test(s"picks around counts, a field that may be null, ties: $name") {
      check(name, 40 + b, Seq("w", "n"), picksAroundCounts, budget, partitions = 3, ties = true, inOrder = true)
    }
  }

  // An int time column: the window reads it as a long, so the item's own field t is not the timestamp
  // column and is kept as any other field (long times are kept from the timestamp, and not deferred twice).
  for (((name, budget), b) <- budgets.zipWithIndex) {
    test(s"an int time column, kept in the item as its own field, picks around counts, ties: $name") {
      check(name, 90 + b, Seq("w", "n"), picksAroundCounts, budget, partitions = 3, ties = true, inOrder = true, intTime = true)
    }
  }

  // Picks alone: each task sends only the frames that win one of its own windows, which must still give
  // every window's winner, ties settled as before, and the same non-empty windows.
  private val picksAlone = Seq(Pick("v", greatest = true), Pick("w", greatest = false))
  for (((name, budget), b) <- budgets.zipWithIndex; (extra, items) <- Seq(Seq("w") -> "numbers", Seq("w", "s") -> "rows")) {
    test(s"picks alone, three partitions met in order, ties by row order: $name, items as $items") {
      check(name, 50 + 10 * b + items.length, extra, picksAlone, budget, partitions = 3, ties = true, inOrder = true)
    }
    test(s"one pick alone, three partitions, no ties: $name, items as $items") {
      check(name, 60 + 10 * b + items.length, extra, Seq(Pick("v", greatest = false)), budget, partitions = 3, ties = false,
        inOrder = false)
    }
  }

  test("where every part picks, a task sends the frames that win one of its windows for some pick, and no other") {
    for ((policy, i) <- policies.zipWithIndex; leaves <- Seq(picksAlone, Seq(Pick("v", greatest = true)), countAndMax)) {
      val (data, schema) = rows(new Random(TestSeed(80 + i)), 300, Seq("w"), ties = true)
      val partitions = spark.sparkContext.parallelize(data, 3).glom().collect().toSeq.map(_.toSeq)
      val expected = partitions.map(winningFrames(_, schema, policy, leaves))
      for ((name, budget) <- budgets) assert(framesSent(data, schema, policy, leaves, budget) == expected, (policy, leaves, name))
      if (leaves.contains(Counting) || policy.isTumbling) assert(expected == partitions.map(winningFrames(_, schema, policy, Seq(Counting))))
      else assert(expected.sum < partitions.map(winningFrames(_, schema, policy, Seq(Counting))).sum, "some frames win no window")
    }
  }

  /** Per partition of `data` in three, the frames its task sends to stage 2 (what each key's packed frames say they hold). */
  private def framesSent(data: Seq[Row], schema: StructType, policy: SlidingWindowPolicy, leaves: Seq[Leaf],
      budget: () => FrameTable.Budget): Seq[Long] = {
    firstStage(data, schema, 3, policy, leaves, budget)._2.rdd.glom().collect().toSeq.map(_.map(r => firstVarint(r.getAs[Array[Byte]](1))).sum)
  }

  /** Of one partition's rows, per key, the frames that win (hold the greatest, or least, value of; on ties, the
    * earliest such frame) one of the windows of those rows for some pick, or every frame if a part counts.
    */
  private def winningFrames(partition: Seq[Row], schema: StructType, policy: SlidingWindowPolicy, leaves: Seq[Leaf]): Long = {
    val perWindow = policy.size / policy.slide
    def frameOf(r: Row) = Math.floorDiv(timeOf(r), policy.slide) + 1
    partition.groupBy(r => described(r.get(0))).values.map { own =>
      val frames = own.map(frameOf).distinct
      if (leaves.contains(Counting)) frames.size
      else leaves.flatMap {
        case Counting => Nil
        case Pick(field, greatest) =>
          val at = schema.fieldIndex(field)
          frames.flatMap(f => f until f + perWindow).distinct.map { end =>
            val in = own.filter(r => frameOf(r) > end - perWindow && frameOf(r) <= end)
            val best = if (greatest) in.map(_.getInt(at)).max else in.map(_.getInt(at)).min
            in.filter(_.getInt(at) == best).map(frameOf).min
          }
      }.distinct.size
    }.sum.toLong
  }

  /** The first zigzag varint of `bytes`. */
  private def firstVarint(bytes: Array[Byte]): Long = {
    var (z, shift, i) = (0L, 0, 0)
    while ({ z |= (bytes(i) & 0x7FL) << shift; shift += 7; i += 1; (bytes(i - 1) & 0x80) != 0 }) ()
    (z >>> 1) ^ -(z & 1)
  }

  test("counting alone, all deferred: its events keep no numbers") {
    check("counting", 7, Nil, Seq(Counting), budgets(1)._2, partitions = 3, ties = false, inOrder = false)
  }

  test("a reader that takes each partition's first window has those counted, no more") {
    val (data, schema) = rows(new Random(TestSeed(3)), 300, Nil, ties = false)
    val policy = SlidingWindowPolicy(6, 2)
    val (frames, sent) = firstStage(data, schema, 3, policy, Seq(Counting), budgets.head._2)
    val byKey = sent.repartition(4, col(RowSchemas.Key))
    val made = spark.sparkContext.longAccumulator
    val firsts = InPlaceRows.of(frames.combine(policy, keyed = true, byKey, None, StructType(Nil), Seq(made)))
      .mapPartitions(_.take(1)).count()
    assert(firsts >= 1 && made.sum == firsts)
  }
}

private object ColumnarFramesTest {
  /** A leaf of the operation: `counting`, or `max_by`/`min_by` of an integer field. */
  sealed trait Leaf
  case object Counting extends Leaf
  final case class Pick(field: String, greatest: Boolean) extends Leaf

  def described(value: Any): String = Option(value).fold("null")(_.toString)

  /** A row's time, its field t (a long or an int). */
  def timeOf(r: Row): Long = r.get(1).asInstanceOf[Number].longValue

  /** A window's result as a row of its key, its end and "key|end|part|part..." as the reference describes
    * it, of items whose fields are of `types`. (Made here, not in the suite: a task takes it.)
    */
  def windowRow(types: Array[DataType]): Any => InternalRow = {
    def part(result: Any): String = result match {
      case count: java.lang.Long => count.toString
      case Some(item: InternalRow) => types.indices.map(i => described(if (item.isNullAt(i)) null else item.get(i, types(i)))).mkString(",")
      case other => throw new AssertionError(s"not a result of these operations: $other")
    }
    {
      case KeyedWindowResult(_, end, key: PickledKey, result, _) =>
        val parts = result match { case all: Array[Any] => all.toSeq.map(part); case one => Seq(part(one)) }
        val k = described(PythonValues.loads(key.bytes))
        InternalRow(UTF8String.fromString(k), end, UTF8String.fromString((k +: end.toString +: parts).mkString("|")))
      case other => throw new AssertionError(s"not a keyed window's result: $other")
    }
  }
}
