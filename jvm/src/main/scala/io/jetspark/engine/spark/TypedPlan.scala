package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.node.ObjectNode
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.engine.spark.runner.CatalystAggregation
import io.jetspark.engine.spark.window.{TypedWindow, WindowPath, WindowPlanner}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError, TimestampPolicy}
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import org.apache.spark.sql.functions.lit
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/** An aggregation that Catalyst runs: `result` emits its results; `accumulate` is its first vertex when
  * the planner split it in two (Catalyst does its own partial aggregation, so that vertex passes its
  * rows through); `rows` is the DataFrame source it reads.
  */
final case class Delegation(result: String, accumulate: Option[String], rows: String, aggregation: CatalystAggregation,
    keyed: Boolean, source: DataFrame) {
  /** The schema of the typed results (what Python reads where it needs them as items). */
  lazy val resultSchema: StructType = aggregation.run(source, _ => lit(true)).schema
}

/** Which vertices of a batch DAG work on typed items (DESIGN.md "Items": a row of a Spark SQL schema)
  * and which run in Catalyst (DESIGN.md "Edges on Spark": delegation where the semantics are equal).
  *
  * A DataFrame source's output is its DataFrame. A keyed or global aggregation that reads it directly
  * runs as `groupBy(...).agg(...)` where [[runner.CatalystAggregation.plan]] finds Spark functions with the
  * core's results; its output stays typed (`key`, `result`). Typed outputs become opaque Python items
  * only on an edge to a vertex that needs them (everything but a delegated aggregation and a noop sink):
  * the rows of a source as PySpark `Row`s (Python's `rows:<vertex>` UDF), aggregation results as the
  * values the API promises (`results:<vertex>`, shaped by [[Delegation]]). A window that reads a
  * source's rows directly takes their key, timestamp and values from Catalyst ([[window.TypedWindow]]).
  *
  * A sort or a distinct that reads a source's rows directly runs in Catalyst where Spark orders and
  * compares as Python does ([[RowDelegation]]); its rows become items as the source's would.
  *
  * A Column extractor is evaluated only on typed items: as a key or value of a stage that reads a
  * source's rows directly, next to the rows ([[PythonExtraction]]); anywhere else, or as a stage's
  * function, it is a definition error naming the stage, found when the job is prepared.
  */
final class TypedPlan private (dag: PhysicalDag) {
  import TypedPlan._

  /** Every DataFrame source's DataFrame, by vertex. */
  lazy val dataframeSources: Map[String, DataFrame] = dag.vertices.collect {
    case v @ Vertex(_, Source(source, _), _, _, _) if source.name == "dataframe" => v.name -> source.parameters("dataframe").asInstanceOf[DataFrame]
  }.toMap

  /** The DataFrame sources whose rows stay typed, by vertex: all but those that number their items for a
    * restore of order later (preserve_order, see [[runner.SequenceRestore]]), which become Python items at once.
    * Each is the user's DataFrame, for planning and schemas; what the source yields when the job runs is
    * [[SourcePartitioning.sourceRows]] (one partition under preserve_order at parallelism 1).
    */
  val rowSources: Map[String, DataFrame] = dataframeSources.filter { case (name, _) => !dag.vertex(name).assignsSequence }

  /** The DataFrame sources whose items are numbered, by vertex (the others are [[rowSources]]): Python
    * items at once, except where an extraction of Columns reads their rows ([[PythonExtraction]]).
    */
  val numberedRowSources: Map[String, DataFrame] = dataframeSources -- rowSources.keys

  /** The delegated aggregations by the vertex that emits their results. */
  val delegations: Map[String, Delegation] = dag.vertices.flatMap(delegation).map(d => d.result -> d).toMap

  /** The sorts and distincts that Catalyst runs, by the vertex that emits their rows. */
  val rowDelegations: Map[String, RowDelegation] = dag.vertices.flatMap(rowDelegation).map(d => d.result -> d).toMap

