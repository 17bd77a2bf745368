package io.jetspark.connector

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.util.concurrent.{ConcurrentLinkedQueue, TimeUnit}

import scala.jdk.CollectionConverters._

import io.jetspark.engine.spark.SharedSparkSession
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException, Trigger}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

object ItemsStreamSourceTest {
  /** (substream, offset, item as text, done): one row as the test compares it. */
  type Seen = (Int, Long, Option[String], Boolean)

  /** One micro-batch as foreachBatch saw it: its id and each DataFrame partition's rows, by partition index. */
  final case class Batch(id: Long, partitions: Vector[Vector[Seen]])

  def seen(r: Row): Seen = (r.getInt(0), r.getLong(1), Option(r.getAs[Array[Byte]](2)).map(new String(_, UTF_8)), r.getBoolean(3))
}

class ItemsStreamSourceTest extends AnyFunSuite {
  import ItemsStreamSourceTest._

  private lazy val spark = SharedSparkSession.spark

  // Three substreams of different lengths, one of them empty.
  private val substreams: Seq[Seq[String]] = Seq((0 until 7).map(i => s"a$i"), Seq.empty, (0 until 4).map(i => s"c$i"))

  /** The contract, item by item: item p of substream s is in batch p / k; s is done from the batch of its last
    * item on (from batch 0 when empty); there are as many batches as the longest substream needs, at least one.
    */
  private def expected(k: Int): Vector[Batch] = {
    val batches = math.max(1, substreams.map(s => (s.size + k - 1) / k).max)
    Vector.tabulate(batches) { b =>
      Batch(b.toLong, substreams.zipWithIndex.map { case (items, s) =>
        val rows = items.zipWithIndex.collect { case (item, p) if p / k == b => (s, p.toLong, Some(item), false) }
        val doneFrom = if (items.isEmpty) 0 else (items.size - 1) / k
        (rows ++ (if (b >= doneFrom) Seq((s, items.size.toLong, None, true)) else Nil)).toVector
      }.toVector)
    }
  }

  private def register(k: Int): String = ItemsStreamSource.register(substreams.map(_.map(_.getBytes(UTF_8))), k)

  private def withCheckpoint(body: String => Unit): Unit = {
    val dir = Files.createTempDirectory("items-stream-test")
    try body(dir.toString)
    finally Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
  }

  /** Starts a query over the registered items whose foreachBatch records what every batch holds. */
  private def start(id: String, trigger: Trigger, checkpoint: String,
      everyTrigger: Boolean = false): (StreamingQuery, ConcurrentLinkedQueue[Batch]) = {
    val batches = new ConcurrentLinkedQueue[Batch]()
    val record: (DataFrame, Long) => Unit = (df, batchId) => {
      val partitions = df.rdd.mapPartitionsWithIndex((i, rows) => Iterator(i -> rows.map(seen).toVector)).collect()
      assert(partitions.map(_._1).toSeq == partitions.indices, "partitions come back in index order")
      batches.add(Batch(batchId, partitions.map(_._2).toVector))
    }
    val query = spark.readStream.format(ItemsStreamSource.Format).option("id", id)
      .option(MicroBatchTable.EveryTriggerOption, everyTrigger).load()
      .writeStream.trigger(trigger).option("checkpointLocation", checkpoint).foreachBatch(record).start()
    (query, batches)
  }

  private def awaitStoppedByItself(query: StreamingQuery): Unit = {
    assert(query.awaitTermination(60000), "an AvailableNow query over a finite stream stops by itself")
    assert(query.exception.isEmpty, query.exception)
  }

  // Never due again once the first batch ran: ProcessingTime fires at multiples of the interval since 1970.
  private val onlyTheFirstBatch = Trigger.ProcessingTime(100000L, TimeUnit.DAYS)

  test("the streaming DataFrame has the contract's schema") {
    val id = register(3)
    try {
      val df = spark.readStream.format(ItemsStreamSource.Format).option("id", id).load()
      assert(df.isStreaming)
      assert(df.schema == StructType(Seq(
        StructField("substream", IntegerType, nullable = false), StructField("offset", LongType, nullable = false),
        StructField("item", BinaryType, nullable = true), StructField("done", BooleanType, nullable = false))))
    } finally ItemsStreamSource.unregister(id)
  }

  for (k <- Seq(1, 3, 100)) test(s"AvailableNow runs every cut of $k items per substream, one per partition, and stops") {
    val id = register(k)
    try {
      withCheckpoint { checkpoint =>
        val (query, batches) = start(id, Trigger.AvailableNow(), checkpoint)
        awaitStoppedByItself(query)
        assert(batches.asScala.toVector == expected(k))
      }
    } finally ItemsStreamSource.unregister(id)
  }

