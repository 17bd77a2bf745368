package io.jetspark.engine.spark.window

import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.plan.VertexDescription.WindowAggregate
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}

/** The path of every window vertex of `dag` ([[WindowPath]]), decided here once: a user-defined operation
  * runs in Python; else a window whose first stage reads a DataFrame source's rows in the JVM
  * (`readsRows`, as [[TypedPlan]] finds them) runs on those rows, its frames as columns where
  * [[ColumnarFramesPlanner]] plans them (a two-stage window only); else the core's processors run on
  * Python items. A window's second stage takes the path of its first.
  */
final class WindowPlanner(dag: PhysicalDag, readsRows: Map[String, TypedWindow]) {
  import WindowPath._

  private val firstStages: Map[String, WindowPath] = dag.vertices.collect {
    case v @ Vertex(_, w: WindowAggregate, _, _, _) if w.stage != AggregationStage.Combine => v.name -> firstStagePath(v, w)
  }.toMap

  /** The path of every window vertex, by vertex. */
  val paths: Map[String, WindowPath] = firstStages ++ dag.vertices.collect {
    case v @ Vertex(_, w: WindowAggregate, _, _, _) if w.stage == AggregationStage.Combine =>
      v.name -> firstStages(dag.edgesInto(v.name).head.from)
  }

  private def firstStagePath(v: Vertex, w: WindowAggregate): WindowPath =
    if (PythonAggregations.runsInPython(v)) UserDefined
    else readsRows.get(v.name) match {
      case None => CoreOnItems
      case Some(typed) =>
        val columnar = w match {
          case WindowAggregate(AggregationStage.Accumulate, _, op: PythonAggregateSpec, _) => ColumnarFramesPlanner.plan(typed, op)
          case _ => None
        }
        columnar.fold[WindowPath](CoreOnRows(typed))(Columnar(typed, _))
    }
}