  private val passThrough: Set[String] = (delegations.values.flatMap(_.accumulate) ++ rowDelegations.values.flatMap(_.passThrough)).toSet

  /** The `addTimestamps` vertices straight after a DataFrame source, with that source: they pass its rows
    * on, typed, where every reader is a window that reads them in the JVM ([[typedStamps]]).
    */
  private val stampsOverRows: Map[String, String] = dag.vertices.collect {
    case v @ Vertex(_, AddTimestamps(_, _), _, _, _) if dag.edgesInto(v.name).forall(readsRowsOf(rowSources.contains)) =>
      v.name -> dag.edgesInto(v.name).head.from
  }.toMap

  private val windowsOverRows: Map[String, TypedWindow] = dag.vertices.flatMap(typedWindow).toMap

  /** The `addTimestamps` vertices whose output stays typed (all their readers are [[typedWindows]]). */
  val typedStamps: Set[String] = stampsOverRows.keySet.filter(v => dag.edgesFrom(v).forall(e => windowsOverRows.contains(e.to)))

  /** The windows (where items enter them) that read a DataFrame source's rows in the JVM, by vertex. */
  val typedWindows: Map[String, TypedWindow] = windowsOverRows.filter { case (v, _) =>
    val from = dag.edgesInto(v).head.from
    rowSources.contains(from) || typedStamps(from)
  }

  /** The path of each window vertex. */
  val windows: WindowPlanner = new WindowPlanner(dag, typedWindows)

  /** The first stages of the typed windows whose frames are columns of numbers and rows ([[window.ColumnarFrames]]). */
  val columnarWindows: Set[String] = typedWindows.keySet.filter(v => windows.paths(v).isInstanceOf[WindowPath.Columnar])

  dag.vertices.foreach(refuseColumns)

  /** Per columnar window (its first stage), the vertices whose items it counts as it reads them: the
    * DataFrame source and the `addTimestamps` before it that nothing else reads, whose rows all reach
    * it. They then need no count per row (a condition in Catalyst's projection of every row).
    */
  val countedByWindows: Map[String, Seq[String]] = columnarWindows.map { window =>
    def before(v: String): Seq[String] = dag.edgesInto(v) match {
      case Seq(e) if e.errorsOf.isEmpty && dag.edgesFrom(e.from).size == 1 && (rowSources.contains(e.from) || typedStamps(e.from)) =>
        e.from +: before(e.from)
      case _ => Nil
    }
    window -> before(window)
  }.toMap

  /** Whether a columnar window counts `vertex`'s items ([[countedByWindows]]). */
  val countedByWindow: Set[String] = countedByWindows.values.flatten.toSet

  /** Whether Catalyst runs `vertex` (nothing of it runs in Python or in the core's processors). */
  def runsInCatalyst(vertex: String): Boolean = delegations.contains(vertex) || rowDelegations.contains(vertex) || passThrough(vertex)

  /** The vertices Catalyst runs, in plan order. */
  def catalystVertices: Seq[String] = dag.vertices.map(_.name).filter(runsInCatalyst)

  /** Whether `vertex` emits typed rows rather than opaque items. */
  def isTyped(vertex: String): Boolean = rowSources.contains(vertex) || runsInCatalyst(vertex) || typedStamps(vertex)

  /** Whether `edge` delivers its sender's typed rows as they are: into a vertex that Catalyst runs (which
    * shuffles for itself), or into a noop sink.
    */
  def takesTyped(edge: Edge): Boolean = isTyped(edge.from) && (runsInCatalyst(edge.to) || typedWindows.contains(edge.to) || typedStamps(edge.to) ||
    dag.isNoopSink(edge.to))

  /** Whether `vertex` is a sink that writes typed rows as they are. */
  def writesTyped(vertex: String): Boolean =
    dag.vertex(vertex).description.isInstanceOf[Sink] && dag.edgesInto(vertex).exists(takesTyped)

