package org.apache.spark.sql.jetspark

import org.apache.spark.Partitioner
import org.apache.spark.rdd.{RDD, ShuffledRDD}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.execution.{LogicalRDD, UnsafeRowSerializer}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreOps}
import org.apache.spark.sql.types.{BinaryType, IntegerType, StructField, StructType}
import org.apache.spark.sql.{Column, DataFrame, SparkSession, classic}

/** The few `private[sql]` Spark methods jetspark's engines need, reachable only from a package under
  * `org.apache.spark.sql`. Nothing else lives here, so an upgrade of Spark has one place to check.
  */
object SqlBridge {

  /** Applies a Python Arrow map UDF (built in Python with `SQL_MAP_ARROW_ITER_UDF` over named
    * columns) to `df`: how fused Python steps run in Spark's Python workers.
    */
  def mapInArrow(df: DataFrame, udf: Column): DataFrame =
    df.asInstanceOf[classic.Dataset[org.apache.spark.sql.Row]].mapInArrow(udf, false, null)

  /** `df` over other rows of its own attributes, as a checkpoint is: a column resolved against `df` (the
    * user's `df.k`) resolves against it too, where a DataFrame made anew would have new attributes. (Its
    * hidden metadata columns, a file source's `_metadata`, do not: they are not among the rows.)
    */
  def withRows(df: DataFrame, rows: RDD[InternalRow]): DataFrame = {
    val session = df.sparkSession.asInstanceOf[classic.SparkSession]
    classic.Dataset.ofRows(session, LogicalRDD(df.queryExecution.analyzed.output, rows)(session))
  }

  /** A DataFrame over rows that processors produced, without converting them to external Rows. */
  def internalCreateDataFrame(spark: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    spark.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)

  /** The state of one partition of a stateful vertex in one epoch, in Spark's state store: the bytes the
    * epoch before committed (None in the first), and `commit`, which stores this epoch's bytes as the next
    * version. A partition's state is one value (the processors' snapshot, see `EpochStage`).
    */
  trait PartitionState {
    def load(): Option[Array[Byte]]
    def commit(bytes: Array[Byte]): Unit
  }

  private val StateKeySchema = StructType(Seq(StructField("k", IntegerType, nullable = false)))
  private val StateValueSchema = StructType(Seq(StructField("v", BinaryType, nullable = false)))

  /** `rdd`'s partitions each with its [[PartitionState]] at `version` of operator `operatorId` under
    * `checkpointRoot`: Spark's state store keeps the versions (per batch, cached on the executor that
    * last wrote them, checkpointed through Hadoop FileSystem) and schedules each partition where its
    * state is cached. `f` must consume its input and call `commit` before its output ends; a task that
    * ends without a commit aborts its version, so a retried epoch starts again from `version`.
    */
  def withPartitionState(spark: SparkSession, rdd: RDD[InternalRow], checkpointRoot: String, queryRunId: java.util.UUID,
      operatorId: Long, version: Long)(f: (PartitionState, Iterator[InternalRow]) => Iterator[InternalRow]): RDD[InternalRow] = {
    val info = StatefulOperatorStateInfo(checkpointRoot, queryRunId, operatorId, version, rdd.getNumPartitions, None, None)
    new StateStoreOps(rdd).mapPartitionsWithStateStore[InternalRow](spark.asInstanceOf[classic.SparkSession].sqlContext, info,
        StateKeySchema, StateValueSchema, NoPrefixKeyStateEncoderSpec(StateKeySchema)) { (store: StateStore, rows: Iterator[InternalRow]) =>
      val key = UnsafeProjection.create(StateKeySchema).apply(new GenericInternalRow(Array[Any](0))).copy()
      val state = new PartitionState {
        override def load(): Option[Array[Byte]] = Option(store.get(key, StateStore.DEFAULT_COL_FAMILY_NAME)).map(_.getBinary(0))
        override def commit(bytes: Array[Byte]): Unit = {
          store.put(key, UnsafeProjection.create(StateValueSchema).apply(new GenericInternalRow(Array[Any](bytes))).copy(),
            StateStore.DEFAULT_COL_FAMILY_NAME)
          store.commit()
        }
      }
      f(state, rows)
    }
  }

  /** A shuffle of `rows` (of `schema`) into `partitions` partitions, each row to the partitions that
    * `targetsOf(sender)` names for it (several for a row every receiver must see), rows from one sender in
    * the order it sent them: Spark's row shuffle, as its exchanges run it, with the partition chosen by the
    * caller. Each sending partition has a function of its own, which may keep state over its rows (a
    * round-robin's next target).
    */
  def shuffleToTargets(rows: RDD[InternalRow], schema: StructType, partitions: Int)(
      targetsOf: Int => InternalRow => Iterator[Int]): RDD[InternalRow] = {
    val fields = schema.length
    val pairs = rows.mapPartitionsWithIndex { (sender, it) =>
      val toUnsafe = UnsafeProjection.create(schema)
      val targets = targetsOf(sender)
      it.flatMap { row =>
        val unsafe = toUnsafe(row).copy()
        targets(row).map(t => (t, unsafe: InternalRow))
      }
    }
    new ShuffledRDD[Int, InternalRow, InternalRow](pairs, new TargetPartitioner(partitions))
      .setSerializer(new UnsafeRowSerializer(fields))
      .map(_._2)
  }

  private final class TargetPartitioner(override val numPartitions: Int) extends Partitioner {
    override def getPartition(key: Any): Int = key.asInstanceOf[Int]
  }
}
