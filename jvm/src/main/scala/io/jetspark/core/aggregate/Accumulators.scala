package io.jetspark.core.aggregate

import scala.collection.mutable.ArrayBuffer

/** The mutable accumulators of the built-in operations. They hold data only (no functions, no
  * orderings), so that snapshots and shuffles carry just the state; the operation brings the logic.
  */
final class LongAccumulator(var value: Long = 0L) extends Serializable

final class DoubleAccumulator(var value: Double = 0.0) extends Serializable

/** A sum with [[PythonNumbers]] semantics: `Long`, `BigInt` or `Double`. */
final class NumberAccumulator(var value: Any = 0L) extends Serializable

/** Count and [[PythonNumbers]] sum, for the average. */
final class AveragingAccumulator(var count: Long = 0L, var sum: Any = 0L) extends Serializable

/** Count, mean and sum of squared deviations from the mean (M2) of a sample, in the form that
  * combines without losing precision (Chan, Golub and LeVeque's parallel update) and has an exact
  * algebraic inverse for deduct.
  */
final class VarianceAccumulator(var count: Long = 0L, var mean: Double = 0.0, var m2: Double = 0.0) extends Serializable {

  /** Welford's update. */
  def add(x: Double): this.type = {
    count += 1
    val delta = x - mean
    mean += delta / count
    m2 += delta * (x - mean)
    this
  }

  def combine(that: VarianceAccumulator): this.type = {
    if (that.count == 0) return this
    if (count == 0) { count = that.count; mean = that.mean; m2 = that.m2; return this }
    val n = count + that.count
    val delta = that.mean - mean
    mean += delta * that.count / n
    m2 += that.m2 + delta * delta * count.toDouble * that.count / n
    count = n
    this
  }

  /** The inverse of `combine`: solves the combine equations for the left operand. */
  def deduct(that: VarianceAccumulator): this.type = {
    if (that.count == 0) return this
    val n = count - that.count
    if (n < 0) throw new IllegalArgumentException(s"deducting ${that.count} items from an accumulator of $count")
    if (n == 0) { count = 0; mean = 0.0; m2 = 0.0; return this }
    val rest = (mean * count - that.mean * that.count) / n
    val delta = that.mean - rest
    m2 = m2 - that.m2 - delta * delta * n.toDouble * that.count / count
    mean = rest
    count = n
    this
  }

  /** Population variance; NaN for no items. Rounding after deduct can leave M2 a hair below zero. */
  def populationVariance: Double = if (count == 0) Double.NaN else math.max(m2, 0.0) / count
}

/** Exact ([[PythonNumbers]]) sums for the least-squares slope: integers stay exact, so the slope is NaN
  * exactly when it is undefined, also after deduct.
  */
final class LinearTrendAccumulator(
    var count: Long = 0L,
    var sumX: Any = 0L,
    var sumY: Any = 0L,
    var sumXY: Any = 0L,
    var sumXX: Any = 0L,
) extends Serializable {
  import PythonNumbers._

  def add(x: Any, y: Any): this.type = {
    count += 1
    sumX = PythonNumbers.add(sumX, x)
    sumY = PythonNumbers.add(sumY, y)
    sumXY = PythonNumbers.add(sumXY, multiply(x, y))
    sumXX = PythonNumbers.add(sumXX, multiply(x, x))
    this
  }

  /** `sign` 1 combines `that` in, -1 takes it out. */
  def merge(that: LinearTrendAccumulator, sign: Int): this.type = {
    def signed(v: Any): Any = if (sign > 0) v else negate(v)
    count += sign * that.count
    sumX = PythonNumbers.add(sumX, signed(that.sumX))
    sumY = PythonNumbers.add(sumY, signed(that.sumY))
    sumXY = PythonNumbers.add(sumXY, signed(that.sumXY))
    sumXX = PythonNumbers.add(sumXX, signed(that.sumXX))
    this
  }

  /** (n·Σxy − Σx·Σy) / (n·Σx² − (Σx)²); NaN when the denominator is zero (fewer than two distinct x). */
  def slope: Double = {
    val numerator = subtract(multiply(count, sumXY), multiply(sumX, sumY))
    val denominator = subtract(multiply(count, sumXX), multiply(sumX, sumX))
    if (isZero(denominator)) Double.NaN else divideToDouble(numerator, denominator)
  }
}

/** The item chosen so far by min_by/max_by and its extracted value. */
final class PickAccumulator(var item: Any = null, var value: Any = null, var isEmpty: Boolean = true) extends Serializable

/** One candidate of top_n/bottom_n: the item, its extracted value, and its position in encounter order
  * (which breaks ties: the earlier item ranks first).
  */
final case class RankedItem(item: Any, value: Any, position: Long)

/** The best `n` items so far, best first, and how many items were seen (positions of a combined-in
  * accumulator are shifted by it, so that ties resolve as in one pass over the concatenated input).
  */
final class RankingAccumulator(val best: ArrayBuffer[RankedItem] = ArrayBuffer.empty, var seen: Long = 0L) extends Serializable
