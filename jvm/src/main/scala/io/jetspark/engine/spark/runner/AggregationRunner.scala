package io.jetspark.engine.spark.runner

import io.jetspark.engine.spark.rows.{ExtractedRows, PartialCodec, ProcessorStage, RowSchemas}
import io.jetspark.item.{Extracted, PickledKey, PythonValues}
import io.jetspark.core.Processor
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.core.processor._
import io.jetspark.plan.AggregationStage
import io.jetspark.plan.Vertex
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType

/** Aggregations whose operations the JVM runs, the core's processors inside the Spark tasks: grouped
  * (`aggregate`, `aggregate2`, by key or global, in one stage or two) and rolling. Items arrive extracted
  * ([[rows.RowSchemas.ExtractedSchema]]); partial accumulators cross the shuffle serialized
  * ([[rows.RowSchemas.PartialSchema]], [[rows.PartialCodec]]), keyed by the key's pickle; results leave as
  * pickles ([[PythonValues]]).
  */
object AggregationRunner {
  import RowSchemas._
  import ExtractedRows.extracted

  /** The output of aggregation vertex `v`, running `op`, over its inputs in ordinal order: the inputs of
    * an `aggregate2` where items enter it are read partition by partition ([[CoGroupedPartitions]]).
    */
  def aggregate(v: Vertex, op: AggregateOperation[Extracted, Any, Any], inputs: Seq[DataFrame]): DataFrame = {
    val Aggregate(stage, ops, keys) = v.description: @unchecked
    inputs match {
      case Seq(first, second) if ops.size == 2 && stage != AggregationStage.Combine =>
        CoGroupedPartitions.run(processors(v.name, op, stage, keyed = keys.nonEmpty, inputs = 2), first, second)
      case Seq(only) => processors(v.name, op, stage, keyed = keys.nonEmpty, inputs = 1).run(only)
      case _ => throw new IllegalStateException(s"vertex '${v.name}' has ${inputs.size} inputs, expected one")
    }
  }

  /** The output of rolling aggregation vertex `v`, running `op`: each running result keeps what its item
    * carries (its time, its sequence id).
    */
  def rolling(v: Vertex, op: AggregateOperation[Extracted, Any, Any], input: DataFrame): DataFrame = {
    val RollingAggregate(key, _) = v.description: @unchecked
    val operation = op.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val keyed = key.isDefined // the task takes this, not the key's Extractor (a Column does not serialize)
    ProcessorStage(v.name, () => if (keyed) RollingAggregateProcessor.keyed(_.asInstanceOf[Extracted].key, operation)
      else RollingAggregateProcessor.global(operation), extracted, resultRow(keyed), ItemSchema)
      .runCarrying(input, carriedColumns(input))
  }

  /** The processors of one aggregation vertex, with how rows become their items and back. */
  private def processors(vertex: String, operation: AggregateOperation[Extracted, Any, Any], stage: AggregationStage,
      keyed: Boolean, inputs: Int): ProcessorStage = {
    val op = operation.asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val keyOf: Any => Any = _.asInstanceOf[Extracted].key
    val keyFns = IndexedSeq.fill(inputs)(keyOf)
    val result = resultRow(keyed)
    val codec = new PartialCodec(vertex)
    def stageOf(p: () => Processor, in: InternalRow => Any, out: Any => InternalRow, schema: StructType) =
      ProcessorStage(vertex, p, in, out, schema)
    (stage, keyed) match {
      case (AggregationStage.Accumulate, true) => stageOf(() => new AccumulateByKeyProcessor(keyFns, op), extracted,
        pair => { val (key, acc) = pair.asInstanceOf[(PickledKey, Any)]; InternalRow(key.bytes, codec.toBytes(acc)) },
        PartialSchema)
      case (AggregationStage.Accumulate, false) => stageOf(() => new AccumulateProcessor(op), extracted,
        acc => InternalRow(Array.emptyByteArray, codec.toBytes(acc)), PartialSchema)
      case (AggregationStage.Combine, true) => stageOf(() => new CombineByKeyProcessor(op),
        row => (new PickledKey(row.getBinary(0)), codec.fromBytes(row.getBinary(1))), result, ItemSchema)
      case (AggregationStage.Combine, false) => stageOf(() => new CombineProcessor(op),
        row => codec.fromBytes(row.getBinary(1)), result, ItemSchema)
      case (AggregationStage.SingleStage, true) => stageOf(() => new AggregateByKeyProcessor(keyFns, op), extracted, result, ItemSchema)
      case (AggregationStage.SingleStage, false) => stageOf(() => new AggregateProcessor(op), extracted, result, ItemSchema)
    }
  }

  /** A result as the row of a pickled item: `(key, result)` when keyed, else the result. */
  private def resultRow(keyed: Boolean): Any => InternalRow = r => InternalRow(PythonValues.dumps(r match {
    case (key: PickledKey, value) if keyed => (key, value)
    case value => value
  }))
}
