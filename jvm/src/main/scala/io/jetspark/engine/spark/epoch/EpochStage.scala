package io.jetspark.engine.spark.epoch

import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.{ControlItem, IdleMessage, Processor, ProcessorContext, Watermark}
import io.jetspark.engine.spark.rows.StageFailedException
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.LongAccumulator

/** One epoch of a stateful vertex: in every partition, one processor instance that starts from the state
  * the partition committed in the epoch before, takes the epoch's items, then the watermark its senders'
  * control rows coalesce to, and commits its state as the next version ([[SqlBridge.withPartitionState]]),
  * all around the processor as [[EpochPartition]] does it.
  *
  * Input rows are data rows, and one [[EpochControl]] row (`ctl` at column `ctlAt`, the rest null) from
  * each of the `senders` upstream tasks: the epoch's barrier. Every data row of the epoch reaches the
  * processor before the watermark does: watermarks move at epoch ends, and an item is late when a window
  * it belongs to was closed by the watermark of an epoch before its own (docs/streaming.md). A missing or
  * foreign control row fails the epoch, naming the vertex, before anything is committed.
  *
  * When every sender is done, the processor completes (Jet's `complete()`: what it holds is emitted); else
  * it emits what it emits when no input waits (`tryProcess()`: a window's early results, a source's idle
  * substream) and saves a snapshot. Either way the partition's output ends with its own control row: the
  * highest watermark the processor has emitted, whether it is done, and whether it is idle: every sender
  * not done is idle (their coalesced watermark leaves idle senders out, as Jet's coalescer does), or the
  * processor's own output ends idle (a source whose substream delivered nothing for the idle timeout).
  *
  * @param toRows the processor's output items (watermarks taken out) as rows of `width` columns, the
  *               last one (`ctl`) left for the control row
  */
final class EpochStage(
    vertex: String,
    newProcessor: () => Processor,
    toItems: Iterator[InternalRow] => Iterator[Any],
    toRows: Iterator[Any] => Iterator[InternalRow],
    width: Int,
    lateEvents: Processor => Long = _ => 0L,
) extends Serializable {
  import EpochStage._

  /** `input` through the stage in `epoch` of the job whose state lives under `checkpointRoot`
    * (`operatorId` is the vertex's number in the plan). Each partition notes the size of the state it
    * commits in `stateSize`; `late`, where given, counts the events it drops as late.
    */
  def run(spark: SparkSession, input: RDD[InternalRow], ctlAt: Int, senders: Int, epoch: EpochRun, operatorId: Int,
      stateSize: LatestPerPartition, late: Option[LongAccumulator]): RDD[InternalRow] = {
    val (name, create, items, rows, columns, lateOf) = (vertex, newProcessor, toItems, toRows, width, lateEvents)
    val total = input.getNumPartitions
    val epochId = epoch.id
    SqlBridge.withPartitionState(spark, input, epoch.stateRoot, epoch.runId, operatorId, epochId) { (state, partitionRows) =>
      val partition = new EpochPartition(name, org.apache.spark.TaskContext.getPartitionId(), epochId, senders, state, ctlAt, stateSize)
      val closing = Iterator.single(()).flatMap(_ => partition.close().iterator.map(Watermark(_)))
      val processor = create()
      var tasklet: ProcessorTasklet = null
      val emitted = StageFailedException.namingOwnErrors(name, items(partition.data(partitionRows)) ++ closing) { in =>
        tasklet = new ProcessorTasklet(processor, ProcessorContext(name, partition.partition, total), IndexedSeq(in), Seq(Seq(0)),
          restored = partition.restored, atEnd = () => if (partition.done) ProcessorTasklet.Complete else ProcessorTasklet.SaveSnapshot)
        tasklet
      }
      val lateBefore = lateOf(processor)
      var sent = partition.sentBefore
      // What the processor itself says of its output (a source's substream gone idle, or active again);
      // Jet's tasklet forwards the senders' idleness around the processor, as the partition does here.
      var idleOutput = false
      val output = emitted.filter {
        case Watermark(wm) => sent = math.max(sent, wm); idleOutput = false; false
        case IdleMessage => idleOutput = true; false
        case _: ControlItem => false
        case _ => idleOutput = false; true
      }
      val control = Iterator.single(()).map { _ =>
        val ctl = partition.commit(if (partition.done) Nil else tasklet.snapshot, sent, columns, idleOutput)
        late.foreach(_.add(lateOf(processor) - lateBefore))
        ctl
      }
      rows(output).map(r => new JoinedRow(r, NullControl): InternalRow) ++ control
    }
  }
}

object EpochStage {
  /** The null `ctl` column every data row of a stage's output ends with. */
  private[epoch] val NullControl: InternalRow = new GenericInternalRow(Array[Any](null))
}
