package io.jetspark.engine.spark.epoch

import io.jetspark.core.snapshot.SnapshotEntry
import io.jetspark.engine.spark.rows.InPlaceRows
import io.jetspark.engine.spark.rows.RowSchemas.{Failure, Item}
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.util.LongAccumulator

import java.util.concurrent.ConcurrentHashMap

/** One epoch of a stateful vertex whose work is a Python UDF that keeps state over its partition's items
  * (`map_stateful`, a rolling aggregation or a window with a user-defined part): the partition's Python
  * state, pickled, is kept from one epoch to the next in Spark's state store, as an [[EpochStage]] keeps a
  * processor's, by the same [[EpochPartition]] discipline: epoch N loads version N and commits version
  * N + 1 once the senders' control rows (the barrier) are all in.
  *
  * The state travels in band, in a column `state` that is null on every other row
  * (python/jetspark/worker/epoch_state.py). The partition keeps the senders' control rows out of the
  * UDF's input and ends that input with what they coalesce to, the epoch's end, so that the UDF acts on
  * the new watermark after the epoch's items, as a processor does:
  * {{{
  *   [state row: version N] ++ the epoch's data rows ++ [epoch's end]
  *       ──UDF──▶ its outputs ++ [state row: N + 1, with the count of the events it dropped as late]
  * }}}
  * The UDF's input and the state store's commit are the two ends of one task: the partition is made where
  * its state is loaded and committed, at the output's end, and handed to the input's start
  * ([[PythonEpochStage.Handoff]]). The UDF asks for its input only once its output is asked for, so the
  * partition is there before its first row.
  */
final class PythonEpochStage(vertex: String, udf: Column, routesFailures: Boolean) {
  import PythonEpochStage._

  /** `input` (rows of `schema`, `ctl` its last column) through the UDF in `epoch`, from `senders` upstream
    * tasks; `operatorId` is the vertex's number in the plan. The output: the UDF's items with their time
    * and the partition's control row ([[EpochEngine.ItemRowSchema]]); where the stage `routesFailures`, with
    * the UDF's failure beside each item, the records its function failed on being dead letters
    * ([[EpochEngine.RoutedItemRowSchema]]). Where the input carries the items' sequence ids
    * ([[EpochSequence]]), each output keeps its item's. `late`, where given, counts the events the UDF
    * dropped as late.
    */
  def run(spark: SparkSession, input: RDD[InternalRow], schema: StructType, senders: Int, epoch: EpochRun,
      operatorId: Int, stateSize: LatestPerPartition, late: Option[LongAccumulator] = None): DataFrame = {
    // The Handoff needs the UDF's input pulled by the task's own thread, as Spark's default runner does.
    if (spark.conf.get(PipelinedRunner, "false").toBoolean) throw new UnsupportedOperationException(
      s"vertex '$vertex': a stream's Python stage with state does not run with $PipelinedRunner=true")
    val (name, epochId, width, routed, timeMs) = (vertex, epoch.id, schema.length, routesFailures, epoch.timeMs)
    val sequenced = EpochSequence.carried(schema)
    val plain = if (routed) EpochEngine.RoutedItemRowSchema else EpochEngine.ItemRowSchema
    val outSchema = if (sequenced) EpochSequence.withIds(plain) else plain
    // The UDF's output: item, failure, what the items carry (ts, the ids where carried), ctl, state
    // (python/jetspark/worker/epoch_state.py).
    val carriedTypes = outSchema.fields.filterNot(f => f.name == Item || f.name == Failure).init.map(_.dataType).toIndexedSeq
    val stateAt = OutTsAt + carriedTypes.length + 1
    val withState = input.mapPartitions { rows =>
      lazy val partition = Handoff.take(name, operatorId)
      def only(state: Array[Byte]): InternalRow = {
        val row = new GenericInternalRow(width + 1)
        row.update(width, state)
        row
      }
      val loaded = Iterator.single(()).map { _ =>
        val state = partition.restored.collectFirst { case SnapshotEntry(PythonStateKey, bytes: Array[Byte]) => bytes }
        // State another kind of stage wrote (a rolling aggregation runs in the JVM or in Python as the plan
        // needs): starting from nothing would lose it without a word.
        if (state.isEmpty && partition.restored.nonEmpty) throw new IllegalStateException(s"vertex '$name': its " +
          "checkpointed state was written by the JVM, not by Python; a job resumes only with the plan that wrote it")
        only(state.orNull)
      }
      val end = Iterator.single(()).map { _ =>
        partition.close()
        only(EpochEnd(partition.coalesced, partition.done, timeMs).json)
      }
      loaded ++ partition.data(rows).map(r => new JoinedRow(r, NoState): InternalRow) ++ end
    }
    val stateful = SqlBridge.mapInArrow(SqlBridge.internalCreateDataFrame(spark, withState, schema.add(StateField)), udf)
    val out = SqlBridge.withPartitionState(spark, InPlaceRows.of(stateful), epoch.stateRoot, epoch.runId, operatorId, epochId) {
      (state, rows) =>
        val partition = new EpochPartition(name, TaskContext.getPartitionId(), epochId, senders, state, width - 1, stateSize)
        Handoff.give(operatorId, partition)
        var committed = false
        rows.map { row =>
          if (committed) throw new IllegalStateException(s"vertex '$name': Python gave rows after the partition's state")
          if (row.isNullAt(stateAt)) {
            // Item, failure where routed, then what the item carries (ts, ids), then a null ctl.
            val carried = carriedTypes.indices.map { j =>
              if (row.isNullAt(OutTsAt + j)) null
              else row.get(OutTsAt + j, carriedTypes(j)) match { case a: ArrayData => a.copy(); case value => value }
            }
            val failure = if (row.isNullAt(OutFailureAt)) null else row.getUTF8String(OutFailureAt).clone()
            InternalRow.fromSeq((row.getBinary(0) +: (if (routed) Seq(failure) else Nil)) ++ carried :+ null)
          } else {
            committed = true
            if (!row.isNullAt(OutTsAt)) late.foreach(_.add(row.getLong(OutTsAt)))
            val kept = if (partition.done) Nil else Seq(SnapshotEntry(PythonStateKey, row.getBinary(stateAt)))
            partition.commit(kept, math.max(partition.sentBefore, partition.coalesced), outSchema.length)
          }
        } ++ Iterator.single(()).flatMap { _ =>
          if (!committed) throw new IllegalStateException(s"vertex '$name', partition ${partition.partition}: " +
            "Python ended its output without the partition's state")
          Iterator.empty
        }
    }
    SqlBridge.internalCreateDataFrame(spark, out, outSchema)
  }
}

