package io.jetspark.core.aggregate

import scala.collection.mutable

/** The built-in aggregate operations (Jet's `AggregateOperations`) and the factory for user-defined
  * ones. Every operation here follows the laws of [[AggregateOperation]]; which ones can `deduct` is
  * stated per operation (those that can slide windows in O(1)).
  *
  * Operations meant for Python's values take extractors returning `Any` and follow
  * [[PythonNumbers]] (integers exact, any float makes the result a float); operations that pick items
  * by value take an `Ordering` of the extracted values (pass [[AnyOrdering]] for Python's values).
  */
object AggregateOperations {

  /** A user-defined operation from its functions (Jet's `AggregateOperation.withCreate(...)` builder as
    * one call). `combine` and `deduct` follow the laws of [[AggregateOperation]]; `finish` (default:
    * `exportFn`) may consume the accumulator, `exportFn` must not. (`exportFn` is Python's `export`,
    * a keyword in Scala 3.)
    */
  def of[T, A, R](
      create: () => A,
      accumulate: (A, T) => A,
      combine: Option[(A, A) => A] = None,
      deduct: Option[(A, A) => A] = None,
      exportFn: A => R,
      finish: Option[A => R] = None,
  ): AggregateOperation[T, A, R] =
    new FunctionAggregateOperation("aggregateOperation", create, accumulate, combine, deduct, exportFn, finish.getOrElse(exportFn))

  /** Number of items, as a `Long`. Deducts. */
  def counting(): AggregateOperation[Any, LongAccumulator, Long] =
    builtIn("counting", () => new LongAccumulator, (a: LongAccumulator, _: Any) => { a.value += 1; a },
      Some(addLongs), Some(subtractLongs), (a: LongAccumulator) => a.value)

  /** Sum of `f` over the items as a `Long`; overflow throws `ArithmeticException` (see [[summing]] for
    * unbounded integers). Deducts.
    */
  def summingLong[T](f: T => Long): AggregateOperation[T, LongAccumulator, Long] =
    builtIn("summingLong", () => new LongAccumulator,
      (a: LongAccumulator, item: T) => { a.value = Math.addExact(a.value, f(item)); a },
      Some(addLongs), Some(subtractLongs), (a: LongAccumulator) => a.value)

  /** Sum of `f` over the items as a `Double`. Deducts. */
  def summingDouble[T](f: T => Double): AggregateOperation[T, DoubleAccumulator, Double] =
    builtIn("summingDouble", () => new DoubleAccumulator,
      (a: DoubleAccumulator, item: T) => { a.value += f(item); a },
      Some((l: DoubleAccumulator, r: DoubleAccumulator) => { l.value += r.value; l }),
      Some((l: DoubleAccumulator, r: DoubleAccumulator) => { l.value -= r.value; l }),
      (a: DoubleAccumulator) => a.value)

  /** Sum of `f` over the items with Python's number semantics: integers sum exactly (`Long`, or `BigInt`
    * beyond it); once a floating value is added the sum is a `Double`. The sum of nothing is `0L`.
    * Deducts.
    */
  def summing[T](f: T => Any): AggregateOperation[T, NumberAccumulator, Any] =
    builtIn("summing", () => new NumberAccumulator,
      (a: NumberAccumulator, item: T) => { a.value = PythonNumbers.add(a.value, f(item)); a },
      Some((l: NumberAccumulator, r: NumberAccumulator) => { l.value = PythonNumbers.add(l.value, r.value); l }),
      Some((l: NumberAccumulator, r: NumberAccumulator) => { l.value = PythonNumbers.subtract(l.value, r.value); l }),
      (a: NumberAccumulator) => a.value)

  /** Arithmetic mean of `f` (any numbers, summed exactly as in [[summing]]), as a `Double`; NaN for no
    * items. Deducts.
    */
  def averaging[T](f: T => Any): AggregateOperation[T, AveragingAccumulator, Double] =
    builtIn("averaging", () => new AveragingAccumulator,
      (a: AveragingAccumulator, item: T) => { a.count += 1; a.sum = PythonNumbers.add(a.sum, f(item)); a },
      Some((l: AveragingAccumulator, r: AveragingAccumulator) => { l.count += r.count; l.sum = PythonNumbers.add(l.sum, r.sum); l }),
      Some((l: AveragingAccumulator, r: AveragingAccumulator) => { l.count -= r.count; l.sum = PythonNumbers.subtract(l.sum, r.sum); l }),
      (a: AveragingAccumulator) => if (a.count == 0) Double.NaN else PythonNumbers.divideToDouble(a.sum, a.count))

