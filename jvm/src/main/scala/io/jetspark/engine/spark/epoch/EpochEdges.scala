package io.jetspark.engine.spark.epoch

import io.jetspark.plan.EdgeKind
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.StructType

/** The edges of a stream's epoch on Spark ("Edges on Spark" in DESIGN.md), with the epoch's control rows
  * in band: a narrow edge keeps each partition's rows, control row included, in the same task; a
  * distributed edge shuffles data rows to their receiver and sends every control row to every receiver,
  * after the data its sender sent it, so that each receiver hears from every sender.
  */
object EpochEdges {

  /** The rows the receivers get over an edge of `kind` from `rows` (of `schema`, control in column
    * `ctlAt`): `receivers` partitions where the edge is distributed; a partitioned edge reads the canonical
    * key bytes in column `keyAt`. Also: how many senders each receiver hears from.
    */
  def realize(rows: RDD[InternalRow], schema: StructType, ctlAt: Int, kind: EdgeKind, receivers: Int,
      keyAt: Option[Int]): (RDD[InternalRow], Int) = kind match {
    // Narrow whatever the receiver's planned parallelism, as on the batch engine: the receiver runs one
    // processor per sending partition (for a source, per substream), the same ones in every epoch.
    case EdgeKind.Local | EdgeKind.Isolated => (rows, 1)
    case EdgeKind.Partitioned(_, _) =>
      val at = keyAt.getOrElse(throw new IllegalStateException("a partitioned edge without the key's column"))
      (shuffled(rows, schema, ctlAt, receivers)(_ => row => partitionOf(row.getBinary(at), receivers)), rows.getNumPartitions)
    case EdgeKind.AllToOne => (shuffled(rows, schema, ctlAt, 1)(_ => _ => 0), rows.getNumPartitions)
    // rebalance(): sender p's i-th data row goes to receiver (p + i) mod n, the same in a replayed epoch.
    case EdgeKind.RoundRobin => (shuffled(rows, schema, ctlAt, receivers) { sender =>
      var next = sender
      _ => { val target = Math.floorMod(next, receivers); next += 1; target }
    }, rows.getNumPartitions)
    case other => throw new UnsupportedOperationException(s"the epoch engine does not run ${other.describe} edges yet")
  }

  /** The partition of a key's canonical bytes among `n`: the same for equal keys in every epoch. */
  def partitionOf(key: Array[Byte], n: Int): Int = Math.floorMod(java.util.Arrays.hashCode(key), n)

  /** `rows` shuffled to `receivers` partitions: each data row to the one that `targetOf(sender)` picks
    * for it, every control row to all.
    */
  private def shuffled(rows: RDD[InternalRow], schema: StructType, ctlAt: Int, receivers: Int)(
      targetOf: Int => InternalRow => Int): RDD[InternalRow] = {
    val every = 0 until receivers
    SqlBridge.shuffleToTargets(rows, schema, receivers) { sender =>
      val target = targetOf(sender)
      row => if (row.isNullAt(ctlAt)) Iterator.single(target(row)) else every.iterator
    }
  }
}
