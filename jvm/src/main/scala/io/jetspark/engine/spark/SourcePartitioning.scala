package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.InPlaceRows
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{Extractor, PipelineDefinitionError}
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.{PhysicalDag, Vertex, VertexDescription}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{Column, DataFrame}

import scala.util.Try

/** How a DataFrame source's rows are partitioned when the job reads them: as the DataFrame's own
  * partitions, or, under preserve_order at parallelism 1, as one.
  */
object SourcePartitioning {
  /** The rows of DataFrame source `v`, whose DataFrame is `df`, as it runs: the DataFrame's own partitions, except that under
    * preserve_order a source planned with one processor reads them as one, in partition order. The
    * planner knows no DataFrame's partitions (they are settled when it runs), so it plans the source with
    * the job's parallelism or the user's; where that is one, it takes the vertices fed over isolated edges
    * to be single partitions too (an ordered merge's branches line up, an edge from a single partition
    * keeps order), which rows left in the DataFrame's partitions would not be. (Outside preserve_order no
    * edge relies on a vertex of parallelism 1 being one partition.)
    */
  def sourceRows(dag: PhysicalDag, v: Vertex, df: DataFrame): DataFrame =
    if (readAsOnePartition(dag, v)) inOnePartition(df) else df

  private def readAsOnePartition(dag: PhysicalDag, v: Vertex): Boolean = dag.preserveOrder && v.localParallelism == 1

  /** The rule that a DataFrame source read as one partition (see [[sourceRows]]) breaks where the job's
    * Columns read one of its hidden metadata columns: the rows it reads then are its columns alone.
    */
  val HiddenColumnsInOnePartition = "hidden-columns-in-one-partition"

  /** Fails, naming the source, where a DataFrame source read as one partition ([[sourceRows]]) from several,
    * whose rows are then its DataFrame's columns alone, is read by a Column of the stages after it that resolves against the
    * DataFrame but not against those rows: one that reads a hidden metadata column (a file source's
    * `_metadata`). It takes the DataFrame's partitions as the job does, from the same query execution (where
    * the query has shuffles, adaptive execution runs them to tell, once for both), and analyses the Columns
    * only where there are several.
    */
  def requireColumnsResolveInOnePartition(dag: PhysicalDag): Unit = dag.vertices.foreach { v =>
    v.description match {
      case Source(source, _) if source.name == "dataframe" && readAsOnePartition(dag, v) =>
        val df = source.parameters("dataframe").asInstanceOf[DataFrame]
        if (InPlaceRows.of(df).getNumPartitions > 1) {
          val columnsAlone = SqlBridge.withRows(df, df.sparkSession.sparkContext.emptyRDD[InternalRow])
          // (A select analyses when its schema is asked for: a Column that does not resolve fails there.)
          val failing = columnsOf(dag, after = v).flatMap(c => Try { val read = df.select(c); read.schema; c -> read }.toOption)
            .filter { case (c, _) => Try(columnsAlone.select(c).schema).isFailure }
          if (failing.nonEmpty) {
            // (What the select's own projection reads, not what the DataFrame's query below it reads.)
            val read = failing.flatMap(_._2.queryExecution.analyzed.references.toSeq).map(_.exprId).toSet
            val hidden = df.queryExecution.analyzed.metadataOutput.filter(a => read(a.exprId)).map(_.name).distinct
            val remedy = if (hidden.isEmpty) "select what it reads into the DataFrame"
              else s"select ${if (hidden.size == 1) "it" else "them"} into the DataFrame " +
                s"(df.select(${("\"*\"" +: hidden.map(h => s"\"$h\"")).mkString(", ")}))"
            throw new PipelineDefinitionError(TypedPlan.stageOf(v), HiddenColumnsInOnePartition,
              s"under preserve_order this source runs as one processor, so it reads its DataFrame's partitions as one, " +
                s"in order, which holds the DataFrame's columns but not its hidden ones${hidden.mkString(" (", ", ", ")")}, " +
                s"which ${failing.map(_._1).distinct.mkString(", ")} reads: $remedy, or run the source with more processors " +
                "(set_local_parallelism)")
          }
        }
      case _ =>
    }
  }

  /** The Spark Columns of the job's extractors on the vertices (but sinks) and edges after vertex `after`:
    * of a vertex with several inputs (a hash join, a co-aggregation), those of the inputs `after` reaches.
    */
  private def columnsOf(dag: PhysicalDag, after: Vertex): Seq[Column] = {
    def in(x: Any): Iterator[Column] = x match {
      case Extractor.ColumnExpr(c: Column) => Iterator.single(c)
      case op: PythonAggregateSpec => op.columns.valuesIterator.collect { case c: Column => c }
      case _: Source | _: Sink => Iterator.empty
      case many: Iterable[_] => many.iterator.flatMap(in)
      case p: Product => p.productIterator.flatMap(in)
      case _ => Iterator.empty
    }
    def downstream(from: Set[String]): Set[String] = {
      val next = from ++ from.flatMap(dag.edgesFrom(_).map(_.to))
      if (next == from) from else downstream(next)
    }
    def onInput(d: VertexDescription, ordinal: Int): Any = d match {
      case HashJoin(clauses, _, _) => if (ordinal == 0) clauses.map(_.leftKey) else clauses.lift(ordinal - 1).map(_.rightKey)
      case Aggregate(_, ops, keys) if ops.size > 1 => (ops.lift(ordinal), keys.lift(ordinal))
      case other => other
    }
    val reached = downstream(Set(after.name))
    val edges = dag.edges.filter(e => reached(e.from))
    (edges.map(e => onInput(dag.vertex(e.to).description, e.toOrdinal)) ++ edges.map(_.kind)).flatMap(in)
  }

  /** `df`'s rows in one partition, its partitions in index order (Spark's own coalesce groups them by
    * location, which need not keep that order), with `df`'s columns.
    *
    * Where `df` is one partition already, `df` itself, unless adaptive execution ran its query (its
    * shuffles) to tell its partitions and coalesced them into one: then the rows that made, as `df` read
    * again would be planned again and its shuffles, and whatever is below them, run a second time. (Not
    * where `df` has hidden columns, a file source's `_metadata`, which a Column after it may read and
    * those rows do not hold: see [[requireColumnsResolveInOnePartition]].)
    */
  def inOnePartition(df: DataFrame): DataFrame = {
    val rows = InPlaceRows.of(df)
    if (rows.getNumPartitions > 1) SqlBridge.withRows(df, rows.coalesce(1, shuffle = false, Some(RowDelegation.InOrder)))
    else df.queryExecution.executedPlan match {
      // (Read from a cache's batches, `rows` ran nothing: see InPlaceRows.)
      case adaptive: AdaptiveSparkPlanExec if adaptive.isFinalPlan && InPlaceRows.batchesOf(adaptive).isEmpty &&
          df.queryExecution.analyzed.metadataOutput.isEmpty => SqlBridge.withRows(df, rows)
      case _ => df
    }
  }
}
