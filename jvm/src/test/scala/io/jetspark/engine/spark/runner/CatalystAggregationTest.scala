package io.jetspark.engine.spark.runner

import io.jetspark.core.aggregate.{AggregateOperations, AnyOrdering}
import io.jetspark.engine.spark.SharedSparkSession
import io.jetspark.pipeline.PythonOperationReader
import io.jetspark.pipeline.definition.Extractor
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.{DataFrame, Row}
import org.scalatest.funsuite.AnyFunSuite

/** What Catalyst computes for a delegated aggregation equals what the core's operations compute over
  * the same values (the engine's semantics without delegation), and what it cannot reproduce is refused
  * with the reason.
  */
class CatalystAggregationTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark

  private def results(rows: DataFrame, op: String, key: Option[Extractor] = None): Map[Any, Any] = {
    val plan = CatalystAggregation.plan("stage", PythonOperationReader.read(op).operation, Map.empty, key, rows).fold(why => fail(why), identity)
    plan.run(rows, _ => lit(true)).collect().map(r => if (key.isDefined) r.get(0) -> r.get(1) else "all" -> r.get(0)).toMap
  }

  private def core[A, R](values: Seq[Any], op: io.jetspark.core.aggregate.AggregateOperation[Any, A, R]): R = {
    val acc = op.create()
    values.foreach(op.accumulate(acc, _))
    op.finishResult(acc)
  }

  test("integer sums and means are exact beyond 64 bits, as the core's") {
    val values = (0 until 50).map(i => Long.MaxValue - i) ++ Seq(Long.MinValue, -7L)
    val rows = spark.createDataFrame(spark.sparkContext.parallelize(values.map(v => Row(v)), 3),
      org.apache.spark.sql.types.StructType.fromDDL("v BIGINT NOT NULL"))
    val got = results(rows, """{"name": "all_of", "extractors": [], "parts": [
      {"name": "summing", "extractors": [{"kind": "field", "name": "v"}]},
      {"name": "averaging", "extractors": [{"kind": "field", "name": "v"}]},
      {"name": "counting", "extractors": []}]}""")("all").asInstanceOf[Row]
    val ops = AggregateOperations
    assert(BigInt(got.getDecimal(0).toBigIntegerExact) == core(values, ops.summing[Any](identity)))
    assert(got.getDouble(1) == core(values, ops.averaging[Any](identity)))
    assert(got.getLong(2) == values.size)
  }

  test("max_by keeps the item with the greatest value, NaN above every number, as the core orders") {
    val rows = spark.createDataFrame(Seq((1, 2.5), (1, Double.NaN), (1, -1.0), (2, 0.5), (2, 3.0))).toDF("k", "x")
    val got = results(rows, """{"name": "max_by", "extractors": [{"kind": "field", "name": "x"}]}""", Some(Extractor.FieldName("k")))
    val expected = rows.collect().groupBy(_.getInt(0)).map { case (k, rs) =>
      k -> core(rs.toSeq, AggregateOperations.maxBy[Any, Any](_.asInstanceOf[Row].getDouble(1))(AnyOrdering)).get
    }
    // As text: NaN equals NaN there.
    assert(got.map { case (k, r: Row) => k -> r.getDouble(1).toString } ==
      expected.map { case (k, r) => k -> r.asInstanceOf[Row].getDouble(1).toString })
  }

  test("global aggregations of no rows give the core's results of nothing") {
    val rows = spark.range(0).select(col("id").as("v"), (col("id") * 0.5).as("x"))
    val got = results(rows, """{"name": "all_of", "extractors": [], "parts": [
      {"name": "counting", "extractors": []},
      {"name": "averaging", "extractors": [{"kind": "field", "name": "x"}]},
      {"name": "min_by", "extractors": [{"kind": "field", "name": "v"}]}]}""")("all").asInstanceOf[Row]
    assert(got.getLong(0) == 0L && got.getDouble(1).isNaN && got.isNullAt(2))
  }

  test("what Spark cannot reproduce is not delegated, and the plan says why") {
    val rows = spark.range(3).select(col("id").as("v"), org.apache.spark.sql.functions.map(col("id"), col("id")).as("m"))
    def why(op: String, key: Option[Extractor] = None) =
      CatalystAggregation.plan("stage", PythonOperationReader.read(op).operation, Map.empty, key, rows).swap.getOrElse(fail(s"$op was delegated"))
    assert(why("""{"name": "variance", "extractors": [{"kind": "field", "name": "v"}]}""").contains("variance"))
    assert(why("""{"name": "counting", "extractors": []}""", Some(Extractor.FieldName("m"))).contains("map"))
    assert(why("""{"name": "summing", "extractors": [{"kind": "python", "ref": 0, "name": "f"}]}""").contains("python"))
    assert(why("""{"name": "summing", "extractors": [{"kind": "field", "name": "missing"}]}""").contains("no field 'missing'"))
  }
}
