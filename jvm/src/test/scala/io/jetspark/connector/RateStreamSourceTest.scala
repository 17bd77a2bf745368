package io.jetspark.connector

import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite

/** The rate stream's contract (docs/streaming.md, "Sources"), on a clock the test moves: item g is due at
  * start + floor(g * 1000 / rate), in substream g mod partitions with sequence g div partitions.
  */
class RateStreamSourceTest extends AnyFunSuite {
  private val start = 1_000_000L

  /** (substream, sequence, timestamp) of every row a batch's partitions hold, partition by partition. */
  private def read(stream: RateMicroBatchStream, from: RateOffset, until: RateOffset): Seq[Seq[(Int, Long, Long)]] =
    stream.planInputPartitions(from, until).toSeq.map { partition =>
      val reader = stream.createReaderFactory().createReader(partition)
      Iterator.continually(reader).takeWhile(_.next()).map(r => (r.get.getInt(0), r.get.getLong(1), r.get.getLong(4))).toVector
    }

  test("each substream's sequences run on without a gap, at the items' due times, and a batch holds what is due") {
    var now = start
    val stream = new RateMicroBatchStream(rate = 300, partitions = 2, clock = () => now)
    val initial = RateOffset.of(stream.initialOffset())
    now += 50
    assert(RateOffset.of(stream.initialOffset()) == initial, "the start is one instant however often Spark asks")
    assert(initial == RateOffset(start, 0))
    now = start + 9 // items 0, 1, 2 are due at 0, 3 and 6 ms; item 3 at 10 ms
    val first = RateOffset.of(stream.latestOffset(initial, ReadLimit.allAvailable()))
    assert(first == RateOffset(start, 3))
    assert(read(stream, initial, first) == Seq(Seq((0, 0L, start), (0, 1L, start + 6)), Seq((1, 0L, start + 3))))
    now = start + 20 // items 3 to 6 are due at 10, 13, 16 and 20 ms
    val second = RateOffset.of(stream.latestOffset(first, ReadLimit.allAvailable()))
    assert(second == RateOffset(start, 7))
    assert(read(stream, first, second) == Seq(
      Seq((0, 2L, start + 13), (0, 3L, start + 20)),
      Seq((1, 1L, start + 10), (1, 2L, start + 16))))
    // Replayed from its logged offsets, after the clock moved on, a batch holds the same items.
    now = start + 5_000
    assert(read(stream, RateOffset.parse(first.json()), RateOffset.parse(second.json())) == read(stream, first, second))
  }

  test("read at every trigger, its offset moves on when no item came due, and the batch between is empty") {
    var now = start
    val stream = new RateMicroBatchStream(rate = 300, partitions = 2, clock = () => now, everyTrigger = true)
    val initial = RateOffset.of(stream.initialOffset())
    now = start + 9
    val first = RateOffset.of(stream.latestOffset(initial, ReadLimit.allAvailable()))
    assert(first == RateOffset(start, 3, triggers = 1))
    val again = RateOffset.of(stream.latestOffset(first, ReadLimit.allAvailable())) // nothing new is due
    assert(again == RateOffset(start, 3, triggers = 2))
    assert(read(stream, first, again) == Seq(Seq(), Seq()), "each substream's partition, empty")
    assert(RateOffset.parse(again.json()) == again)
    assert(RateOffset.parse(s"""{"start":$start,"released":3}""") == RateOffset(start, 3), "an offset logged before")
  }
}
