package io.jetspark.engine.spark.epoch

import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.processor.RollingAggregateProcessor
import io.jetspark.engine.spark.SharedSparkSession
import io.jetspark.plan.EdgeKind
import io.jetspark.pipeline.definition.Extractor
import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import java.nio.file.Files

class EpochStageTest extends AnyFunSuite {
  private lazy val spark = SharedSparkSession.spark
  private val schema = StructType(Seq(StructField("key", BinaryType), StructField("v", LongType), StructField("ctl", BinaryType)))

  /** A running sum of `v` per partition: what the stage emits shows whether the epoch before's state came back. */
  private def summing() = new EpochStage("sum", () => RollingAggregateProcessor.global(
      AggregateOperations.summingLong((v: Long) => v).asInstanceOf[AggregateOperation[Nothing, _, Any]]),
    _.map(_.getLong(1)), _.map(total => InternalRow(null, total)), 3)

  private def stateSizes() = { val sizes = new LatestPerPartition; spark.sparkContext.register(sizes); sizes }
  private def epoch(rows: Seq[InternalRow], partitions: Int) = spark.sparkContext.parallelize(rows, partitions)
  private def data(v: Long): InternalRow = InternalRow(Array[Byte](1), v, null)
  private def control(sender: Int, epoch: Long, wm: Long = Long.MinValue, done: Boolean = false): InternalRow =
    InternalRow(null, null, EpochControl(sender, epoch, wm, done).encode)

  test("a control row survives its encoding") {
    for (done <- Seq(false, true); idle <- Seq(false, true); part <- Seq(false, true)) {
      val c = EpochControl(3, 42L, -7L, done, idle, part)
      assert(EpochControl.decode(c.encode) == c)
    }
  }

  test("the parts of one substream coalesce to the greatest of their watermarks, as one input among the others") {
    def part(sender: Int, wm: Long, done: Boolean = false, idle: Boolean = false) = EpochControl(sender, 0, wm, done, idle, part = true)
    import EpochControl.{Coalesced, coalesce}
    assert(coalesce(Seq(part(0, 10), part(1, 50), part(2, Long.MinValue)), Long.MinValue) == Coalesced(50, idle = false))
    // beside a whole substream at 30, the parts' 50 is one input: the least is 30
    assert(coalesce(Seq(part(0, 10), EpochControl(1, 0, 30, done = false), part(2, 50)), Long.MinValue) == Coalesced(30, idle = false))
    // idle, or done, once every part is
    assert(coalesce(Seq(part(0, 10, idle = true), part(1, 50)), Long.MinValue) == Coalesced(50, idle = false))
    assert(coalesce(Seq(part(0, 10, idle = true), part(1, 50, idle = true)), Long.MinValue) == Coalesced(50, idle = true))
    assert(coalesce(Seq(part(0, 10, done = true), part(1, 50), EpochControl(2, 0, 60, done = false)), Long.MinValue) ==
      Coalesced(50, idle = false))
    assert(coalesce(Seq(part(0, 10, done = true), part(1, 50, done = true), EpochControl(2, 0, 60, done = false)), Long.MinValue) ==
      Coalesced(60, idle = false))
  }

  test("senders' control rows coalesce without the idle ones; all of them idle make the receiver idle") {
    def ctl(sender: Int, wm: Long, done: Boolean = false, idle: Boolean = false) = EpochControl(sender, 0, wm, done, idle)
    import EpochControl.{Coalesced, coalesce}
    assert(coalesce(Seq(ctl(0, 10), ctl(1, 50)), Long.MinValue) == Coalesced(10, idle = false))
    assert(coalesce(Seq(ctl(0, 10, idle = true), ctl(1, 50)), Long.MinValue) == Coalesced(50, idle = false))
    assert(coalesce(Seq(ctl(0, 10, idle = true), ctl(1, 50, idle = true)), Long.MinValue) == Coalesced(50, idle = true))
    assert(coalesce(Seq(ctl(0, 10, idle = true), ctl(1, 50, done = true)), Long.MinValue) == Coalesced(10, idle = true))
    assert(coalesce(Seq(ctl(0, 10, done = true), ctl(1, 50, done = true)), Long.MinValue) == Coalesced(Long.MinValue, idle = false))
    // never below the floor: a sender active again at its own, older watermark holds it where it was
    assert(coalesce(Seq(ctl(0, 10), ctl(1, 50)), 40) == Coalesced(40, idle = false))
  }

  test("the epochs' time moves at least 1 ms from one epoch to the next") {
    var wall = 1000L
    val clock = new EpochClock(() => wall)
    assert(clock.nextEpoch() == 1000)
    assert(clock.nextEpoch() == 1001) // the wall clock did not move
    wall = 900 // nor back
    assert(clock.nextEpoch() == 1002)
    wall = 5000
    assert(clock.nextEpoch() == 5000)
  }

  test("state carries from one epoch to the next, and a replayed epoch gives the same output") {
    val run = EpochRun(0, Files.createTempDirectory("epochs").toString, java.util.UUID.randomUUID(), 0L)
    val late = Some(spark.sparkContext.longAccumulator)
    val stateSize = stateSizes()
    def outputs(id: Long, values: Seq[Long]) =
      summing().run(spark, epoch(values.map(data) :+ control(0, id), 1), 2, 1, run.copy(id = id), 0, stateSize, late).collect()
        .filter(_.isNullAt(2)).map(_.getLong(1)).toSeq
    assert(outputs(0, Seq(1, 2)) == Seq(1, 3))
    assert(outputs(1, Seq(10)) == Seq(13))
    assert(outputs(1, Seq(10)) == Seq(13)) // epoch 1 again: from the state epoch 0 committed
    assert(outputs(2, Seq(100)) == Seq(113))
    val Seq((0, (lastEpoch, bytes))) = stateSize.value.toSeq: @unchecked
    assert(lastEpoch == 2 && bytes > 0, "the size of the state the partition committed last")
  }

  test("a missing barrier fails the epoch, naming the vertex") {
    val run = EpochRun(0, Files.createTempDirectory("epochs").toString, java.util.UUID.randomUUID(), 0L)
    val rows = epoch(Seq(data(1), control(0, 0)), 1)
    val failure = intercept[SparkException](summing().run(spark, rows, 2, 2, run, 0, stateSizes(), None).collect())
    assert(failure.getMessage.contains("vertex 'sum'") && failure.getMessage.contains("from each of 2 upstream tasks"))
  }

  test("a partitioned edge sends data by key and every control row to every receiver") {
    val rows = epoch(Seq(InternalRow(Array[Byte](5), 1L, null), InternalRow(Array[Byte](9), 2L, null), control(0, 0),
      InternalRow(Array[Byte](5), 3L, null), control(1, 0)), 2)
    val (received, senders) = EpochEdges.realize(rows, schema, 2, EdgeKind.Partitioned(Extractor.WholeItem), 3, Some(0))
    assert(senders == 2)
    val byPartition = received.mapPartitionsWithIndex((p, it) => it.map(r => (p, if (r.isNullAt(2)) Some(r.getLong(1)) else None))).collect()
    (0 until 3).foreach(p => assert(byPartition.count { case (q, v) => q == p && v.isEmpty } == 2))
    val keyOf = Map(1L -> 5, 2L -> 9, 3L -> 5)
    byPartition.collect { case (p, Some(v)) => assert(p == EpochEdges.partitionOf(Array(keyOf(v).toByte), 3)) }
    assert(byPartition.flatMap(_._2).sorted.toSeq == Seq(1L, 2L, 3L))
  }
}