object PythonEpochStage {
  /** Spark's runner that writes a Python UDF's input from a thread of its own. */
  private val PipelinedRunner = "spark.python.udf.pipelined.enabled"

  /** The column that holds the partition's pickled Python state on the first row of the UDF's input and the
    * last of its output, and on the last row of its input the epoch's end ([[EpochEnd]]).
    */
  val StateField: StructField = StructField("state", BinaryType)
  /** The key of the Python state among the partition's entries. */
  case object PythonStateKey

  private val OutFailureAt = 1
  private val OutTsAt = 2
  private val NoState: InternalRow = new GenericInternalRow(1)

  /** What the UDF's input ends with: the watermark the senders coalesced to in this epoch (never below
    * the epoch before's), whether they are all done (nothing follows: the stage emits all it holds), and
    * the epoch's time ([[EpochClock]]), which early results are due by. JSON in the `state` column.
    */
  private final case class EpochEnd(watermark: Long, done: Boolean, timeMs: Long) {
    def json: Array[Byte] =
      s"""{"watermark": $watermark, "done": $done, "time_ms": $timeMs}""".getBytes(java.nio.charset.StandardCharsets.UTF_8)
  }

  /** Hands the partition a task made for a vertex (`operatorId`), its state loaded, from the output's end
    * to the same task's input of the UDF: both ends run in that task, the input pulled only after the
    * partition was given.
    */
  private object Handoff {
    private val waiting = new ConcurrentHashMap[(Long, Int), EpochPartition]()

    def give(operatorId: Int, partition: EpochPartition): Unit = {
      val task = TaskContext.get()
      val at = (task.taskAttemptId(), operatorId)
      waiting.put(at, partition)
      task.addTaskCompletionListener[Unit](_ => waiting.remove(at))
    }

    def take(vertex: String, operatorId: Int): EpochPartition =
      Option(waiting.remove((TaskContext.get().taskAttemptId(), operatorId))).getOrElse(throw new IllegalStateException(
        s"vertex '$vertex': the Python UDF read its input before the partition's state was loaded"))
  }
}