  /** Whether a stage that Catalyst runs counts `vertex`'s items for it: a DataFrame source that only an
    * aggregation reads (from its group sizes) or only a sort reads (as it reads the sorted runs), or a
    * noop sink of an aggregation's results that is all that reads them.
    */
  def countedByCatalyst(vertex: String): Boolean =
    if (rowSources.contains(vertex)) dag.edgesFrom(vertex).map(_.to) match {
      case Seq(reader) => delegations.values.exists(d => d.result == reader || d.accumulate.contains(reader)) ||
        rowDelegations.values.exists(_.passThrough.contains(reader))
      case _ => false
    }
    else writesTyped(vertex) && (dag.edgesInto(vertex) match {
      case Seq(e) => delegations.contains(e.from) && dag.edgesFrom(e.from).size == 1
      case _ => false
    })

  /** How many edges read `vertex`'s output as opaque items. */
  def opaqueReaders(vertex: String): Int = dag.edgesFrom(vertex).count(e => !takesTyped(e))

  /** The Python UDF that turns typed `vertex`'s rows into items: a source's rows and the rows a sort or
    * a distinct of them emits by the source's `rows:` UDF, an aggregation's results by its `results:` UDF.
    */
  def itemsUdf(vertex: String): PythonUdfName =
    if (rowSources.contains(vertex)) PythonUdfName.Rows(vertex)
    else rowDelegations.get(vertex).fold[PythonUdfName](PythonUdfName.Results(vertex))(d => PythonUdfName.Rows(d.rows))

  /** Whether Python's `rows:<source>` UDF is needed: where the rows of DataFrame source `source`, or
    * those a sort or a distinct of them emits, are read as items.
    */
  def rowsBecomeItems(source: String): Boolean =
    opaqueReaders(source) > 0 || rowDelegations.values.exists(d => d.rows == source && opaqueReaders(d.result) > 0)

  /** For Python's `results:<vertex>` UDFs: each delegated aggregation whose results some vertex reads as
    * items ([[opaqueReaders]]), with its result schema and how a row of it becomes a Python value
    * (`{"keyed": bool, "result": shape}`, see python/jetspark/worker/typed_results.py). Only those: a result schema costs
    * Spark an analysis of the aggregation.
    */
  def pythonResults: Seq[(String, StructType, JsonNode)] =
    delegations.values.toSeq.filter(d => opaqueReaders(d.result) > 0).sortBy(_.result).map { d =>
    val shape: ObjectNode = new ObjectMapper().createObjectNode().put("keyed", d.keyed)
    shape.set[JsonNode]("result", d.aggregation.shape)
    (d.result, d.resultSchema, shape)
  }

  private def delegation(v: Vertex): Option[Delegation] = v.description match {
    case Aggregate(stage, Seq(op: PythonAggregateSpec), keys) if stage != AggregationStage.Combine =>
      val input = dag.edgesInto(v.name).head
      val result = if (stage == AggregationStage.Accumulate) dag.vertex(dag.edgesFrom(v.name).head.to) else v
      val readsRows = rowSources.contains(input.from) && input.errorsOf.isEmpty && !Rebalancing.rebalancedByKey(input)
      if (!readsRows || !catalystMayMake(result.name)) None
      else {
        val rows = rowSources(input.from)
        CatalystAggregation.plan(stageOf(v), op.operation, op.columns, keys.headOption, rows) match {
          case Right(aggregation) =>
            Some(Delegation(result.name, if (result eq v) None else Some(v.name), input.from, aggregation, keys.nonEmpty, rows))
          // Python reads the rows' fields, and Catalyst evaluates Columns next to them (PythonExtraction).
          case Left(_) => None
        }
      }
    case _ => None
  }

  /** Whether Catalyst may make the results of vertex `result`: not where they go on to dead letters, nor
    * where they number themselves for a restore of order later (Catalyst's rows carry no ids).
    */
  private def catalystMayMake(result: String): Boolean =
    dag.edgesFrom(result).forall(_.errorsOf.isEmpty) && !dag.vertex(result).assignsSequence

