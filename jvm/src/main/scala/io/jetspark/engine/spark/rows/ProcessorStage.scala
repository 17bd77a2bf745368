package io.jetspark.engine.spark.rows

import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.{Processor, ProcessorContext}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.StructType

/** Runs one processor instance per partition of a DataFrame inside the Spark task (the vertex's
  * parallelism is the DataFrame's partition count), through a [[ProcessorTasklet]]: the processor sees
  * the partition's rows as items, and what it emits becomes the output DataFrame's rows. A failure of
  * the processor's names the vertex.
  *
  * `toItem` must not keep the InternalRow it is given (Spark reuses it): copy what the item needs.
  */
final case class ProcessorStage(
    vertexName: String,
    newProcessor: () => Processor,
    toItem: InternalRow => Any,
    toRow: Any => InternalRow,
    outputSchema: StructType,
) {
  def run(input: DataFrame): DataFrame = {
    val (in, out) = (toItem, toRow)
    ProcessorStage.runPacked(vertexName, newProcessor, input, outputSchema)(_.map(in), _.map(out))
  }

  /** [[run]], each output row followed by the `carried` columns of the input row it was emitted for (an
    * item's time, its sequence id). The processor must emit exactly one output per input item, in input
    * order (a rolling aggregation), so that the k-th output belongs to the k-th input.
    */
  def runCarrying(input: DataFrame, carried: Seq[String]): DataFrame =
    if (carried.isEmpty) run(input)
    else {
      val copyCarried = ProcessorStage.copyOf(input.schema, carried)
      val (name, create, in, out) = (vertexName, newProcessor, toItem, toRow)
      val rows = InPlaceRows.of(input)
      val total = rows.getNumPartitions
      val produced = rows.mapPartitionsWithIndex { (index, partition) =>
        val pending = new java.util.ArrayDeque[InternalRow]()
        val items = partition.map { row =>
          pending.addLast(copyCarried(row))
          in(row)
        }
        StageFailedException.namingOwnErrors(name, items)(ProcessorTasklet(create(), ProcessorContext(name, index, total), _))
          .map(result => new JoinedRow(out(result), pending.removeFirst()).copy(): InternalRow)
      }
      SqlBridge.internalCreateDataFrame(input.sparkSession, produced, StructType(outputSchema.fields ++ carried.map(input.schema.apply)))
    }
}

object ProcessorStage {
  /** A copy of the `columns` of a row of `schema`, as a row of its own: Spark reuses the row its values
    * point into, and what an item carries beside it must outlive that row.
    */
  def copyOf(schema: StructType, columns: Seq[String]): InternalRow => InternalRow = {
    val (at, types) = (columns.map(schema.fieldIndex).toArray, columns.map(schema(_).dataType).toArray)
    row => new GenericInternalRow(Array.tabulate[Any](at.length)(i =>
      if (row.isNullAt(at(i))) null else InternalRow.copyValue(row.get(at(i), types(i)))))
  }

  /** The same, where a row may hold several items: `toItems` turns a partition's rows into the
    * processor's items, `toRows` the processor's whole output into rows (for example one row per key
    * for all of the key's partial results, which then share one serialization).
    */
  def runPacked(vertexName: String, newProcessor: () => Processor, input: DataFrame, outputSchema: StructType)(
      toItems: Iterator[InternalRow] => Iterator[Any], toRows: Iterator[Any] => Iterator[InternalRow]): DataFrame = {
    val rows = InPlaceRows.of(input)
    val total = rows.getNumPartitions
    val (name, create) = (vertexName, newProcessor)
    val produced = rows.mapPartitionsWithIndex { (index, partition) =>
      val context = ProcessorContext(name, index, total)
      toRows(StageFailedException.namingOwnErrors(name, toItems(partition))(ProcessorTasklet(create(), context, _)))
    }
    SqlBridge.internalCreateDataFrame(input.sparkSession, produced, outputSchema)
  }
}