  /** Population variance of `f` (any numbers, taken as `Double`); NaN for no items. Deducts. */
  def variance[T](f: T => Any): AggregateOperation[T, VarianceAccumulator, Double] =
    builtIn("variance", () => new VarianceAccumulator,
      (a: VarianceAccumulator, item: T) => a.add(PythonNumbers.toDouble(f(item))),
      Some((l: VarianceAccumulator, r: VarianceAccumulator) => l.combine(r)),
      Some((l: VarianceAccumulator, r: VarianceAccumulator) => l.deduct(r)),
      (a: VarianceAccumulator) => a.populationVariance)

  /** Slope of the least-squares line through the points `(x(item), y(item))`; NaN when it is undefined
    * (no two distinct x). Integer coordinates are summed exactly. Deducts.
    */
  def linearTrend[T](x: T => Any, y: T => Any): AggregateOperation[T, LinearTrendAccumulator, Double] =
    builtIn("linearTrend", () => new LinearTrendAccumulator,
      (a: LinearTrendAccumulator, item: T) => a.add(x(item), y(item)),
      Some((l: LinearTrendAccumulator, r: LinearTrendAccumulator) => l.merge(r, 1)),
      Some((l: LinearTrendAccumulator, r: LinearTrendAccumulator) => l.merge(r, -1)),
      (a: LinearTrendAccumulator) => a.slope)

  /** The item with the least `f`, or None for no items; of equal ones the first encountered. */
  def minBy[T, V](f: T => V)(implicit ord: Ordering[V]): AggregateOperation[T, PickAccumulator, Option[T]] =
    picking("minBy", f, ord.reverse)

  /** The item with the greatest `f`, or None for no items; of equal ones the first encountered. */
  def maxBy[T, V](f: T => V)(implicit ord: Ordering[V]): AggregateOperation[T, PickAccumulator, Option[T]] =
    picking("maxBy", f, ord)

  /** The `n` items with the greatest `key`, greatest first; of equal ones the first encountered ranks
    * first.
    */
  def topN[T, V](n: Int, key: T => V)(implicit ord: Ordering[V]): AggregateOperation[T, RankingAccumulator, List[T]] =
    ranking("topN", n, key, ord.reverse)

  def topN[T](n: Int)(implicit ord: Ordering[T]): AggregateOperation[T, RankingAccumulator, List[T]] =
    topN(n, identity[T])(ord)

  /** The `n` items with the least `key`, least first; of equal ones the first encountered ranks first. */
  def bottomN[T, V](n: Int, key: T => V)(implicit ord: Ordering[V]): AggregateOperation[T, RankingAccumulator, List[T]] =
    ranking("bottomN", n, key, ord)

  def bottomN[T](n: Int)(implicit ord: Ordering[T]): AggregateOperation[T, RankingAccumulator, List[T]] =
    bottomN(n, identity[T])(ord)

  /** The items in accumulation order (a combined-in accumulator's items follow). Cannot deduct. Its
    * result depends on the order items arrive in, so it is order-sensitive.
    */
  def toList[T](): AggregateOperation[T, mutable.ArrayBuffer[T], List[T]] =
    builtIn("toList", () => mutable.ArrayBuffer.empty[T], (a: mutable.ArrayBuffer[T], item: T) => a += item,
      Some((l: mutable.ArrayBuffer[T], r: mutable.ArrayBuffer[T]) => l ++= r), None,
      (a: mutable.ArrayBuffer[T]) => a.toList, orderSensitive = true)

  /** The distinct items. Cannot deduct (an item added twice would need a count). */
  def toSet[T](): AggregateOperation[T, mutable.HashSet[T], Set[T]] =
    builtIn("toSet", () => mutable.HashSet.empty[T], (a: mutable.HashSet[T], item: T) => a += item,
      Some((l: mutable.HashSet[T], r: mutable.HashSet[T]) => l ++= r), None,
      (a: mutable.HashSet[T]) => a.toSet)

  /** Every operation over the same items; the result holds their results in order. It combines (and
    * deducts) iff every part does.
    */
  def allOf[T](ops: AggregateOperation[T, _, _]*): AggregateOperation[T, Array[Any], IndexedSeq[Any]] = {
    require(ops.nonEmpty, "allOf needs at least one operation")
    new CompositeAggregateOperation(ops.toIndexedSeq.map(_.asInstanceOf[AggregateOperation[Any, Any, Any]]), routeByOrdinal = false)
  }

