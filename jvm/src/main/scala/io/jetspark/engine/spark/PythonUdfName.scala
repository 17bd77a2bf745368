package io.jetspark.engine.spark

/** The name of one Arrow UDF that Python builds for a batch job ([[PythonWork]]). Python sends names as
  * strings (`chain:<vertex>`, `extract:<vertex>:<input ordinal>`, `rows:<source>`, `stateful:<vertex>`,
  * `join:<vertex>`, `custom:<vertex>`, `results:<vertex>`, see python/jetspark/job.py), read once by [[parse]].
  */
sealed trait PythonUdfName

object PythonUdfName {
  /** The fused Python steps of a chain vertex. */
  final case class Chain(vertex: String) extends PythonUdfName
  /** What Python takes apart where items enter input `ordinal` of `vertex` ([[PythonExtraction]]). */
  final case class Extract(vertex: String, ordinal: Int) extends PythonUdfName
  /** A DataFrame source's rows as Python items. */
  final case class Rows(source: String) extends PythonUdfName
  /** A `map_stateful` whose functions are Python's. */
  final case class Stateful(vertex: String) extends PythonUdfName
  /** A hash join's mapper. */
  final case class Join(vertex: String) extends PythonUdfName
  /** An aggregation or window with a user-defined operation, run whole in Python ([[runner.CustomAggregations]]). */
  final case class Custom(vertex: String) extends PythonUdfName
  /** The results of an aggregation that Catalyst ran, as Python values. */
  final case class Results(vertex: String) extends PythonUdfName

  /** The name Python sent as `name`. */
  def parse(name: String): PythonUdfName = {
    val colon = name.indexOf(':')
    if (colon < 0) throw new IllegalArgumentException(s"Python UDF '$name': no kind before its vertex")
    val vertex = name.substring(colon + 1)
    name.substring(0, colon) match {
      case "chain" => Chain(vertex)
      case "extract" =>
        val last = vertex.lastIndexOf(':')
        if (last < 0) throw new IllegalArgumentException(s"Python UDF '$name': an extraction names its input ordinal")
        Extract(vertex.substring(0, last), vertex.substring(last + 1).toInt)
      case "rows" => Rows(vertex)
      case "stateful" => Stateful(vertex)
      case "join" => Join(vertex)
      case "custom" => Custom(vertex)
      case "results" => Results(vertex)
      case other => throw new IllegalArgumentException(s"Python UDF '$name': no UDF of kind '$other'")
    }
  }
}
