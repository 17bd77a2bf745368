package io.jetspark.core.aggregate

import io.jetspark.core.aggregate.{AggregateOperations => ops}
import io.jetspark.core.snapshot.{SnapshotEntry, SnapshotFormat}
import org.scalatest.funsuite.AnyFunSuite

class AggregateOperationsTest extends AnyFunSuite {

  private def accumulateAll[T, A, R](op: AggregateOperation[T, A, R], items: Seq[T]): A =
    items.foldLeft(op.create())(op.accumulate(_, _))
  private def resultOf[T, A, R](op: AggregateOperation[T, A, R], items: Seq[T]): R = op.exportResult(accumulateAll(op, items))
  /** The result of accumulating each part separately and combining the parts in order. */
  private def combinedResult[T, A, R](op: AggregateOperation[T, A, R], parts: Seq[T]*): R =
    op.exportResult(parts.map(accumulateAll(op, _)).reduceLeft(op.combineFn.get))

  // ---- spec case 15 ----

  test("spec 15: top_n(2) over {7,1,5,3} and {8,6,2,4} combined is [8, 7]") {
    assert(combinedResult(ops.topN[Int](2), Seq(7, 1, 5, 3), Seq(8, 6, 2, 4)) == List(8, 7))
  }

  test("spec 15: bottom_n(2) over {7,1,5,3} and {8,6,2,4} combined is [1, 2]") {
    assert(combinedResult(ops.bottomN[Int](2), Seq(7, 1, 5, 3), Seq(8, 6, 2, 4)) == List(1, 2))
  }

  test("spec 15: linear_trend over (1,3), (2,5) is 2.0") {
    assert(resultOf(ops.linearTrend[(Int, Int)](_._1, _._2), Seq((1, 3), (2, 5))) == 2.0)
  }

  test("spec 15: averaging of nothing is NaN") {
    assert(resultOf(ops.averaging[Int](identity), Seq.empty).isNaN)
  }

  test("spec 15: all_of(counting, summing) over 10, 11 is (2, 21)") {
    assert(resultOf(ops.allOf[Any](ops.counting(), ops.summing[Any](identity)), Seq(10, 11)) == Seq(2L, 21L))
  }

  // ---- which operations deduct (Jet's set) ----

  test("mapping accumulates what its function gives, and combines and deducts as the operation it maps") {
    val lengths = ops.mapping((word: String) => word.length.toLong)(ops.summingLong[Long](identity))
    assert(resultOf(lengths, Seq("to", "be", "or", "not")) == 9L)
    assert(combinedResult(lengths, Seq("to", "be"), Seq("or", "not")) == 9L)
    val deducted = lengths.deductFn.get(accumulateAll(lengths, Seq("to", "be", "not")), accumulateAll(lengths, Seq("not")))
    assert(lengths.exportResult(deducted) == 4L)
    // A picking operation keeps what the function gave, not the item it was given.
    assert(resultOf(ops.mapping((word: String) => word.length)(ops.maxBy[Int, Int](identity)), Seq("a", "abc", "ab")) == Some(3))
  }

  test("counting, the summings, averaging, variance and linearTrend deduct; the rest only combine") {
    val deducting = Seq(ops.counting(), ops.summingLong[Long](identity), ops.summingDouble[Double](identity), ops.summing[Any](identity),
      ops.averaging[Any](identity), ops.variance[Any](identity), ops.linearTrend[(Int, Int)](_._1, _._2))
    val combiningOnly = Seq(ops.minBy[Int, Int](identity), ops.maxBy[Int, Int](identity), ops.topN[Int](2), ops.bottomN[Int](2),
      ops.toList[Int](), ops.toSet[Int]())
    deducting.foreach(op => assert(op.canCombine && op.canDeduct, s"$op"))
    combiningOnly.foreach(op => assert(op.canCombine && !op.canDeduct, s"$op"))
  }

  test("allOf and aggregateOperation2 combine and deduct iff every part does") {
    val userNoCombine = ops.of[Any, Array[Int], Int](() => Array(0), (a, _) => { a(0) += 1; a }, exportFn = _(0))
    assert(ops.allOf[Any](ops.counting(), ops.summing[Any](identity)).canDeduct)
    assert(!ops.allOf[Int](ops.counting(), ops.toList[Int]()).canDeduct)
    assert(ops.allOf[Int](ops.counting(), ops.toList[Int]()).canCombine)
    assert(!ops.allOf[Any](ops.counting(), userNoCombine).canCombine)
    assert(ops.aggregateOperation2(ops.counting(), ops.counting()).canDeduct)
    assert(!ops.aggregateOperation2(ops.counting(), ops.toSet[Any]()).canDeduct)
    assert(!ops.aggregateOperation2(userNoCombine, ops.counting()).canCombine)
  }

  // ---- Python number semantics ----

