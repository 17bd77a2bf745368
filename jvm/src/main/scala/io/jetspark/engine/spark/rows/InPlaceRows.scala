package io.jetspark.engine.spark.rows

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, NamedExpression}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.execution.{ColumnarToRowExec, InputAdapter, LogicalRDD, ProjectExec, SQLExecutionRDD, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatchRow}
import org.apache.spark.storage.StorageLevel

/** The rows of a DataFrame read where they already are, not copied row by row into UnsafeRows as Spark's
  * plan of it would:
  *
  *  - a DataFrame made of an RDD of rows (`SqlBridge.internalCreateDataFrame`, how every stage of the
  *    engine hands its output on), unless it is cached: that RDD's rows. Spark would scan it, copying
  *    each row, so a chain of stages (a window, its counting, a sink) copied every row once per link. A
  *    cached one is read from its cache (the analyzed plan does not show the cache, and its readers must
  *    not compute it again: a stage read by several edges, a user's source);
  *  - a columnar scan (a cached DataFrame's, a Parquet file's) under a projection of its columns, renamed
  *    or not: the column vectors of the scan's batches, through one row object per batch pointed at row
  *    after row. Spark would write every field into an UnsafeRow (and, reading a cache, a second
  *    time to project it), a fifth of a keyed window's first stage where the rest of it costs little
  *    per row ([[window.ColumnarFrames]]).
  *
  * Either way a reader of these rows must not keep them: copy what it keeps, as it would of Spark's own
  * rows. Nor may it assume they are UnsafeRows: it reads them through [[InternalRow]]'s getters.
  *
  * A reader that does little per row walks them in a loop of its own (`while (rows.hasNext)`), and
  * passes them on through an iterator class of its own, not through Scala's `foreach`, `map` or
  * `flatMap`: those call the iterator they wrap from one place shared by every kind of iterator in the
  * JVM, which the JIT then calls through an interface, never inlined, at each row and layer. A window's
  * first stage at 1 s slides spent 59 ms of CPU on 2M rows with them and 37 ms without (the rows'
  * reading alone, in Spark's own `groupBy().count()`, takes about 35).
  */
private[spark] object InPlaceRows {
  /** The rows of `df`, read in place where its plan allows, else as Spark makes them. */
  def of(df: DataFrame): RDD[InternalRow] = read(df, (_, _) => ())._1

  /** [[of]] `df`, and whether its rows are read from column batches, each batch's columns (in the rows'
    * order) and number of rows passed to `batchCheck` before its rows are: a check of a whole column at
    * once, where one of each row would cost as much per row as reading it.
    */
  def checkedByBatch(df: DataFrame, batchCheck: (Array[ColumnVector], Int) => Unit): (RDD[InternalRow], Boolean) = read(df, batchCheck)

  private def read(df: DataFrame, batchCheck: (Array[ColumnVector], Int) => Unit): (RDD[InternalRow], Boolean) = df.queryExecution.analyzed match {
    case made: LogicalRDD if df.storageLevel == StorageLevel.NONE => (made.rdd, false)
    case _ => batchesOf(df.queryExecution.executedPlan).fold((df.queryExecution.toRdd, false)) {
      case (scan, ordinals) =>
        val read = scan.executeColumnar().mapPartitions { batches =>
          // (An iterator of its own, not a flatMap of each batch's rows: see above.)
          new Iterator[InternalRow] {
            private var row: ColumnarBatchRow = null
            private var last = -1
            private var done = false

            def hasNext: Boolean = (row != null && row.rowId < last) || !done && {
              while ((row == null || row.rowId >= last) && batches.hasNext) {
                val batch = batches.next()
                val columns = ordinals.map(batch.column)
                batchCheck(columns, batch.numRows)
                row = new ColumnarBatchRow(columns)
                row.rowId = -1
                last = batch.numRows - 1
              }
              done = row == null || row.rowId >= last
              if (done) row = null // (the last batch's columns go with it)
              !done
            }

            def next(): InternalRow = {
              if (!hasNext) throw new NoSuchElementException("no row left")
              row.rowId += 1
              row
            }
          }
        }
        (new SQLExecutionRDD(read, df.sparkSession.sessionState.conf), true)
    }
  }

  /** The columnar scan of `plan` and, per column of the plan's rows, the ordinal of the scan's column it
    * is; None where `plan` is not such a scan, or such a projection of one.
    */
  private[spark] def batchesOf(plan: SparkPlan): Option[(SparkPlan, Array[Int])] = {
    // Adaptive execution wraps a plan that reads a cache holding a shuffle's output; a projection of a
    // scan has no stage of its own to adapt, so its prepared plan is the one to run.
    def unwrapped(p: SparkPlan): SparkPlan = p match {
      case a: AdaptiveSparkPlanExec => unwrapped(a.executedPlan)
      case w: WholeStageCodegenExec => unwrapped(w.child)
      case i: InputAdapter => unwrapped(i.child)
      case other => other
    }
    def columnar(p: SparkPlan): Option[SparkPlan] = unwrapped(p) match {
      case c: ColumnarToRowExec => Some(c.child)
      case scan if scan.supportsColumnar && scan.children.isEmpty => Some(scan)
      case _ => None
    }
    def column(e: NamedExpression): Option[Attribute] = e match {
      case a: Attribute => Some(a)
      case Alias(a: Attribute, _) => Some(a)
      case _ => None
    }
    val (projected, child) = unwrapped(plan) match {
      case ProjectExec(list, child) => (list.map(column), child)
      case other => (other.output.map(Some(_)), other)
    }
    for {
      scan <- columnar(child)
      attributes <- Option.when(projected.forall(_.isDefined))(projected.flatten)
      ordinals = attributes.map(a => scan.output.indexWhere(_.exprId == a.exprId)).toArray
      if ordinals.forall(_ >= 0)
    } yield (scan, ordinals)
  }
}