  /** Co-aggregation of two inputs (`aggregate2`): items of ordinal 0 go to `op0`, of ordinal 1 to
    * `op1`; the result is `(result0, result1)`. It combines (and deducts) iff both parts do.
    */
  def aggregateOperation2[T0, R0, T1, R1](
      op0: AggregateOperation[T0, _, R0],
      op1: AggregateOperation[T1, _, R1],
  ): AggregateOperation[Any, Array[Any], (R0, R1)] =
    andThen(new CompositeAggregateOperation(IndexedSeq(op0, op1).map(_.asInstanceOf[AggregateOperation[Any, Any, Any]]), routeByOrdinal = true))(
      (results: IndexedSeq[Any]) => (results(0).asInstanceOf[R0], results(1).asInstanceOf[R1]))

  /** `op` over `fn` of each item (Jet's `mapping`): an accumulator then keeps only what `fn` gives. */
  def mapping[T, U, A, R](fn: T => U)(op: AggregateOperation[U, A, R]): AggregateOperation[T, A, R] =
    new MappedInputOperation(op, fn)

  /** `op` with `fn` applied to its result (Jet's `andThen`). */
  def andThen[T, A, R, R2](op: AggregateOperation[T, A, R])(fn: R => R2): AggregateOperation[T, A, R2] =
    new MappedResultOperation(op, fn)

  private val addLongs = (l: LongAccumulator, r: LongAccumulator) => { l.value = Math.addExact(l.value, r.value); l }
  private val subtractLongs = (l: LongAccumulator, r: LongAccumulator) => { l.value = Math.subtractExact(l.value, r.value); l }

  private def builtIn[T, A, R](name: String, create: () => A, accumulate: (A, T) => A, combine: Option[(A, A) => A],
      deduct: Option[(A, A) => A], exportFn: A => R, orderSensitive: Boolean = false): AggregateOperation[T, A, R] =
    new FunctionAggregateOperation(name, create, accumulate, combine, deduct, exportFn, exportFn, orderSensitive)

  /** Keeps the item whose value ranks highest under `prefer`; ties keep the earlier (left) item. */
  private def picking[T, V](name: String, f: T => V, prefer: Ordering[V]): AggregateOperation[T, PickAccumulator, Option[T]] = {
    def offer(acc: PickAccumulator, item: Any, value: Any): PickAccumulator = {
      if (acc.isEmpty || prefer.gt(value.asInstanceOf[V], acc.value.asInstanceOf[V])) {
        acc.item = item; acc.value = value; acc.isEmpty = false
      }
      acc
    }
    builtIn(name, () => new PickAccumulator, (a: PickAccumulator, item: T) => offer(a, item, f(item)),
      Some((l: PickAccumulator, r: PickAccumulator) => if (r.isEmpty) l else offer(l, r.item, r.value)), None,
      (a: PickAccumulator) => if (a.isEmpty) None else Some(a.item.asInstanceOf[T]))
  }

  /** Keeps the `n` items that come first under `order` of their values, then of their positions. */
  private def ranking[T, V](name: String, n: Int, key: T => V, order: Ordering[V]): AggregateOperation[T, RankingAccumulator, List[T]] = {
    require(n >= 1, s"$name needs n >= 1, got $n")
    val rank: Ordering[RankedItem] = (a: RankedItem, b: RankedItem) => {
      val byValue = order.compare(a.value.asInstanceOf[V], b.value.asInstanceOf[V])
      if (byValue != 0) byValue else java.lang.Long.compare(a.position, b.position)
    }
    def insert(acc: RankingAccumulator, candidate: RankedItem): Unit = {
      val best = acc.best
      if (best.size < n || rank.lt(candidate, best.last)) {
        var lo = 0
        var hi = best.size
        while (lo < hi) { val mid = (lo + hi) >>> 1; if (rank.lteq(best(mid), candidate)) lo = mid + 1 else hi = mid }
        best.insert(lo, candidate)
        if (best.size > n) best.remove(n)
      }
    }
    builtIn(name, () => new RankingAccumulator,
      (a: RankingAccumulator, item: T) => { insert(a, RankedItem(item, key(item), a.seen)); a.seen += 1; a },
      Some((l: RankingAccumulator, r: RankingAccumulator) => {
        r.best.foreach(c => insert(l, c.copy(position = c.position + l.seen)))
        l.seen += r.seen
        l
      }), None,
      (a: RankingAccumulator) => a.best.iterator.map(_.item.asInstanceOf[T]).toList)
  }
}

