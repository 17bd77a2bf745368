package io.jetspark.core.aggregate

/** Equality of results for tests: numbers of any kind compare numerically (NaN equals NaN) within a
  * relative tolerance, collections and tuples element by element, everything else with `==`.
  */
object Approx {
  def same(expected: Any, actual: Any, tolerance: Double = 1e-9): Boolean = (expected, actual) match {
    case (e, a) if PythonNumbers.isNumber(e) && PythonNumbers.isNumber(a) =>
      (PythonNumbers.normalize(e), PythonNumbers.normalize(a)) match {
        case (x: Double, y) => close(x, PythonNumbers.toDouble(y), tolerance)
        case (x, y: Double) => close(PythonNumbers.toDouble(x), y, tolerance)
        case (x, y) => PythonNumbers.compare(x, y) == 0
      }
    case (e: collection.Set[_], a: collection.Set[_]) => e == a
    case (e: collection.Seq[_], a: collection.Seq[_]) => e.size == a.size && e.zip(a).forall { case (x, y) => same(x, y, tolerance) }
    case (e: Option[_], a: Option[_]) => e.isDefined == a.isDefined && e.zip(a).forall { case (x, y) => same(x, y, tolerance) }
    case (e: Product, a: Product) if e.productPrefix == a.productPrefix && e.productArity == a.productArity =>
      e.productIterator.zip(a.productIterator).forall { case (x, y) => same(x, y, tolerance) }
    case _ => expected == actual
  }

  private def close(x: Double, y: Double, tolerance: Double): Boolean =
    (x.isNaN && y.isNaN) || x == y || math.abs(x - y) <= tolerance * math.max(1.0, math.max(math.abs(x), math.abs(y)))
}
