package io.jetspark.pipeline.definition

/** A function of one item, as a pipeline holds it: a key, timestamp or value extractor, or the function
  * of `map`, `filter`, `flatMap`, `peek`. Where a function needs several values (a join mapper gets
  * `(left, right)`, a stateful function gets `(state, item)`), it receives them as one tuple.
  *
  * The planner only needs to know where an extractor runs: field names and Columns run in the JVM,
  * [[Extractor.PythonFn]] in a Python worker (consecutive Python steps share one round trip).
  */
sealed trait Extractor extends Serializable {
  def runsInPython: Boolean = false

  /** Short text for plans and error messages. */
  def describe: String
}

object Extractor {

  /** A struct/Row field, a dict key or an attribute, whichever the item has. */
  final case class FieldName(name: String) extends Extractor {
    require(name.nonEmpty, "a field name must not be empty")
    override def describe: String = s"field '$name'"
  }

  /** A Spark `Column` expression, held opaquely (the pipeline layer does not depend on Spark). */
  final case class ColumnExpr(expr: AnyRef) extends Extractor {
    override def describe: String = s"column $expr"
  }

  /** A JVM function. */
  final case class ScalaFn(f: Any => Any) extends Extractor {
    override def describe: String = "scala function"
  }

  /** A Python callable wrapped by the Python layer as a Spark Python UDF; `id` names it in plans. */
  final case class PythonFn(udf: AnyRef, id: String) extends Extractor {
    override def runsInPython: Boolean = true
    override def describe: String = s"python function $id"
  }

  /** The item itself: the key of a whole-item `distinct()`. */
  case object WholeItem extends Extractor {
    override def describe: String = "whole item"
  }

  /** The timestamp of a window result, as Jet gives it: `end - 1`, the window's last instant, so that a
    * later window of a multiple of its size holds it (a minute's result falls in its own hour).
    */
  case object WindowResultTime extends Extractor {
    override def describe: String = "window result time (end - 1)"
  }

  def field(name: String): Extractor = FieldName(name)
  def column(expr: AnyRef): Extractor = ColumnExpr(expr)
  /** A Java function (Scala callers use [[ScalaFn]] directly). */
  def function(f: java.util.function.Function[Any, Any]): Extractor = ScalaFn(x => f.apply(x))
  def python(udf: AnyRef, id: String): Extractor = PythonFn(udf, id)
}
