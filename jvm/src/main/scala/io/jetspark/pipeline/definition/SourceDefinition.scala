package io.jetspark.pipeline.definition

/** A source as a definition: which connector, with which parameters. Connectors (written elsewhere) turn
  * it into readers. `substreams` is the number of independent ordered substreams when the definition fixes
  * it (items: 1; itemsStream: one per partition); the planner uses it as the source's parallelism.
  */
sealed trait SourceDefinition extends Serializable {
  def name: String
  def parameters: Map[String, Any]
  def substreams: Option[Int]

  /** Name and parameters for plans; collections are summarized by size. */
  def describe: String = {
    val shown = parameters.toSeq.sortBy(_._1).map {
      case (k, v: Iterable[_]) => s"$k=<${v.size} values>"
      case (k, v) => s"$k=$v"
    }
    if (shown.isEmpty) name else s"$name(${shown.mkString(", ")})"
  }
}

final case class BatchSource(name: String, parameters: Map[String, Any], substreams: Option[Int])
    extends SourceDefinition

final case class StreamSource(name: String, parameters: Map[String, Any], substreams: Option[Int])
    extends SourceDefinition
