package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import io.jetspark.engine.spark.rows.TypedExtraction
import io.jetspark.pipeline.{PythonAggregateSpec, PythonExtractors}
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError}
import io.jetspark.plan.{Edge, Vertex}
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression
import org.apache.spark.sql.catalyst.plans.logical.{Generate, LogicalPlan, Window}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.{Column, DataFrame}

import scala.collection.mutable.ArrayBuffer

/** What Python takes apart of the items entering input `ordinal` of `vertex` (the `extract:` UDF): the key
  * (None: none), values and, where the items are stamped on entry, the timestamp, as Python extractor
  * forms ([[PythonExtractors.json]]); `timedInput`: the items arrive with their time beside them, which
  * the extraction passes on ([[CarriedTimestamps]]).
  *
  * Where that input reads a DataFrame source's rows as they are (`rowSource`), a key or value may be a
  * Column: Catalyst evaluates it next to the row (DESIGN.md "Items": Columns on typed items stay in the
  * JVM), and Python takes its value as the extractor's (`{"kind": "column", "slot": i}`, `columns(i)`),
  * then keys it like any other, so that a join's typed side and its Python side compare keys alike.
  *
  * An extractor belongs to the stage that took it (`vertex`'s first stage: the aggregation that takes a
  * grouping key, the join that takes its clauses' keys, `addTimestamps`, the stage behind a
  * `rebalance(key)`), so a record it fails on is that stage's failure: with `deadLetter` (the stage routes
  * failures to a dead-letter sink) it becomes a dead letter instead of entering the stage. The time, where
  * `timeStage` says so, belongs to another stage: a stream source's, read in the pass that takes its
  * window's key and values.
  */
final case class PythonExtraction(vertex: Vertex, ordinal: Int, key: Option[JsonNode], values: Seq[JsonNode],
    timestamp: Option[JsonNode], timedInput: Boolean, rowSource: Option[String], columns: Seq[Column], deadLetter: Boolean,
    timeStage: Option[PythonExtraction.TimeStage] = None) {

  /** The stage whose failures the extraction's are. */
  def stage: String = vertex.fusedChain.head

  /** The rows this extraction reads where it reads Columns: the source's fields, then the Columns' values. */
  def rowsWithColumns(rows: DataFrame): DataFrame = rows.select(
    (rows.columns.toSeq.map(c => col(TypedExtraction.quoted(c))) ++
      columns.zipWithIndex.map { case (c, i) => c.as(s"${PythonExtraction.ColumnPrefix}$i") }): _*)

  /** Fails, naming the stage, unless every Column is a function of its row alone. Beside a source whose
    * items are numbered, the rows must keep their partitions and order to be numbered as the source numbers
    * them (`SparkBatchEngine.extractedInput`), which a window function, a generator or a correlated or IN
    * subquery (which Spark turns into a join, which may shuffle) would not let them. (An aggregate Spark
    * refuses beside the rows' columns.)
    */
  def requireRowWise(rows: DataFrame): Unit = {
    // (Counted, not matched as a Project over `rows`: a metadata column such as `_metadata` widens the scan below.)
    def movers(plan: LogicalPlan) = plan.collect {
      case n @ (_: Window | _: Generate) => n
      case n if n.expressions.exists(e => SubqueryExpression.hasCorrelatedSubquery(e) || SubqueryExpression.hasInOrCorrelatedExistsSubquery(e)) => n
    }.size
    if (movers(rowsWithColumns(rows).queryExecution.analyzed) > movers(rows.queryExecution.analyzed))
      throw new PipelineDefinitionError(stage, TypedPlan.ColumnsOnTypedItems, s"under preserve_order a Column " +
      s"(${columns.map(_.toString.linesIterator.next().take(120)).mkString(", ")}) on the rows of a DataFrame source is " +
      "evaluated beside each row, by that row alone; " +
      "a window function, a generator or a correlated or IN subquery is not: give a field name or a Python function, or " +
      "compute it in the DataFrame")
  }
}

object PythonExtraction {
  /** How Python extracts a key or value ([[PythonExtractors.json]]); other extractors are refused. */
  private[spark] def extractorJson(e: Extractor): JsonNode =
    PythonExtractors.json(e).getOrElse(throw new UnsupportedOperationException(PythonExtractors.unsupported(e)))

  private val ColumnPrefix = "__jetspark_column_"

  /** The stage whose failure a record's time is, where not the extraction's own, and whether that stage
    * routes its failures to a dead-letter sink.
    */
  final case class TimeStage(stage: String, deadLetter: Boolean)

  /** One value that Python extracts. */
  sealed trait Value
  /** An aggregate operation's value slot (`{"kind": "field" | "column" | "python", ...}`). */
  final case class OperationSlot(slot: JsonNode, op: PythonAggregateSpec) extends Value
  /** What the extractor gives. */
  final case class Plain(e: Extractor) extends Value
  /** The canonical bytes of the key the extractor gives (a join's other clauses' keys). */
  final case class KeyBytes(e: Extractor) extends Value

  /** Builds the extraction of one input: Columns among `key` and `values` become slots where the input
    * reads a DataFrame source's rows as they are (`rowSource`), and a definition error naming the stage
    * anywhere else.
    */
  def apply(vertex: Vertex, ordinal: Int, key: Option[Extractor], values: Seq[Value], timestamp: Option[Extractor],
      timedInput: Boolean, rowSource: Option[String], deadLetter: Boolean): PythonExtraction = {
    val columns = ArrayBuffer.empty[Column]
    def slot(c: Column): JsonNode = {
      if (rowSource.isEmpty) throw new PipelineDefinitionError(TypedPlan.stageOf(vertex), TypedPlan.ColumnsOnTypedItems,
        s"a Column ($c) is evaluated in the JVM on typed items (the rows of a DataFrame source, read as they are), " +
          "but the items entering here are Python objects; give a field name or a Python function instead")
      columns += c
      JsonNodeFactory.instance.objectNode().put("kind", "column").put("slot", columns.size - 1)
    }
    def form(e: Extractor): JsonNode = e match {
      case Extractor.ColumnExpr(c: Column) => slot(c)
      case other => extractorJson(other)
    }
    val keyForm = key.map(form)
    val valueForms = values.map {
      case OperationSlot(s, op) if s.path("kind").asText == "column" => form(TypedExtraction.slotExtractor(s, op.columns))
      case OperationSlot(s, _) => s
      case Plain(e) => form(e)
      case KeyBytes(e) => PythonExtractors.keyBytesJson(form(e))
    }
    val timestampForm = timestamp.map(form)
    PythonExtraction(vertex, ordinal, keyForm, valueForms, timestampForm, timedInput, rowSource.filter(_ => columns.nonEmpty),
      columns.toSeq, deadLetter)
  }

  /** The DataFrame source whose rows `edge` delivers as they are, if it does: its rows stay typed, or they
    * are numbered for a restore of order later, in which case an extraction of Columns reads them anew and
    * gives its outputs the ids the source's items have (see `SparkBatchEngine.extractedInput`).
    */
  def rowSourceOf(typed: TypedPlan, edge: Edge): Option[String] =
    Some(edge.from).filter(from => typed.dataframeSources.contains(from) && edge.errorsOf.isEmpty)
}
