package io.jetspark.core.aggregate

import scala.jdk.CollectionConverters._

import java.math.{BigDecimal => JBigDecimal, MathContext}

/** Arithmetic over boxed numbers with Python's rules, for the operations that Python users feed with
  * whatever numbers their items hold.
  *
  * Every number is first normalized to one of three kinds: `Long` (any JVM integral type, and `Boolean`
  * as 0/1 like Python's `bool`), `BigInt` (integers beyond `Long`) or `Double` (`Float`, `Double`, and
  * decimals, which lose their exactness). Integers stay exact: a `Long` result that overflows becomes a
  * `BigInt`, and a `BigInt` that fits in a `Long` becomes a `Long` again. Once a `Double` takes part, the
  * result is a `Double`.
  */
object PythonNumbers {

  def isNumber(x: Any): Boolean = x match {
    case _: Long | _: Int | _: Short | _: Byte | _: Double | _: Float | _: Boolean => true
    case _: BigInt | _: java.math.BigInteger | _: BigDecimal | _: JBigDecimal => true
    case _ => false
  }

  /** The number as a `Long`, `BigInt` or `Double`; throws for anything that is not a number. */
  def normalize(x: Any): Any = x match {
    case l: Long => l
    case d: Double => d
    case i: Int => i.toLong
    case s: Short => s.toLong
    case b: Byte => b.toLong
    case f: Float => f.toDouble
    case b: Boolean => if (b) 1L else 0L
    case b: BigInt => fit(b)
    case b: java.math.BigInteger => fit(BigInt(b))
    case d: BigDecimal => d.toDouble
    case d: JBigDecimal => d.doubleValue
    case other => throw new IllegalArgumentException(s"not a number: ${describe(other)}")
  }

  def add(a: Any, b: Any): Any = (normalize(a), normalize(b)) match {
    case (x: Long, y: Long) =>
      val sum = x + y
      // Overflow iff both operands have the sign opposite to the sum's.
      if (((x ^ sum) & (y ^ sum)) < 0) BigInt(x) + y else sum
    case (x: Double, y) => x + toDouble(y)
    case (x, y: Double) => toDouble(x) + y
    case (x, y) => fit(toBigInt(x) + toBigInt(y))
  }

  def negate(a: Any): Any = normalize(a) match {
    case Long.MinValue => -BigInt(Long.MinValue)
    case x: Long => -x
    case x: Double => -x
    case x => fit(-toBigInt(x))
  }

  def subtract(a: Any, b: Any): Any = add(a, negate(b))

  def multiply(a: Any, b: Any): Any = (normalize(a), normalize(b)) match {
    case (x: Long, y: Long) =>
      val high = Math.multiplyHigh(x, y)
      val low = x * y
      // The product fits in a Long iff the high word is the sign extension of the low word.
      if ((high == 0 && low >= 0) || (high == -1 && low < 0)) low else BigInt(x) * y
    case (x: Double, y) => x * toDouble(y)
    case (x, y: Double) => toDouble(x) * y
    case (x, y) => fit(toBigInt(x) * toBigInt(y))
  }

  def toDouble(a: Any): Double = normalize(a) match {
    case x: Long => x.toDouble
    case x: Double => x
    case x => toBigInt(x).toDouble
  }

  def isZero(a: Any): Boolean = normalize(a) match {
    case x: Long => x == 0L
    case x: Double => x == 0.0
    case _ => false // a normalized BigInt never fits in a Long, so it is not zero
  }

  /** `a / b` as a `Double`, rounded once when both are integers (so huge exact sums divide correctly). */
  def divideToDouble(a: Any, b: Any): Double = (normalize(a), normalize(b)) match {
    case (x: Double, y) => x / toDouble(y)
    case (x, y: Double) => toDouble(x) / y
    case (x, y) =>
      if (isZero(y)) Double.NaN
      else new JBigDecimal(toBigInt(x).bigInteger).divide(new JBigDecimal(toBigInt(y).bigInteger), MathContext.DECIMAL128).doubleValue
  }

