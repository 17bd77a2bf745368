package io.jetspark.core.aggregate

import io.jetspark.core.aggregate.{AggregateOperations => ops}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckDrivenPropertyChecks

/** The laws of [[AggregateOperation]] for every built-in, on random input, and each operation against a
  * brute-force reference written here. Items are `(ordinal, item)` pairs so that co-aggregation is
  * checked by the same laws.
  */
class AggregateLawsTest extends AnyFunSuite with ScalaCheckDrivenPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration = PropertyCheckConfiguration(minSuccessful = 150)

  /** Registers the law tests of `op` over items from `gen`, compared with `reference` of all items. */
  private def laws[T, A, R](name: String, op: AggregateOperation[T, A, R], gen: Gen[(Int, T)], tolerance: Double = 1e-9)(
      reference: Seq[(Int, T)] => Any): Unit = {
    val items = Gen.choose(0, 12).flatMap(Gen.listOfN(_, gen))
    def acc(xs: Seq[(Int, T)]): A = xs.foldLeft(op.create()) { case (a, (ordinal, item)) => op.accumulate(a, ordinal, item) }
    def same(e: Any, a: Any): Boolean = Approx.same(e, a, tolerance)
    def show(r: Any): String = s"$r"

    test(s"$name equals the brute-force reference") {
      forAll(items) { xs =>
        val actual = op.exportResult(acc(xs))
        assert(same(reference(xs), actual), s"reference ${show(reference(xs))}, actual ${show(actual)}")
        assert(same(reference(xs), op.finishResult(acc(xs))), "finish differs from the reference")
      }
    }

    test(s"$name: export does not disturb the accumulator") {
      forAll(items, items) { (xs, ys) =>
        val a = acc(xs)
        op.exportResult(a)
        val continued = ys.foldLeft(a) { case (a, (ordinal, item)) => op.accumulate(a, ordinal, item) }
        assert(same(reference(xs ++ ys), op.exportResult(continued)))
      }
    }

    op.combineFn.foreach { combine =>
      test(s"$name: combine is associative and has create() as identity") {
        forAll(items, items, items) { (xs, ys, zs) =>
          val leftFirst = op.exportResult(combine(combine(acc(xs), acc(ys)), acc(zs)))
          val rightFirst = op.exportResult(combine(acc(xs), combine(acc(ys), acc(zs))))
          assert(same(leftFirst, rightFirst), s"(x+y)+z = $leftFirst, x+(y+z) = $rightFirst")
          assert(same(op.exportResult(acc(xs)), op.exportResult(combine(op.create(), acc(xs)))), "create() + x != x")
          assert(same(op.exportResult(acc(xs)), op.exportResult(combine(acc(xs), op.create()))), "x + create() != x")
        }
      }

      test(s"$name: accumulating all equals combining the accumulators of random splits, in order") {
        val splits = for {
          xs <- items
          cuts <- Gen.listOf(Gen.choose(0, xs.size))
        } yield (xs, cuts.sorted)
        forAll(splits) { case (xs, cuts) =>
          val bounds = 0 +: cuts :+ xs.size
          val parts = bounds.zip(bounds.tail).map { case (from, until) => xs.slice(from, until) }
          val combined = parts.map(acc).reduceLeft(combine)
          assert(same(op.exportResult(acc(xs)), op.exportResult(combined)), s"parts $parts")
        }
      }

      test(s"$name: combine leaves its right operand unchanged") {
        forAll(items, items) { (xs, ys) =>
          val right = acc(ys)
          combine(acc(xs), right)
          assert(same(reference(ys), op.exportResult(right)))
        }
      }
    }

    op.deductFn.foreach { deduct =>
      val combine = op.combineFn.getOrElse(fail(s"$name deducts but cannot combine"))
      test(s"$name: deducting an accumulator of x undoes accumulating or combining x") {
        forAll(items, items) { (as, xs) =>
          val fresh = op.exportResult(acc(as))
          val accumulated = deduct(acc(as ++ xs), acc(xs))
          assert(same(fresh, op.exportResult(accumulated)), s"accumulate x, deduct x: ${op.exportResult(accumulated)}, expected $fresh")
          val combined = deduct(combine(acc(as), acc(xs)), acc(xs))
          assert(same(fresh, op.exportResult(combined)), s"combine x, deduct x: ${op.exportResult(combined)}, expected $fresh")
        }
      }
    }
  }

  private def ordinal0[T](gen: Gen[T]): Gen[(Int, T)] = gen.map(0 -> _)
  private def values[T](xs: Seq[(Int, T)]): Seq[T] = xs.map(_._2)

  // Exact in Double arithmetic (halves of small integers), so sums do not depend on the order of adding.
  private val halves: Gen[Double] = Gen.choose(-200, 200).map(_ / 2.0)
  private val smallLongs: Gen[Long] = Gen.choose(-1000L, 1000L)
  // Integers of every JVM type, some near Long's bounds so that sums overflow into BigInt.
  private val anyIntegers: Gen[Any] = Gen.oneOf(
    smallLongs,
    Gen.choose(-50, 50),
    Gen.oneOf(Long.MaxValue, Long.MinValue, Long.MaxValue - 3, Long.MinValue + 7),
    Gen.choose(-5, 5).map(i => BigInt(i) * BigInt(Long.MaxValue) * 3),
  )
  private val smallMixedNumbers: Gen[Any] = Gen.oneOf(smallLongs, Gen.choose(-30, 30), halves, Gen.choose(-10, 10).map(_.toFloat))

  /** Python's `sum`: exact integers, unless some value is a float. */
  private def pythonSum(xs: Seq[Any]): Any = {
    val floating = xs.exists(x => x.isInstanceOf[Double] || x.isInstanceOf[Float])
    if (floating) xs.map(x => BigDecimal(PythonNumbers.toDouble(x))).sum.toDouble
    else xs.map(bigOf).sum
  }
  private def bigOf(x: Any): BigInt = x match {
    case b: BigInt => b
    case l: Long => BigInt(l)
    case i: Int => BigInt(i)
    case other => fail(s"not an integer: $other")
  }
  private def exactMean(xs: Seq[Any]): Double =
    if (xs.isEmpty) Double.NaN
    else (xs.map {
      case b: BigInt => BigDecimal(b)
      case l: Long => BigDecimal(l)
      case i: Int => BigDecimal(i)
      case x => BigDecimal(PythonNumbers.toDouble(x))
    }.sum / xs.size).toDouble

  laws("counting", ops.counting(), ordinal0(Gen.alphaChar))(xs => xs.size.toLong)
  laws("summingLong", ops.summingLong[Long](identity), ordinal0(smallLongs))(xs => values(xs).sum)
  laws("summingDouble", ops.summingDouble[Double](identity), ordinal0(halves))(xs => values(xs).sum)
  laws("summing of integers of any size", ops.summing[Any](identity), ordinal0(anyIntegers))(xs => pythonSum(values(xs)))
  laws("summing of mixed integers and floats", ops.summing[Any](identity), ordinal0(smallMixedNumbers))(xs => pythonSum(values(xs)))
  laws("averaging of integers of any size", ops.averaging[Any](identity), ordinal0(anyIntegers))(xs => exactMean(values(xs)))
  laws("averaging of mixed numbers", ops.averaging[Any](identity), ordinal0(smallMixedNumbers))(xs => exactMean(values(xs)))

  laws("variance", ops.variance[Double](identity), ordinal0(Gen.choose(-1000.0, 1000.0)), tolerance = 1e-7) { xs =>
    val vs = values(xs)
    if (vs.isEmpty) Double.NaN
    else { val mean = vs.sum / vs.size; vs.map(v => (v - mean) * (v - mean)).sum / vs.size }
  }

  /** Slope by the centred two-pass formula; undefined unless there are two distinct x. */
  private def referenceSlope(points: Seq[(Double, Double)]): Double =
    if (points.map(_._1).distinct.size < 2) Double.NaN
    else {
      val mx = points.map(_._1).sum / points.size
      val my = points.map(_._2).sum / points.size
      points.map { case (x, y) => (x - mx) * (y - my) }.sum / points.map { case (x, _) => (x - mx) * (x - mx) }.sum
    }
  private val integerPoints: Gen[(Long, Long)] = Gen.zip(Gen.choose(-20L, 20L), Gen.choose(-1000L, 1000L))
  laws("linearTrend of integer points", ops.linearTrend[(Long, Long)](_._1, _._2), ordinal0(integerPoints)) { xs =>
    referenceSlope(values(xs).map { case (x, y) => (x.toDouble, y.toDouble) })
  }
  // Few distinct x, so that "undefined" (NaN) comes up often, also after deduct.
  laws("linearTrend with few distinct x", ops.linearTrend[(Long, Double)](_._1, _._2),
      ordinal0(Gen.zip(Gen.choose(0L, 1L), halves))) { xs =>
    referenceSlope(values(xs).map { case (x, y) => (x.toDouble, y) })
  }

  // (value, tag): values repeat often, tags tell equal values apart so that tie-breaking is checked.
  private val tagged: Gen[(Int, Int)] = Gen.zip(Gen.choose(0, 5), Gen.choose(0, 1000000))
  laws("minBy", ops.minBy[(Int, Int), Int](_._1), ordinal0(tagged)) { xs =>
    val vs = values(xs); vs.find(x => vs.forall(y => x._1 <= y._1))
  }
  laws("maxBy", ops.maxBy[(Int, Int), Int](_._1), ordinal0(tagged)) { xs =>
    val vs = values(xs); vs.find(x => vs.forall(y => x._1 >= y._1))
  }
  for (n <- Seq(1, 3)) {
    laws(s"topN($n)", ops.topN[(Int, Int), Int](n, _._1), ordinal0(tagged))(xs => values(xs).sortBy(-_._1).take(n)) // sortBy is stable
    laws(s"bottomN($n)", ops.bottomN[(Int, Int), Int](n, _._1), ordinal0(tagged))(xs => values(xs).sortBy(_._1).take(n))
  }
  laws("topN over mixed numbers with AnyOrdering", ops.topN[Any](3)(AnyOrdering), ordinal0(smallMixedNumbers)) { xs =>
    values(xs).sortBy(x => -PythonNumbers.toDouble(x)).take(3)
  }
  laws("toList", ops.toList[Int](), ordinal0(Gen.choose(0, 9)))(xs => values(xs).toList)
  laws("toSet", ops.toSet[Int](), ordinal0(Gen.choose(0, 9)))(xs => values(xs).toSet)

  laws("allOf(counting, summing, averaging), which deducts", ops.allOf[Any](ops.counting(), ops.summing[Any](identity), ops.averaging[Any](identity)),
      ordinal0(smallMixedNumbers)) { xs =>
    Seq(xs.size.toLong, pythonSum(values(xs)), exactMean(values(xs)))
  }
  laws("allOf(maxBy, toList), which does not deduct", ops.allOf[Int](ops.maxBy[Int, Int](identity), ops.toList[Int]()),
      ordinal0(Gen.choose(0, 9))) { xs =>
    Seq(values(xs).maxOption, values(xs).toList)
  }

  laws("aggregateOperation2(summing, toSet): ordinal 0 to the first, ordinal 1 to the second",
      ops.aggregateOperation2(ops.summingLong[Any](_.asInstanceOf[Int].toLong), ops.toSet[Any]()),
      Gen.zip(Gen.choose(0, 1), Gen.choose(0, 9).map(x => x: Any))) { xs =>
    (xs.collect { case (0, v: Int) => v.toLong }.sum, xs.collect { case (1, v) => v }.toSet)
  }
  laws("aggregateOperation2(counting, averaging), which deducts",
      ops.aggregateOperation2(ops.counting(), ops.averaging[Any](identity)),
      Gen.zip(Gen.choose(0, 1), halves.map(x => x: Any))) { xs =>
    (xs.count(_._1 == 0).toLong, exactMean(xs.collect { case (1, v) => v }))
  }

  laws("a user-defined operation (sum of squares, with deduct and a finish)",
      ops.of[Int, Array[Long], String](
        create = () => Array(0L),
        accumulate = (a, x) => { a(0) += x.toLong * x; a },
        combine = Some((l, r) => { l(0) += r(0); l }),
        deduct = Some((l, r) => { l(0) -= r(0); l }),
        exportFn = a => s"squares=${a(0)}",
      ),
      ordinal0(Gen.choose(-9, 9)))(xs => s"squares=${values(xs).map(x => x.toLong * x).sum}")
}