  private def rowDelegation(v: Vertex): Option[RowDelegation] = {
    def input = dag.edgesInto(v.name).head
    def readsRows = readsRowsOf(rowSources.contains)(input)
    v.description match {
      case Sort(SortPhase.LocalSort, key, reverse) if readsRows =>
        val merge = dag.edgesFrom(v.name).head.to
        if (!catalystMayMake(merge)) None
        else RowDelegation.sort(stageOf(v), key, reverse, rowSources(input.from)).toOption
          .map(RowDelegation(merge, Some(v.name), input.from, _))
      // (Not readsRows: the edge into a distinct is partitioned by its own key, which the group-by replaces.)
      case Distinct(key) if rowSources.contains(input.from) && input.errorsOf.isEmpty && catalystMayMake(v.name) =>
        RowDelegation.distinct(key, rowSources(input.from)).toOption.map(RowDelegation(v.name, None, input.from, _))
      case _ => None
    }
  }

  private def typedWindow(v: Vertex): Option[(String, TypedWindow)] = v.description match {
    case WindowAggregate(stage, _, op: PythonAggregateSpec, key) if stage != AggregationStage.Combine =>
      val input = dag.edgesInto(v.name).head
      val source = stampsOverRows.getOrElse(input.from, input.from)
      // The rows' time: read by the addTimestamps before the window, or by the stream source itself.
      val timestamp = dag.vertex(input.from).description match {
        case AddTimestamps(ts, _) => Some(ts)
        case Source(_, Some(TimestampPolicy.FromItems(ts, _))) => Some(ts)
        case _ => None
      }
      // A single-stage window's input is partitioned by its own key, which the projection carries.
      val partitionedByOwnKey = input.kind match {
        case EdgeKind.Partitioned(k, _) => key.contains(k)
        case _ => false
      }
      val readsRows = (rowSources.contains(input.from) || stampsOverRows.contains(input.from)) && input.errorsOf.isEmpty &&
        (partitionedByOwnKey || !Rebalancing.rebalancedByKey(input))
      if (!readsRows) None
      else timestamp.flatMap(TypedWindow.plan(stageOf(v), key, _, op, rowSources(source)).toOption).map(v.name -> _)
    case _ => None
  }

  /** Whether `edge` delivers its sender's items as they are, from a vertex `typed` accepts. */
  private def readsRowsOf(typed: String => Boolean)(edge: Edge): Boolean =
    typed(edge.from) && edge.errorsOf.isEmpty && !Rebalancing.rebalancedByKey(edge)

  /** Columns where no extraction reads them (keys and values do, see [[PythonExtraction]]): as a
    * stateless step's function, a `map_stateful`'s functions or a join's mapper, a Column would have to
    * make items, which only Python does.
    */
  private def refuseColumns(v: Vertex): Unit = {
    val functions: Seq[Extractor] = v.description match {
      case MapStateful(_, create, fn) => Seq(create, fn)
      case HashJoin(_, mapper, _) => mapper.toSeq
      case StatelessChain(steps) => steps.map(_.fn)
      case _ => Nil
    }
    if (functions.exists(_.isInstanceOf[Extractor.ColumnExpr])) throw new PipelineDefinitionError(stageOf(v), ColumnsOnTypedItems,
      "a Column gives a key or a value of typed items (the rows of a DataFrame source), not the items a stage " +
        "makes; give a Python function here")
  }
}

object TypedPlan {
  /** The rule a Column on items that are not typed breaks. */
  val ColumnsOnTypedItems = "columns-on-typed-items"

  /** The plan of `dag`. It analyses DataFrames: a job makes it once and hands it on. */
  def apply(dag: PhysicalDag): TypedPlan = new TypedPlan(dag)

  /** The name of the stage a vertex runs, for errors. */
  def stageOf(v: Vertex): String = v.fusedChain.headOption.getOrElse(v.name)

}
