package io.jetspark.engine.spark.epoch

import io.jetspark.plan.EdgeKind
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.types.StructType

import scala.collection.mutable.ArrayBuffer

/** The epoch of a vertex that keeps nothing from one epoch to the next (Python steps, a merge, a hash
  * join, a sink's input) where it hears from several senders: behind a distributed edge, or the branches
  * of a merge. Each of its partitions still ends its output with one control row of its own, as every
  * sender does (docs/streaming.md): the senders' watermarks coalesced (the least over those not done;
  * done once all are; idle where every sender not done is), so that a receiver further on counts one
  * sender per partition. Its senders'
  * control rows are its barrier, checked as a stateful vertex checks them.
  */
object StatelessEpoch {

  /** `rows` (rows of `width` columns, the control row's bytes in column `ctlAt`), whose every partition
    * heard from `senders` senders, with each partition's control rows replaced by one of its own, after
    * its data rows.
    */
  def ownControls(vertex: String, rows: RDD[InternalRow], ctlAt: Int, width: Int, senders: Int, epoch: Long): RDD[InternalRow] =
    rows.mapPartitionsWithIndex { (partition, partitionRows) =>
      val controls = ArrayBuffer.empty[EpochControl]
      val data = partitionRows.filter { row =>
        row.isNullAt(ctlAt) || { controls += EpochControl.decode(row.getBinary(ctlAt)); false }
      }
      data ++ Iterator.single(()).map { _ =>
        val coalesced = EpochControl.barrier(vertex, partition, epoch, controls.toSeq, senders, Long.MinValue)
        val done = controls.forall(_.done)
        val ctl = new GenericInternalRow(width)
        ctl.update(ctlAt, EpochControl(partition, epoch, coalesced.watermark, done, idle = !done && coalesced.idle).encode)
        ctl: InternalRow
      }
    }

  /** The branches of merge vertex `vertex` (rows of `schema`, each partition with one control row) as
    * one. Where the branches have as many partitions, partition `i` holds partition `i` of each, as Jet's
    * merge processor `i` reads processor `i` of each branch over isolated local edges (over a stream's
    * source, the same substream). Else each branch is spread round-robin over the merge's `parallelism`
    * partitions, and each of them hears from every sender of every branch. Each partition ends with its own
    * control row. A merge `ordered` by sequence id (whose branches the planner lines up partition by
    * partition) gives each partition's data rows in id order ([[EpochSequence]]).
    */
  def merged(vertex: String, branches: Seq[RDD[InternalRow]], schema: StructType, parallelism: Int, epoch: Long,
      ordered: Boolean): RDD[InternalRow] = {
    val (ctlAt, width) = (schema.length - 1, schema.length)
    val widths = branches.map(_.getNumPartitions)
    if (widths.distinct.size == 1) {
      // Partition i hears from partition i of each branch: told apart by the branch.
      val labelled = branches.zipWithIndex.map { case (rows, branch) =>
        val own = relabelled(rows, ctlAt, width, _ => branch)
        if (ordered) EpochSequence.laned(own, schema, branch) else own
      }
      val all = labelled.reduce(zip)
      ownControls(vertex, if (ordered) EpochSequence.restored(all, schema) else all, ctlAt, width, branches.size, epoch)
    } else if (ordered) {
      throw new IllegalStateException(s"vertex '$vertex': an ordered merge of branches of ${widths.mkString(", ")} partitions")
    } else {
      val firsts = widths.scanLeft(0)(_ + _)
      val spread = branches.zip(firsts).map { case (rows, first) =>
        EpochEdges.realize(relabelled(rows, ctlAt, width, first + _), schema, ctlAt, EdgeKind.RoundRobin, parallelism, None)._1
      }
      ownControls(vertex, spread.reduce(zip), ctlAt, width, widths.sum, epoch)
    }
  }

  private def zip(a: RDD[InternalRow], b: RDD[InternalRow]): RDD[InternalRow] =
    a.zipPartitions(b, preservesPartitioning = false)((x, y) => x ++ y)

  /** `rows` with the control row of partition `p` sent by `sender(p)` (a control row holds nothing else). */
  private def relabelled(rows: RDD[InternalRow], ctlAt: Int, width: Int, sender: Int => Int): RDD[InternalRow] =
    rows.mapPartitionsWithIndex { (partition, partitionRows) =>
      val to = sender(partition)
      partitionRows.map { row =>
        if (row.isNullAt(ctlAt)) row
        else {
          val ctl = new GenericInternalRow(width)
          ctl.update(ctlAt, EpochControl.decode(row.getBinary(ctlAt)).copy(sender = to).encode)
          ctl
        }
      }
    }
}
