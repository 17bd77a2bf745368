package io.jetspark.engine.spark.epoch

import io.jetspark.core.processor.SequenceId
import io.jetspark.engine.spark.rows.RowSchemas
import io.jetspark.plan.VertexDescription.{HashJoin, MapStateful, Merge, RollingAggregate, StatelessChain}
import io.jetspark.plan.{PhysicalDag, Vertex}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, IntegerType, LongType, StructField, StructType}

import scala.collection.mutable.ArrayBuffer

/** `preserve_order` on the epoch engine: the batch engine's sequence ids ([[io.jetspark.engine.spark.runner.SequenceRestore]]),
  * given and restored one epoch at a time.
  *
  * Epochs already keep their order everywhere: a vertex takes epoch N + 1 only after epoch N, whatever it
  * keeps between them. What a shuffle mixes is the order within an epoch, so an item's id numbers it
  * within its epoch only: where the plan `assignsSequence`, each data row of partition `p` gets the
  * substream `firstSubstream + p` and its position among the partition's data rows of this epoch (a
  * stream source's partition is its substream). The ids ride as four columns before `ctl`, the last
  * column; control rows have none. Python's steps carry them as on the batch engine
  * (python/jetspark/worker/carried.py).
  *
  * A receiver that `restoresSequence` sorts each partition's data rows by id, its senders' control rows
  * after them (an epoch's watermarks move at its end, after all its data: docs/streaming.md). An ordered
  * merge does the same over partition `i` of its branches, each row's ties made the merge's first
  * ([[SequenceId.mergedTies]]), as the batch engine's merge does.
  */
private[epoch] object EpochSequence {
  import RowSchemas.{FanOut, Offset, SequenceColumns, Substream, Ties}

  private val Fields = Seq(StructField(Substream, IntegerType), StructField(Offset, LongType),
    StructField(FanOut, ArrayType(IntegerType, containsNull = false)), StructField(Ties, ArrayType(IntegerType, containsNull = false)))

  /** `schema` (`ctl` its last column) with the id's columns before `ctl`. */
  def withIds(schema: StructType): StructType = StructType(schema.fields.init ++ Fields :+ schema.fields.last)

  /** Whether rows of `schema` carry ids. */
  def carried(schema: StructType): Boolean = schema.fieldNames.contains(Substream)

  /** `df` without the ids' columns, unless `keep`. */
  def keptIf(keep: Boolean, df: DataFrame): DataFrame =
    if (keep || !carried(df.schema)) df else df.select(df.columns.filterNot(SequenceColumns.contains).map(col).toSeq: _*)

  /** `rows` of `schema` (`ctl` last) with each data row's id of this epoch before `ctl`. */
  def assigned(rows: RDD[InternalRow], schema: StructType, firstSubstream: Int): RDD[InternalRow] = {
    val (width, ctlAt, types) = (schema.length, schema.length - 1, schema.fields.map(_.dataType))
    rows.mapPartitionsWithIndex { (partition, partitionRows) =>
      var offset = -1L
      partitionRows.map { row =>
        val values = new Array[Any](width + Fields.size)
        var i = 0
        while (i < ctlAt) { values(i) = if (row.isNullAt(i)) null else row.get(i, types(i)); i += 1 }
        if (row.isNullAt(ctlAt)) {
          offset += 1
          values(ctlAt) = firstSubstream + partition
          values(ctlAt + 1) = offset
          values(ctlAt + 2) = new GenericArrayData(Array.empty[Any])
          values(ctlAt + 3) = new GenericArrayData(Array.empty[Any])
        } else values(values.length - 1) = row.getBinary(ctlAt)
        InternalRow.fromSeq(values.toSeq)
      }
    }
  }

  /** `rows` of `schema` (with ids) where every partition holds its data rows in id order, its control rows
    * after them.
    */
  def restored(rows: RDD[InternalRow], schema: StructType): RDD[InternalRow] = {
    val idOf = sequenceIdOf(schema)
    val ctlAt = schema.length - 1
    rows.mapPartitions { partitionRows =>
      val data = ArrayBuffer.empty[(SequenceId, InternalRow)]
      val controls = ArrayBuffer.empty[InternalRow]
      partitionRows.foreach { reused =>
        val row = reused.copy() // a shuffle reuses the row its values point into
        if (row.isNullAt(ctlAt)) data += idOf(row) -> row else controls += row
      }
      data.sortBy(_._1)(Order).iterator.map(_._2) ++ controls.iterator
    }
  }

  /** `rows` of `schema` (with ids) with each data row's ties those of an ordered merge that took it from
    * branch `lane` (the core's [[SequenceId.mergedTies]]): sorted by id, the rows then come in the merge's
    * order, and keep it wherever they go next.
    */
  def laned(rows: RDD[InternalRow], schema: StructType, lane: Int): RDD[InternalRow] = {
    val (fanOut, ties, ctlAt, types) = (schema.fieldIndex(FanOut), schema.fieldIndex(Ties), schema.length - 1, schema.fields.map(_.dataType))
    rows.map { row =>
      if (!row.isNullAt(ctlAt)) row
      else {
        val values = row.toSeq(types.toIndexedSeq).toArray
        val merged = SequenceId.mergedTies(row.getArray(fanOut).toIntArray().toSeq, row.getArray(ties).toIntArray().toSeq, lane)
        values(ties) = new GenericArrayData(merged.toArray[Any])
        InternalRow.fromSeq(values.toSeq)
      }
    }
  }

  // Substream, then offset, ties and path: the order of the stream (the brute-force reference's, within an epoch).
  private val Order: Ordering[SequenceId] = Ordering.by[SequenceId, Int](_.substream).orElse(SequenceId.withinSubstream)

  private def sequenceIdOf(schema: StructType): InternalRow => SequenceId = {
    val (s, o, f, t) = (schema.fieldIndex(Substream), schema.fieldIndex(Offset), schema.fieldIndex(FanOut), schema.fieldIndex(Ties))
    row => SequenceId.of(row.getInt(s), row.getLong(o), row.getArray(f).toIntArray(), row.getArray(t).toIntArray())
  }

  /** Fails, naming the vertex, where the plan needs ids carried through a vertex the epoch engine does not
    * carry them through: it carries them through Python's steps, `map_stateful`, a rolling aggregation run
    * in Python, a hash join (its streamed side, as on the batch engine) and a merge. Windows and the JVM's
    * aggregations make results of many items, which no one item's id can stand for.
    */
  def requireSupported(dag: PhysicalDag, runsInPython: Vertex => Boolean): Unit = dag.vertices.foreach { v =>
    v.description match {
      case _ if !dag.carriesSequenceThrough(v) => ()
      case StatelessChain(_) | MapStateful(_, _, _) | HashJoin(_, _, _) | Merge(_, _) => ()
      case RollingAggregate(_, _) if runsInPython(v) => ()
      case _ => throw new UnsupportedOperationException(s"vertex '${v.name}' (${v.description.describe}): preserve_order " +
        "needs sequence ids carried through it to a later restore point, which the Spark streaming engine does not do yet")
    }
  }
}