  /** Numeric comparison across kinds, exact for mixed integers and doubles. NaN is greater than every
    * other number (as in `java.lang.Double.compare`) so that the order is total; 0.0 equals -0.0.
    */
  def compare(a: Any, b: Any): Int = (a, b) match {
    // The common cases first: two values of one column compare without normalizing (boxing) either.
    case (x: java.lang.Integer, y: java.lang.Integer) => java.lang.Integer.compare(x, y)
    case (x: java.lang.Long, y: java.lang.Long) => java.lang.Long.compare(x, y)
    case (x: java.lang.Double, y: java.lang.Double) => compareDoubles(x, y)
    case _ => compareNormalized(normalize(a), normalize(b))
  }

  private def compareNormalized(a: Any, b: Any): Int = (a, b) match {
    case (x: Long, y: Long) => java.lang.Long.compare(x, y)
    case (x: Double, y: Double) => compareDoubles(x, y)
    case (x: Double, y) => -compareExact(y, x)
    case (x, y: Double) => compareExact(x, y)
    case (x, y) => toBigInt(x).compare(toBigInt(y))
  }

  private def compareDoubles(x: Double, y: Double): Int =
    if (x < y) -1 else if (x > y) 1 else if (x == y) 0 else java.lang.Double.compare(x, y)

  /** An integer against a double, without rounding the integer. */
  private def compareExact(integer: Any, d: Double): Int =
    if (d.isNaN || d == Double.PositiveInfinity) -1
    else if (d == Double.NegativeInfinity) 1
    else new JBigDecimal(toBigInt(integer).bigInteger).compareTo(new JBigDecimal(d))

  private def toBigInt(normalizedInteger: Any): BigInt = normalizedInteger match {
    case x: Long => BigInt(x)
    case x: BigInt => x
    case other => throw new IllegalStateException(s"not an integer: ${describe(other)}")
  }

  private def fit(b: BigInt): Any = if (b.isValidLong) b.toLong else b

  private[aggregate] def describe(x: Any): String =
    if (x == null) "null" else s"$x (${x.getClass.getName})"
}

/** A total order over the values Python users aggregate: numbers of any kind compare numerically
  * ([[PythonNumbers.compare]]), strings by code point (as Python does; Java's UTF-16 order differs beyond
  * the basic plane), tuples and sequences element by element,
  * and any other values by their own `Comparable` when one's class is an instance of the other's.
  * Values that cannot be ordered against each other (a number and a string, `null`, two unrelated
  * classes) raise an `IllegalArgumentException` that names both.
  */
object AnyOrdering extends Ordering[Any] {
  override def compare(a: Any, b: Any): Int = a match {
    // Values of one numeric column, the common case, skip the kind tests.
    case _: java.lang.Integer | _: java.lang.Long | _: java.lang.Double if b != null && (a.getClass eq b.getClass) =>
      PythonNumbers.compare(a, b)
    case _ => compareAny(a, b)
  }

  private def compareAny(a: Any, b: Any): Int =
    if (PythonNumbers.isNumber(a) && PythonNumbers.isNumber(b)) PythonNumbers.compare(a, b)
    else (a, b) match {
      case (x: String, y: String) => lexicographic(x.codePoints.iterator.asScala, y.codePoints.iterator.asScala)
      case (x: collection.Seq[_], y: collection.Seq[_]) => lexicographic(x.iterator, y.iterator)
      case (x: Product, y: Product) if isTuple(x) && isTuple(y) => lexicographic(x.productIterator, y.productIterator)
      case (x: Comparable[_], y) if y != null && (x.getClass.isInstance(y) || y.getClass.isInstance(x)) =>
        try x.asInstanceOf[Comparable[Any]].compareTo(y)
        catch { case _: ClassCastException => incomparable(a, b) }
      case _ => incomparable(a, b)
    }

  private def isTuple(p: Product): Boolean = p.getClass.getName.startsWith("scala.Tuple")

  private def lexicographic(xs: Iterator[Any], ys: Iterator[Any]): Int = {
    while (xs.hasNext && ys.hasNext) {
      val c = compare(xs.next(), ys.next())
      if (c != 0) return c
    }
    java.lang.Boolean.compare(xs.hasNext, ys.hasNext)
  }

  private def incomparable(a: Any, b: Any): Nothing =
    throw new IllegalArgumentException(
      s"cannot order ${PythonNumbers.describe(a)} against ${PythonNumbers.describe(b)}: " +
        "values compared by min_by/max_by/top_n/bottom_n must be mutually comparable (numbers, strings, tuples of those, or one Comparable type)")
}
