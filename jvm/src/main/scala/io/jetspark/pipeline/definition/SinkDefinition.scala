package io.jetspark.pipeline.definition

/** A sink as a definition: which connector, with which parameters. */
final case class SinkDefinition(name: String, parameters: Map[String, Any]) {
  def isDeadLetter: Boolean = name == "deadLetter"
  /** Sinks that turn items into rows of a schema, where a record can fail (`files`, `foreachBatch`, and
    * `kafka`, whose rows are each record's key and value).
    */
  def takesRows: Boolean = name == "files" || name == "foreachBatch" || name == "kafka"
  def describe: String = {
    val shown = parameters.toSeq.sortBy(_._1).map { case (k, v) => s"$k=$v" }
    if (shown.isEmpty) name else s"$name(${shown.mkString(", ")})"
  }
}
