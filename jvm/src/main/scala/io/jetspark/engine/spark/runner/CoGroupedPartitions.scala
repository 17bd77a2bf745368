package io.jetspark.engine.spark.runner

import io.jetspark.core.ProcessorContext
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.engine.spark.rows.{InPlaceRows, ProcessorStage}
import org.apache.spark.TaskContext
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.jetspark.SqlBridge

/** Co-aggregation (`aggregate2`) on Spark: one processor per partition index reads the partition of
  * each input, as input ordinals 0 and 1, so that the core's co-aggregating processors (an
  * `aggregateOperation2` routes each item to its input's operation) see both inputs together.
  *
  * The edges give both inputs the receiver's partition count; where the aggregation is keyed and takes
  * raw items (a single stage) both are partitioned by their extracted key's bytes, so every item of a
  * key, from either input, reaches the same partition index.
  */
object CoGroupedPartitions {

  /** Runs `stage`'s processor over `first` (ordinal 0) and `second` (ordinal 1), partition by partition,
    * reading both inputs round-robin (one priority group: neither must be complete before the other).
    */
  def run(stage: ProcessorStage, first: DataFrame, second: DataFrame): DataFrame = {
    val (left, right) = (InPlaceRows.of(first), InPlaceRows.of(second))
    if (left.getNumPartitions != right.getNumPartitions)
      throw new IllegalStateException(s"vertex '${stage.vertexName}': its inputs have ${left.getNumPartitions} and " +
        s"${right.getNumPartitions} partitions; co-aggregation reads them partition by partition")
    val total = left.getNumPartitions
    val (name, create, in, out) = (stage.vertexName, stage.newProcessor, stage.toItem, stage.toRow)
    val produced = left.zipPartitions(right) { (zero, one) =>
      val context = ProcessorContext(name, TaskContext.getPartitionId(), total)
      new ProcessorTasklet(create(), context, IndexedSeq(zero.map(in), one.map(in)), Seq(Seq(0, 1))).map(out)
    }
    SqlBridge.internalCreateDataFrame(first.sparkSession, produced, stage.outputSchema)
  }
}