  test("a ProcessingTime trigger releases one cut per micro-batch and nothing after the last") {
    val id = register(3)
    try {
      withCheckpoint { checkpoint =>
        val (query, batches) = start(id, Trigger.ProcessingTime(20, TimeUnit.MILLISECONDS), checkpoint)
        try {
          query.processAllAvailable()
          Thread.sleep(300) // many more triggers, which must find no new batch
        } finally query.stop()
        assert(query.exception.isEmpty, query.exception)
        assert(batches.asScala.toVector == expected(3))
      }
    } finally ItemsStreamSource.unregister(id)
  }

  test("read at every trigger, it releases batches of the end markers alone after the last cut") {
    val id = register(3)
    try {
      withCheckpoint { checkpoint =>
        val (query, batches) = start(id, Trigger.ProcessingTime(20, TimeUnit.MILLISECONDS), checkpoint, everyTrigger = true)
        val cuts = expected(3)
        try {
          val deadline = System.nanoTime() + 60_000_000_000L
          while (batches.size < cuts.size + 3 && query.isActive && System.nanoTime() < deadline) Thread.sleep(20)
        } finally query.stop()
        assert(query.exception.isEmpty, query.exception)
        val seen = batches.asScala.toVector
        assert(seen.take(cuts.size) == cuts)
        val markers = substreams.zipWithIndex.map { case (items, s) => Vector[Seen]((s, items.size.toLong, None, true)) }.toVector
        assert(seen.size >= cuts.size + 3)
        assert(seen.drop(cuts.size).map(_.partitions).forall(_ == markers))
      }
    } finally ItemsStreamSource.unregister(id)
  }

  test("a query restarted from its checkpoint continues after the last committed batch") { withCheckpoint { checkpoint =>
    // Each run registers the same items anew, as a restarted job would.
    def run(trigger: Trigger): Vector[Batch] = {
      val id = register(1)
      try {
        val (query, batches) = start(id, trigger, checkpoint)
        if (trigger == Trigger.AvailableNow()) awaitStoppedByItself(query)
        else try {
          val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
          while (query.lastProgress == null && System.nanoTime() < deadline) Thread.sleep(10)
          assert(query.lastProgress != null, "the first batch of a run is committed")
        } finally query.stop()
        batches.asScala.toVector
      } finally ItemsStreamSource.unregister(id)
    }
    val all = expected(1)
    assert(run(onlyTheFirstBatch) == all.take(1))
    assert(run(onlyTheFirstBatch) == all.slice(1, 2))
    assert(run(Trigger.AvailableNow()) == all.drop(2))
  }}

  test("a restart whose items make fewer batches than the checkpoint released fails and says so") {
    withCheckpoint { checkpoint =>
      def runToTheEnd(k: Int): Unit = {
        val id = register(k)
        try awaitStoppedByItself(start(id, Trigger.AvailableNow(), checkpoint)._1)
        finally ItemsStreamSource.unregister(id)
      }
      runToTheEnd(1)
      val error = intercept[StreamingQueryException](runToTheEnd(100))
      assert(error.getMessage.contains("the checkpoint has released 7 batches, but the registered items make only 1"))
    }
  }

  test("read at every trigger, a restart whose items make another number of batches fails and says so") {
    withCheckpoint { checkpoint =>
      def run(k: Int): Unit = {
        val id = register(k)
        try {
          val (query, batches) = start(id, Trigger.ProcessingTime(20, TimeUnit.MILLISECONDS), checkpoint, everyTrigger = true)
          try {
            val deadline = System.nanoTime() + 60_000_000_000L
            while (batches.size < 9 && query.isActive && System.nanoTime() < deadline) Thread.sleep(20)
          } finally query.stop()
          query.exception.foreach(e => throw e)
        } finally ItemsStreamSource.unregister(id)
      }
      run(1) // 7 batches of items, then markers
      val error = intercept[StreamingQueryException](run(100))
      assert(error.getMessage.contains("the checkpoint's items made 7 batches, but the registered items make only 1"))
    }
  }

  test("an unknown id fails with an error naming it") {
    val error = intercept[Exception] {
      spark.readStream.format(ItemsStreamSource.Format).option("id", "no-such-items").load()
    }
    val messages = Iterator.iterate[Throwable](error)(_.getCause).takeWhile(_ != null).map(_.getMessage)
    assert(messages.exists(m => m != null && m.contains("'no-such-items'")), error)
  }
}