  test("summing keeps integer sums exact: a Long while it fits, a BigInt beyond, a Long again after deduct") {
    val op = ops.summing[Any](identity)
    val acc = accumulateAll(op, Seq(Long.MaxValue, 1))
    assert(op.exportResult(acc) == BigInt(Long.MaxValue) + 1)
    val back = op.deductFn.get(acc, accumulateAll(op, Seq(2)))
    assert(op.exportResult(back) == Long.MaxValue - 1)
    assert(op.exportResult(back).isInstanceOf[Long])
  }

  test("summing becomes a Double once a float is added, like Python's sum") {
    val result = resultOf(ops.summing[Any](identity), Seq[Any](1, 2L, 0.5f, BigInt(3)))
    assert(result == 6.5)
    assert(result.isInstanceOf[Double])
    assert(resultOf(ops.summing[Any](identity), Seq[Any](true, true, 3)) == 5L) // bool is an int in Python
  }

  test("summing of nothing is integer 0") {
    assert(resultOf(ops.summing[Any](identity), Seq.empty) == 0L)
  }

  test("summing a value that is not a number fails naming the value") {
    val e = intercept[IllegalArgumentException](resultOf(ops.summing[Any](identity), Seq[Any](1, "two")))
    assert(e.getMessage.contains("two") && e.getMessage.contains("java.lang.String"))
  }

  test("summingLong throws on overflow instead of wrapping") {
    intercept[ArithmeticException](resultOf(ops.summingLong[Long](identity), Seq(Long.MaxValue, 1L)))
  }

  test("averaging of huge integers does not overflow") {
    assert(resultOf(ops.averaging[Any](identity), Seq(Long.MaxValue, Long.MaxValue)) == Long.MaxValue.toDouble)
  }

  test("variance is the population variance, 0 for one item, NaN for none") {
    assert(resultOf(ops.variance[Int](identity), Seq(2, 4, 4, 4, 5, 5, 7, 9)) == 4.0)
    assert(resultOf(ops.variance[Int](identity), Seq(42)) == 0.0)
    assert(resultOf(ops.variance[Int](identity), Seq.empty).isNaN)
  }

  test("variance stays accurate for values with a huge common offset (where sum of squares fails)") {
    val offset = 1e9
    val values = Seq(4.0, 7.0, 13.0, 16.0).map(_ + offset) // variance 22.5
    assert(math.abs(resultOf(ops.variance[Double](identity), values) - 22.5) < 1e-6)
    assert(math.abs(combinedResult(ops.variance[Double](identity), values.take(1), values.drop(1)) - 22.5) < 1e-6)
  }

  test("linearTrend is NaN for fewer than two distinct x, also after deducting back to one point") {
    val op = ops.linearTrend[(Int, Int)](_._1, _._2)
    assert(resultOf(op, Seq.empty).isNaN)
    assert(resultOf(op, Seq((3, 1), (3, 8))).isNaN)
    val acc = accumulateAll(op, Seq((1, 1), (2, 7)))
    assert(op.exportResult(acc) == 6.0)
    assert(op.exportResult(op.deductFn.get(acc, accumulateAll(op, Seq((2, 7))))).isNaN)
  }

  // ---- picking by value ----

  test("minBy and maxBy return the item, the first one among equal values, and None for no items") {
    val items = Seq("bb" -> 2, "a" -> 1, "cc" -> 2, "d" -> 1)
    assert(resultOf(ops.minBy[(String, Int), Int](_._2), items) == Some("a" -> 1))
    assert(resultOf(ops.maxBy[(String, Int), Int](_._2), items) == Some("bb" -> 2))
    assert(combinedResult(ops.maxBy[(String, Int), Int](_._2), items.take(2), items.drop(2)) == Some("bb" -> 2))
    assert(resultOf(ops.maxBy[(String, Int), Int](_._2), Seq.empty).isEmpty)
  }

  test("topN and bottomN return fewer items when fewer were seen, and reject n < 1") {
    assert(resultOf(ops.topN[Int](5), Seq(2, 9)) == List(9, 2))
    assert(resultOf(ops.bottomN[Int](5), Seq.empty) == Nil)
    intercept[IllegalArgumentException](ops.topN[Int](0))
  }

  test("toList keeps accumulation order, then the combined-in accumulator's items") {
    assert(combinedResult(ops.toList[Int](), Seq(3, 1), Seq(2), Seq(1)) == List(3, 1, 2, 1))
  }

  // ---- AnyOrdering ----

  test("AnyOrdering orders mixed numbers numerically and exactly") {
    val sorted = Seq[Any](3.5, 2L, BigInt(Long.MaxValue) * 2, -1, 2.0f, Long.MaxValue, 9.223372036854775807e18).sorted(AnyOrdering)
    assert(sorted.take(4) == Seq(-1, 2L, 2.0f, 3.5))
    // Long.MaxValue = 2^63 - 1 is less than the double 2^63, which is less than 2^64 - 2.
    assert(sorted.drop(4) == Seq[Any](Long.MaxValue, 9.223372036854775807e18, BigInt(Long.MaxValue) * 2))
  }

