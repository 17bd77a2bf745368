package io.jetspark.engine.spark.runner

import io.jetspark.engine.spark.rows.{ExtractedRows, ProcessorStage, RowSchemas}
import io.jetspark.item.Extracted
import io.jetspark.core.processor.DistinctProcessor
import io.jetspark.plan.Vertex
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.JoinedRow
import org.apache.spark.sql.types.StructType

/** `distinct` in the core's [[DistinctProcessor]] inside the Spark tasks, over items extracted by key. */
object DistinctRunner {
  import RowSchemas._
  import ExtractedRows.extracted

  /** The first item of each key in `input`, with what its row carries: under preserve_order its sequence
    * id, which it keeps, as a filter's items do (the first to arrive is the first in order where the
    * planner restores the order on the way in, that is where it plans several senders).
    */
  def run(v: Vertex, input: DataFrame): DataFrame = {
    val carried = carriedColumns(input)
    val copyCarried = ProcessorStage.copyOf(input.schema, carried)
    ProcessorStage(v.name, () => new DistinctProcessor(_.asInstanceOf[(Extracted, InternalRow)]._1.key),
      row => (extracted(row), copyCarried(row)),
      { case (e: Extracted, beside: InternalRow) => new JoinedRow(InternalRow(e.pickled), beside).copy(): InternalRow },
      StructType(ItemSchema.fields ++ carried.map(input.schema.apply))).run(input)
  }
}
