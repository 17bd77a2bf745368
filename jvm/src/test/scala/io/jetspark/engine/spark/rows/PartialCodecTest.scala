package io.jetspark.engine.spark.rows

import io.jetspark.core.aggregate._
import io.jetspark.item.{Kept, PickledItem}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, IntegerType, LongType}
import org.scalatest.funsuite.AnyFunSuite

/** Partials written and read back by the codec keep every field, through the serializers registered for
  * them (an empty pick, big sums, a kept row) as through Kryo's own (the other accumulators).
  */
class PartialCodecTest extends AnyFunSuite {
  private val codec = new PartialCodec("stage")
  private def roundTrip[T](value: T): T = codec.fromBytes(codec.toBytes(value)).asInstanceOf[T]

  test("picks, kept items, counts and means survive the trip, also inside one array of frames") {
    val row = UnsafeProjection.create(Array[DataType](IntegerType, LongType)).apply(InternalRow(7, 1L << 40)).copy()
    val value = java.lang.Long.valueOf(1L << 40)
    val kept = Kept(row, value, 5L << 40 | 3) // one object: the pick's item and the value it ranks by
    val frames = roundTrip(Array[Any](
      new PickAccumulator(),
      new PickAccumulator(kept, kept, isEmpty = false),
      new PickAccumulator("an item picked by another value", 2.5, isEmpty = false),
      new LongAccumulator(Long.MinValue),
      new AveragingAccumulator(3L, BigInt("123456789012345678901234567890")),
      new AveragingAccumulator(0L, 0.5)))
    val Array(empty: PickAccumulator, pick: PickAccumulator, plain: PickAccumulator, count: LongAccumulator,
      exact: AveragingAccumulator, double: AveragingAccumulator) = frames: @unchecked
    assert(empty.isEmpty && empty.item == null && empty.value == null)
    assert(!pick.isEmpty && (pick.value.asInstanceOf[AnyRef] eq pick.item.asInstanceOf[AnyRef]))
    val Kept(keptRow: UnsafeRow, keptValue, position) = pick.item: @unchecked
    assert(keptRow.getInt(0) == 7 && keptRow.getLong(1) == (1L << 40) && keptValue == (1L << 40) && position == (5L << 40 | 3))
    assert(!plain.isEmpty && plain.item == "an item picked by another value" && plain.value == 2.5)
    assert(count.value == Long.MinValue)
    assert(exact.count == 3L && exact.sum == BigInt("123456789012345678901234567890"))
    assert(double.count == 0L && double.sum == 0.5)
  }

  test("other accumulators and items go through Kryo's own serializers") {
    val ranking = new RankingAccumulator()
    ranking.best += RankedItem(new PickledItem(Array[Byte](1, 2)), "b", 4L)
    ranking.seen = 9L
    val back = roundTrip(ranking)
    assert(back.seen == 9L && back.best.map(r => (r.item, r.value, r.position)) ==
      Seq((new PickledItem(Array[Byte](1, 2)), "b", 4L)))
    val variance = roundTrip(new VarianceAccumulator(2L, 1.5, 0.25))
    assert((variance.count, variance.mean, variance.m2) == (2L, 1.5, 0.25))
  }
}