  test("AnyOrdering orders strings, tuples and sequences, and Comparables of one class") {
    assert(Seq[Any]("b", "ab", "a").sorted(AnyOrdering) == Seq("a", "ab", "b"))
    assert(Seq[Any]((1, "b"), (1, "a"), (0, "z")).sorted(AnyOrdering) == Seq((0, "z"), (1, "a"), (1, "b")))
    assert(Seq[Any](List(1, 2), List(1), List(0, 9)).sorted(AnyOrdering) == Seq(List(0, 9), List(1), List(1, 2)))
    val d = java.time.LocalDate.of(2020, 1, 1)
    assert(AnyOrdering.lt(d, d.plusDays(1)))
  }

  test("AnyOrdering refuses to order values of unrelated kinds, naming both") {
    val e = intercept[IllegalArgumentException](AnyOrdering.compare(1, "one"))
    assert(e.getMessage.contains("java.lang.Integer") && e.getMessage.contains("java.lang.String"))
    intercept[IllegalArgumentException](AnyOrdering.compare(null, 1))
    intercept[IllegalArgumentException](AnyOrdering.compare(java.time.LocalDate.of(2020, 1, 1), java.time.Duration.ZERO))
  }

  test("maxBy with AnyOrdering picks the greatest of mixed numbers") {
    assert(resultOf(ops.maxBy[Any, Any](identity)(AnyOrdering), Seq[Any](1, 2.5, BigInt(2), 2L)) == Some(2.5))
  }

  // ---- user-defined and composite ----

  test("of: without combine or deduct the operation has neither; finish defaults to export") {
    val op = ops.of[String, StringBuilder, String](() => new StringBuilder, (sb, s) => sb.append(s), exportFn = _.toString)
    assert(!op.canCombine && !op.canDeduct && op.arity == 1)
    val acc = accumulateAll(op, Seq("a", "b"))
    assert(op.exportResult(acc) == "ab" && op.finishResult(acc) == "ab")
  }

  test("of: a given finish is used by finishResult only") {
    val op = ops.of[Int, Array[Int], Int](() => Array(0), (a, x) => { a(0) += x; a }, exportFn = _(0), finish = Some(a => -a(0)))
    val acc = accumulateAll(op, Seq(1, 2))
    assert(op.exportResult(acc) == 3 && op.finishResult(acc) == -3)
  }

  test("aggregateOperation2 routes ordinal 0 to the first operation and ordinal 1 to the second") {
    val op = ops.aggregateOperation2(ops.toList[Any](), ops.counting())
    assert(op.arity == 2)
    val acc = Seq(0 -> "a", 1 -> "x", 0 -> "b", 1 -> "y", 1 -> "z").foldLeft(op.create()) { case (a, (o, i)) => op.accumulate(a, o, i) }
    assert(op.exportResult(acc) == (List("a", "b"), 3L))
    intercept[IllegalArgumentException](op.accumulate(op.create(), 2, "c"))
  }

  test("accumulators and operations of every built-in survive the snapshot format") {
    val built = Seq[AggregateOperation[Int, _, _]](ops.counting(), ops.summing[Int](identity), ops.averaging[Int](identity),
      ops.variance[Int](identity), ops.linearTrend[Int](identity, x => x * 2), ops.minBy[Int, Int](identity), ops.topN[Int](2),
      ops.toList[Int](), ops.toSet[Int](), ops.allOf[Int](ops.counting(), ops.maxBy[Int, Int](identity)))
    built.foreach { op0 =>
      val op = op0.asInstanceOf[AggregateOperation[Int, Any, Any]]
      val acc = accumulateAll(op, Seq(3, 1, 2))
      val restored = SnapshotFormat.decode(SnapshotFormat.encode(Seq(SnapshotEntry(op, acc)))).head
      val restoredOp = restored.key.asInstanceOf[AggregateOperation[Int, Any, Any]]
      val restoredAcc = restored.value
      assert(Approx.same(op.exportResult(acc), restoredOp.exportResult(restoredAcc)), s"$op")
    }
  }

  test("only operations whose result depends on arrival order say they are order-sensitive") {
    assert(AggregateOperations.toList[Int]().isOrderSensitive)
    assert(!AggregateOperations.toSet[Int]().isOrderSensitive && !AggregateOperations.counting().isOrderSensitive)
    assert(AggregateOperations.allOf(AggregateOperations.counting(), AggregateOperations.toList[Any]()).isOrderSensitive)
    assert(!AggregateOperations.allOf(AggregateOperations.counting(), AggregateOperations.toSet[Any]()).isOrderSensitive)
  }

  test("strings order by code point, as in Python, also beyond the basic plane") {
    // Python: "\uff5e" < "\U0001f600" (code points 0xFF5E < 0x1F600); UTF-16 order says the opposite.
    assert(AnyOrdering.compare("\uff5e", new String(Character.toChars(0x1f600))) < 0)
    assert(AnyOrdering.compare("abc", "abd") < 0 && AnyOrdering.compare("ab", "abc") < 0)
  }
}
