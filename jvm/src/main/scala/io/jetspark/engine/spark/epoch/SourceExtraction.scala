package io.jetspark.engine.spark.epoch

import io.jetspark.pipeline.definition.Extractor
import io.jetspark.plan.VertexDescription.WindowAggregate
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}

/** What Python reads from a stream source's items, decided once for the job and read by both the UDFs'
  * description ([[io.jetspark.python.PreparedStreamJob]]) and the epochs ([[EpochEngine]]).
  *
  * A source whose time Python reads from its items (`with_timestamps`) has it read in one trip. Where the
  * source's only reader is a window's first stage, and the source is all that window reads, that same
  * trip also reads the window's key and values ([[windowAtSource]]): the items cross into Python once on
  * their way into the window, not twice, and the source's watermark stage passes the window's rows on.
  */
final class SourceExtraction(dag: PhysicalDag, val source: Vertex) {

  /** The extractor of the items' time, where Python reads it ([[EpochSources.timeInPython]]). */
  val timeInPython: Option[Extractor] = EpochSources.timeInPython(source)

  /** The window first stage whose key and values the source's extraction reads, if any. */
  val windowAtSource: Option[Vertex] =
    if (timeInPython.isEmpty) None
    else dag.edgesFrom(source.name) match {
      case Seq(edge) if edge.errorsOf.isEmpty && dag.edgesInto(edge.to).size == 1 =>
        Some(dag.vertex(edge.to)).filter(_.description match {
          case w: WindowAggregate => w.stage != AggregationStage.Combine
          case _ => false
        })
      case _ => None
    }

  /** Whether `window`'s rows come extracted from the source already. */
  def extractedAtSource(window: Vertex): Boolean = windowAtSource.exists(_.name == window.name)
}
