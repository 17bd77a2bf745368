package io.jetspark.engine.spark.epoch

import io.jetspark.core.aggregate.{AggregateOperation, AggregateOperations}
import io.jetspark.core.processor.RollingAggregateProcessor
import io.jetspark.engine.spark.rows.ExtractedRows
import io.jetspark.item.{Extracted, PythonAggregations, PythonValues}
import io.jetspark.plan.VertexDescription.RollingAggregate
import io.jetspark.plan.{PhysicalDag, Vertex}
import org.apache.spark.sql.catalyst.InternalRow

/** A rolling aggregation on a stream whose operation the JVM runs: the core's [[RollingAggregateProcessor]],
  * its accumulators kept from one epoch to the next by [[EpochStage]]. Rows in: an extraction (key, values,
  * item, ts, ctl); out: after each item, its running result (`(key, result)` where keyed) with the item's
  * time, as Jet gives a rolling result its item's timestamp.
  */
object EpochRolling {

  /** Whether rolling aggregation `v` runs in Python on a stream ([[PythonEpochStage]], with
    * python/jetspark/worker/custom_aggregations.py, which runs built-in operations too): where its operation
    * has a user-defined part, or where the plan carries the items' sequence ids through it to a later
    * restore point (preserve_order), which Python's keeps beside each result and the JVM's processor does not.
    */
  def runsInPython(dag: PhysicalDag, v: Vertex): Boolean = v.description match {
    case RollingAggregate(_, _) => PythonAggregations.runsInPython(v) || dag.carriesSequenceThrough(v)
    case _ => false
  }

  /** The stage of rolling aggregation vertex `vertex` running `op`, per key where `keyed`. */
  def stage(vertex: String, keyed: Boolean, op: AggregateOperation[Extracted, Any, Any]): EpochStage = {
    // The item's time rides in the accumulator beside the operation's, as the time of the last item added:
    // the running result the processor emits right after an item then holds that item's time.
    val timed = AggregateOperations.allOf(AggregateOperations.mapping((e: TimedItem) => e.item)(op), TimeOfLast)
      .asInstanceOf[AggregateOperation[Nothing, Any, Any]]
    val extracted = ExtractedRows.extracted
    new EpochStage(vertex,
      () => if (keyed) RollingAggregateProcessor.keyed(_.asInstanceOf[TimedItem].item.key, timed)
        else RollingAggregateProcessor.global(timed),
      _.map(row => TimedItem(extracted(row), if (row.isNullAt(3)) null else row.getLong(3))),
      _.map {
        case (key, Seq(result, ts)) => InternalRow(PythonValues.dumps((key, result)), ts)
        case Seq(result, ts) => InternalRow(PythonValues.dumps(result), ts)
        case other => throw new IllegalStateException(s"vertex '$vertex': a rolling aggregation emitted $other")
      }, 3)
  }

  /** An item entering the aggregation with its time (null on a stream without timestamps). */
  private final case class TimedItem(item: Extracted, ts: Any)

  private val TimeOfLast: AggregateOperation[TimedItem, Array[Any], Any] = AggregateOperations.of[TimedItem, Array[Any], Any](
    () => Array[Any](null), (acc, e) => { acc(0) = e.ts; acc }, exportFn = _(0))
}
