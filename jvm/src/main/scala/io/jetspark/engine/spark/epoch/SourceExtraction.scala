package io.jetspark.engine.spark.epoch

import io.jetspark.engine.spark.TypedPlan
import io.jetspark.engine.spark.window.{TypedWindow, WindowPath, WindowPlanner}
import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{Extractor, SlidingWindowDefinition, TimestampPolicy}
import io.jetspark.plan.VertexDescription.{Source, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame

/** What Python reads from a stream source's items, decided once for the job and read by both the UDFs'
  * description ([[io.jetspark.python.PreparedStreamJob]]) and the epochs ([[EpochEngine]]).
  *
  * A source whose time Python reads from its items (`with_timestamps`) has it read in one trip. Where the
  * source's only reader is a window's first stage, and the source is all that window reads, that same
  * trip also reads the window's key and values ([[windowAtSource]]): the items cross into Python once on
  * their way into the window, not twice, and the source's watermark stage passes the window's rows on.
  *
  * Where Python need not read them at all, it does not: a streaming DataFrame of one substream, its time a
  * column, whose only reader is a sliding or tumbling window's first stage that the JVM can read its rows
  * for ([[TypedWindow.plan]]), goes to that window as rows ([[rowsWindow]], [[RowsWindowStage]]); where it
  * is the job's only stream source (`alone`), as that stage reads every task of the micro-batch.
  */
final class SourceExtraction(dag: PhysicalDag, val source: Vertex, alone: Boolean) {

  /** The extractor of the items' time, where Python reads it ([[EpochSources.timeInPython]]). */
  val timeInPython: Option[Extractor] = EpochSources.timeInPython(source)

  /** The window first stage whose key and values the source's extraction reads, if any. Not where the
    * source numbers its items (preserve_order): their ids are given to its items after their time is read.
    */
  val windowAtSource: Option[Vertex] =
    if (timeInPython.isEmpty || source.assignsSequence) None
    else dag.edgesFrom(source.name) match {
      case Seq(edge) if edge.errorsOf.isEmpty && dag.edgesInto(edge.to).size == 1 =>
        // Not where the window routes failures: the source's extraction fails the job on a record.
        Some(dag.vertex(edge.to)).filter(v => !dag.routesFailures(v) && (v.description match {
          case w: WindowAggregate => w.stage != AggregationStage.Combine
          case _ => false
        }))
      case _ => None
    }

  /** The window first stage that reads the source's rows in the JVM, with its path (its frames as the
    * core's or as columns, as [[WindowPlanner]] decides for a batch's windows), if any.
    */
  val rowsWindow: Option[RowsWindow] = typedFirstStage.map { case (window, typed, lag) =>
    RowsWindow(window, new WindowPlanner(dag, Map(window.name -> typed)).paths(window.name), lag)
  }

  private def typedFirstStage: Option[(Vertex, TypedWindow, Long)] = source.description match {
    case _ if !alone => None
    case Source(definition, Some(TimestampPolicy.FromItems(ts @ (Extractor.FieldName(_) | Extractor.ColumnExpr(_)), lag)))
        if definition.name == "dataframe" && EpochSources.substream(definition).isEmpty && !source.assignsSequence =>
      dag.edgesFrom(source.name) match {
        case Seq(edge) if edge.errorsOf.isEmpty && dag.edgesInto(edge.to).size == 1 =>
          val window = dag.vertex(edge.to)
          window.description match {
            case WindowAggregate(AggregationStage.Accumulate, _: SlidingWindowDefinition, op: PythonAggregateSpec, key)
                if !PythonAggregations.runsInPython(window) =>
              TypedWindow.plan(TypedPlan.stageOf(window), key, ts, op,
                definition.parameters("dataframe").asInstanceOf[DataFrame]).toOption.map((window, _, lag))
            case _ => None
          }
        case _ => None
      }
    case _ => None
  }

  /** Whether the source's rows reach the window's first stage `window` as rows ([[rowsWindow]]). */
  def readsRows(window: Vertex): Boolean = rowsWindow.exists(_.window.name == window.name)

  /** Whether `window`'s rows come extracted from the source already. */
  def extractedAtSource(window: Vertex): Boolean = windowAtSource.exists(_.name == window.name)
}

/** The [[SourceExtraction]] of each stream source of a job (a source with a choice of timestamps; the
  * others are batch stages, a join's enriching sides), and what the job asks of them by vertex.
  */
final class SourceExtractions(dag: PhysicalDag) {
  /** The stream sources. */
  val sources: Seq[Vertex] = dag.vertices.filter(EpochSources.isStreamSource)
  if (sources.isEmpty) throw new IllegalArgumentException("a stream job has a stream source; this plan has none")
  /** Each stream source's, in the plan's order. */
  val all: Seq[SourceExtraction] = sources.map(new SourceExtraction(dag, _, alone = sources.size == 1))

  /** Stream source `source`'s. */
  def of(source: Vertex): SourceExtraction = all.find(_.source.name == source.name).getOrElse(
    throw new IllegalArgumentException(s"vertex '${source.name}' is no stream source"))

  /** The windows' first stages that read a source's rows in the JVM. */
  def rowsWindows: Seq[RowsWindow] = all.flatMap(_.rowsWindow)

  /** The extraction whose source's rows window first stage `window` reads, if any. */
  def readingRows(window: Vertex): Option[SourceExtraction] = all.find(_.readsRows(window))

  /** The extraction that reads the key and values of window first stage `window` at its source, if any. */
  def extractingAtSource(window: Vertex): Option[SourceExtraction] = all.find(_.extractedAtSource(window))
}

/** A window first stage that reads the stream source's rows in the JVM ([[RowsWindowStage]]): its vertex, its
  * path, and the source's allowed lag, which its tasks' watermarks keep behind their rows.
  */
final case class RowsWindow(window: Vertex, path: WindowPath, allowedLagMs: Long)