/** An operation of arity 1 given by its functions. */
private final class FunctionAggregateOperation[T, A, R](
    name: String,
    createFn: () => A,
    accumulateFn: (A, T) => A,
    override val combineFn: Option[(A, A) => A],
    override val deductFn: Option[(A, A) => A],
    exportFn: A => R,
    finishFn: A => R,
    orderSensitive: Boolean = false,
) extends AggregateOperation[T, A, R] {
  override def arity: Int = 1
  override def isOrderSensitive: Boolean = orderSensitive
  override def create(): A = createFn()
  override def accumulate(acc: A, ordinal: Int, item: T): A = accumulateFn(acc, item)
  override def exportResult(acc: A): R = exportFn(acc)
  override def finishResult(acc: A): R = finishFn(acc)
  override def toString: String = name
}

/** Several operations over one accumulator array, one slot per part. With `routeByOrdinal`, an item of
  * input `i` goes to part `i` only (co-aggregation); otherwise every item goes to every part.
  */
private final class CompositeAggregateOperation(parts: IndexedSeq[AggregateOperation[Any, Any, Any]], routeByOrdinal: Boolean)
    extends AggregateOperation[Any, Array[Any], IndexedSeq[Any]] {

  override val arity: Int = if (routeByOrdinal) parts.size else parts.map(_.arity).max

  override def create(): Array[Any] = parts.map(_.create()).toArray

  override def accumulate(acc: Array[Any], ordinal: Int, item: Any): Array[Any] = {
    if (routeByOrdinal) {
      if (ordinal < 0 || ordinal >= parts.size)
        throw new IllegalArgumentException(s"item on input $ordinal, but this co-aggregation has ${parts.size} inputs")
      acc(ordinal) = parts(ordinal).accumulate(acc(ordinal), 0, item)
    } else {
      var i = 0
      while (i < parts.size) { acc(i) = parts(i).accumulate(acc(i), ordinal, item); i += 1 }
    }
    acc
  }

  override val combineFn: Option[(Array[Any], Array[Any]) => Array[Any]] = pointwise(_.combineFn)
  override val deductFn: Option[(Array[Any], Array[Any]) => Array[Any]] = pointwise(_.deductFn)

  private def pointwise(fnOf: AggregateOperation[Any, Any, Any] => Option[(Any, Any) => Any]): Option[(Array[Any], Array[Any]) => Array[Any]] = {
    val fns = parts.map(fnOf)
    if (fns.exists(_.isEmpty)) None
    else {
      val defined = fns.map(_.get)
      Some((left: Array[Any], right: Array[Any]) => {
        var i = 0
        while (i < defined.size) { left(i) = defined(i)(left(i), right(i)); i += 1 }
        left
      })
    }
  }

  override def exportResult(acc: Array[Any]): IndexedSeq[Any] = parts.indices.map(i => parts(i).exportResult(acc(i)))
  override def finishResult(acc: Array[Any]): IndexedSeq[Any] = parts.indices.map(i => parts(i).finishResult(acc(i)))
  override def isOrderSensitive: Boolean = parts.exists(_.isOrderSensitive)
  override def toString: String = parts.mkString(if (routeByOrdinal) "aggregateOperation(" else "allOf(", ", ", ")")
}

/** `op` over `fn` of each item. */
private final class MappedInputOperation[T, U, A, R](op: AggregateOperation[U, A, R], fn: T => U) extends AggregateOperation[T, A, R] {
  override def arity: Int = op.arity
  override def create(): A = op.create()
  override def accumulate(acc: A, ordinal: Int, item: T): A = op.accumulate(acc, ordinal, fn(item))
  override def combineFn: Option[(A, A) => A] = op.combineFn
  override def deductFn: Option[(A, A) => A] = op.deductFn
  override def exportResult(acc: A): R = op.exportResult(acc)
  override def finishResult(acc: A): R = op.finishResult(acc)
  override def isOrderSensitive: Boolean = op.isOrderSensitive
  override def toString: String = s"mapping(...)($op)"
}

/** `op` with `fn` applied to each exported or finished result. */
private final class MappedResultOperation[T, A, R, R2](op: AggregateOperation[T, A, R], fn: R => R2) extends AggregateOperation[T, A, R2] {
  override def arity: Int = op.arity
  override def create(): A = op.create()
  override def accumulate(acc: A, ordinal: Int, item: T): A = op.accumulate(acc, ordinal, item)
  override def combineFn: Option[(A, A) => A] = op.combineFn
  override def deductFn: Option[(A, A) => A] = op.deductFn
  override def exportResult(acc: A): R2 = fn(op.exportResult(acc))
  override def finishResult(acc: A): R2 = fn(op.finishResult(acc))
  override def isOrderSensitive: Boolean = op.isOrderSensitive
  override def toString: String = s"$op.andThen(...)"
}
