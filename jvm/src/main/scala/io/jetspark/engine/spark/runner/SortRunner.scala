package io.jetspark.engine.spark.runner

import io.jetspark.engine.spark.rows.{ExtractedRows, InPlaceRows, ProcessorStage, RowSchemas}
import io.jetspark.item.Extracted
import io.jetspark.core.aggregate.AnyOrdering
import io.jetspark.core.processor.{SortDefinition, SortProcessor}
import io.jetspark.plan.Vertex
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.jetspark.SqlBridge

/** A sort in two phases, the core's [[SortProcessor]] inside the Spark tasks: each partition sorts its
  * extracted items into a run, numbered by partition and position ([[rows.RowSchemas.RunSchema]]); one
  * partition merges the runs.
  */
object SortRunner {
  import RowSchemas._
  import ExtractedRows.{extracted, extractedAt}

  /** Sort vertex `v`'s local phase over `input` (extractions whose first value is the sort value). */
  def localSort(v: Vertex, reverse: Boolean, input: DataFrame): DataFrame = numberedRuns(ProcessorStage(v.name,
    () => new SortProcessor(SortDefinition(Some(sortValue), AnyOrdering, reverse)), extracted,
    e => { val x = e.asInstanceOf[Extracted]; InternalRow(x.key.bytes, rawValues(x), x.pickled) }, ExtractedSchema)
    .run(input))

  /** Sort vertex `v`'s merge of the sorted runs in `input` into its items.
    *
    * The runs arrive in any order: (value, run, position) gives the k-way merge's order, ties to the
    * lower run, so the result does not depend on which run Spark delivers first.
    */
  def mergeSorted(v: Vertex, reverse: Boolean, input: DataFrame): DataFrame = {
    val byValue = if (reverse) AnyOrdering.reverse else AnyOrdering
    val order = Ordering.Tuple3(byValue, Ordering.Int, Ordering.Long).asInstanceOf[Ordering[Any]]
    ProcessorStage(v.name, () => new SortProcessor(SortDefinition(Some(runPosition), order, reverse = false)),
      row => (extractedFromRun(row), row.getInt(0), row.getLong(1)),
      r => InternalRow(r.asInstanceOf[(Extracted, Int, Long)]._1.pickled), ItemSchema).run(input)
  }

  /** Numbers each row of a local sort's output by its run (the partition) and its position in it. */
  private def numberedRuns(sorted: DataFrame): DataFrame = {
    val rows = InPlaceRows.of(sorted).mapPartitionsWithIndex { (run, partition) =>
      partition.zipWithIndex.map { case (r, position) => InternalRow(run, position.toLong, r.getBinary(0), r.getArray(1), r.getBinary(2)) }
    }
    SqlBridge.internalCreateDataFrame(sorted.sparkSession, rows, RunSchema)
  }

  private val sortValue: Any => Any = _.asInstanceOf[Extracted].values(0)
  private val runPosition: Any => Any = r => { val (e, run, position) = r.asInstanceOf[(Extracted, Int, Long)]; (e.values(0), run, position) }
  private def rawValues(e: Extracted) = ArrayData.toArrayData(e.rawValues)

  /** A sorted run's row ([[rows.RowSchemas.RunSchema]]) as an extraction: its run and position come first. */
  private val extractedFromRun: InternalRow => Extracted = extractedAt(2)
}
