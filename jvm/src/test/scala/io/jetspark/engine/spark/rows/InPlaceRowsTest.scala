package io.jetspark.engine.spark.rows

import io.jetspark.engine.spark.SharedSparkSession
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{LongType, StringType}
import org.scalatest.funsuite.AnyFunSuite

import java.nio.file.Files

/** Rows read in place, from the RDD a DataFrame was made of or from a columnar scan's batches, are the rows
  * Spark makes of the same plan, in the same partitions and order; other plans are read as Spark reads them.
  */
class InPlaceRowsTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark

  /** Each partition's rows as Scala values: through InPlaceRows, and through Spark's own rows. */
  private def bothWays(df: DataFrame): (Seq[Seq[Seq[Any]]], Seq[Seq[Seq[Any]]]) = {
    val schema = df.schema
    def values(rdd: org.apache.spark.rdd.RDD[org.apache.spark.sql.catalyst.InternalRow]) =
      rdd.mapPartitions(rows => Iterator(rows.map(_.copy().toSeq(schema).map {
        case s: org.apache.spark.unsafe.types.UTF8String => s.toString
        case other => other
      }).toSeq)).collect().toSeq
    (values(InPlaceRows.of(df)), values(df.queryExecution.toRdd))
  }

  private def numbers = spark.range(0, 25000, 1, 3).selectExpr("cast(id % 7 as int) as a",
    "if(id % 5 = 0, null, id * 3) as b", "cast(id as double) * 0.5 as c")

  test("a DataFrame made of an RDD of rows is read from that RDD, not from Spark's copies of its rows") {
    val made = numbers.queryExecution.toRdd.map(_.copy())
    val df = org.apache.spark.sql.jetspark.SqlBridge.internalCreateDataFrame(spark, made, numbers.schema)
    assert(InPlaceRows.of(df) eq made)
    val (rdd, rows) = bothWays(df)
    assert(rdd == rows && rdd.flatten.size == 25000)
    assert(!(InPlaceRows.of(df.select(col("b"))) eq made))
  }

  test("a cached DataFrame made of an RDD is read from its cache: its RDD is not computed again") {
    val computed = spark.sparkContext.longAccumulator("rows computed")
    val made = numbers.queryExecution.toRdd.map { r => computed.add(1); r.copy() }
    val df = org.apache.spark.sql.jetspark.SqlBridge.internalCreateDataFrame(spark, made, numbers.schema).cache()
    try {
      val (cached, rows) = bothWays(df)
      assert(cached == rows && cached.flatten.size == 25000)
      assert(computed.sum == 25000) // the first read filled the cache, the second read it
      assert(!(InPlaceRows.of(df) eq made))
    } finally df.unpersist()
  }

  test("a cached DataFrame's columns, renamed and reordered, are read from its batches as Spark reads them") {
    val cached = numbers.cache()
    try {
      val projected = cached.select(col("c").as("x"), col("a"), col("b").as("y"))
      assert(InPlaceRows.batchesOf(projected.queryExecution.executedPlan).map(_._2.toSeq).contains(Seq(2, 0, 1)),
        projected.queryExecution.executedPlan)
      val (batches, rows) = bothWays(projected)
      assert(batches.size == 3 && batches.map(_.size).sum == 25000)
      assert(batches == rows)
      assert(batches.flatten.exists(_(2) == null))
    } finally cached.unpersist()
  }

  test("a cache of a shuffle's output, which adaptive execution wraps, is read from its batches as Spark reads it") {
    val cached = numbers.repartition(4).cache()
    try {
      val projected = cached.select(col("b"), col("a"))
      assert(projected.queryExecution.executedPlan.isInstanceOf[org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec])
      assert(InPlaceRows.batchesOf(projected.queryExecution.executedPlan).isDefined, projected.queryExecution.executedPlan)
      val (batches, rows) = bothWays(projected)
      assert(batches.size == 4 && batches.map(_.size).sum == 25000)
      assert(batches == rows)
    } finally cached.unpersist()
  }

  test("a Parquet file's columns, strings too, are read from its batches as Spark reads them") {
    val top = Files.createTempDirectory("scan-batches")
    try {
      val dir = top.resolve("t").toString
      numbers.selectExpr("a", "b", "c", "if(a = 3, null, concat('s', b)) as s").write.parquet(dir)
      val projected = spark.read.parquet(dir).select(col("s"), col("b").as("k"))
      assert(InPlaceRows.batchesOf(projected.queryExecution.executedPlan).isDefined)
      val (batches, rows) = bothWays(projected)
      assert(batches == rows)
      assert(batches.flatten.size == 25000 && batches.flatten.exists(_.head == null))
    } finally Files.walk(top).sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.delete(p))
  }

  test("a reader of batches is told so, and each batch passes its check: its columns, in the rows' order, and its number of rows") {
    val top = Files.createTempDirectory("scan-checks")
    try {
      val dir = top.resolve("t").toString
      // (batches of 4096 rows, whose column vectors the reader reuses: one batch's nulls must not show in the next)
      spark.range(0, 25000, 1, 3).selectExpr("concat('s', id % 7) as s", "if(id between 20000 and 20009, null, id) as b")
        .write.parquet(dir)
      val projected = spark.read.parquet(dir).select(col("s"), col("b").as("k"))
      val (rowsChecked, batchesWithNulls) = (spark.sparkContext.longAccumulator, spark.sparkContext.longAccumulator)
      val (rows, byBatch) = InPlaceRows.checkedByBatch(projected, (columns, n) => {
        assert(columns.map(_.dataType).toSeq == Seq(StringType, LongType))
        assert(columns(1).hasNull == (0 until n).exists(columns(1).isNullAt), "a column holds a null where it says so")
        rowsChecked.add(n)
        if (columns(1).hasNull) batchesWithNulls.add(1)
      })
      assert(byBatch && rows.count() == 25000)
      assert(rowsChecked.sum == 25000 && batchesWithNulls.sum >= 1 && batchesWithNulls.sum <= 2)
      val made = org.apache.spark.sql.jetspark.SqlBridge.internalCreateDataFrame(spark, numbers.queryExecution.toRdd, numbers.schema)
      assert(!InPlaceRows.checkedByBatch(made, (_, _) => fail("no batches"))._2)
    } finally Files.walk(top).sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.delete(p))
  }

  test("partitions of a cache with no rows are read as empty, and past its last row a partition has none") {
    val cached = spark.range(0, 3, 1, 5).selectExpr("id as a").cache()
    try {
      assert(InPlaceRows.batchesOf(cached.queryExecution.executedPlan).isDefined)
      val (batches, rows) = bothWays(cached)
      assert(batches == rows && batches.size == 5 && batches.count(_.isEmpty) == 2)
      val ends = InPlaceRows.of(cached).mapPartitions { rows =>
        while (rows.hasNext) rows.next()
        val past = try { rows.next(); "a row" } catch { case _: NoSuchElementException => "none" }
        Iterator((rows.hasNext, rows.hasNext, past))
      }.collect().toSeq
      assert(ends == Seq.fill(5)((false, false, "none")))
    } finally cached.unpersist()
  }

  test("a plan that computes or filters is read as Spark reads it") {
    val cached = numbers.cache()
    try {
      for (df <- Seq(cached.select((col("a") + 1).as("a1")), cached.where(col("a") > 2), spark.range(0, 100, 1, 3).toDF())) {
        assert(InPlaceRows.batchesOf(df.queryExecution.executedPlan).isEmpty, df.queryExecution.executedPlan)
        val (batches, rows) = bothWays(df)
        assert(batches == rows)
      }
    } finally cached.unpersist()
  }
}
