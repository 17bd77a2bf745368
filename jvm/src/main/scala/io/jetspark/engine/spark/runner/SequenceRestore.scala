package io.jetspark.engine.spark.runner

import io.jetspark.core.ProcessorContext
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.processor.{OrderedMergeProcessor, SequenceId, SequenceRestoreProcessor, Sequenced}
import io.jetspark.engine.spark.rows.{InPlaceRows, ProcessorStage, RowSchemas}
import io.jetspark.plan.VertexDescription.{AddTimestamps, Aggregate, Distinct, HashJoin, MapStateful, Merge, RollingAggregate, StatelessChain, WindowAggregate}
import io.jetspark.plan.{Edge, PhysicalDag, Vertex}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.{ArrayType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.sql.{DataFrame, SparkSession}

/** `preserve_order` across keyed shuffles and diamonds on the Spark batch engine (DESIGN.md, Planner
  * "Order"): sequence ids where the plan says items carry them, restored order where it says so.
  *
  *  - Ids: a vertex that `assignsSequence` appends to each output row its id, four columns
  *    ([[rows.RowSchemas.SequenceColumns]]): the substream (its partition: a source's partition, or an order
  *    producer's processor, above those of the vertices that assign ids before it in the plan, so that
  *    two streams never share one: merged, the earlier vertex's items come first, as the brute-force
  *    reference orders unrelated streams by origin), the offset (the row's position in that partition),
  *    an empty fan-out path and empty ties. A fused Python chain on the way keeps the id of the record it
  *    ran on and appends `j` to the path for the j-th output of each flat_map step
  *    (`python/jetspark/worker/carried.py`); an extraction of keys and values keeps the ids beside the extracted
  *    columns (and so `addTimestamps`, whose items come out as they went in, keeps them); through
  *    `map_stateful` (Python) and a rolling aggregation (one output per item) each output keeps its item's
  *    id, and so does the first item of a key that a distinct passes on; a hash join, a map over its
  *    streamed side, gives the j-th output for a streamed item that item's id with `j` appended to the
  *    path ([[HashJoinRunner]]). Ids ride beside the items' time where both are carried: time first
  *    ([[rows.RowSchemas.carriedColumns]]).
  *  - Diamond: a merge `orderedBySequence` runs the core's [[OrderedMergeProcessor]] over partition i
  *    of every branch, one lane per branch: by path, then lane, then the order on the branch (the
  *    brute-force reference sorts at a merge by id, stably). The planner lines the branches up
  *    (`OrderPlanner.gatherMerges`): either they are isolated from their fork, so partition i of each
  *    holds the same items' outputs, or each reaches the merge all-to-one, as one partition in sequence
  *    order (restored where it had several senders). Each output's ties become the core's
  *    [[SequenceId.mergedTies]] (which say that order), so that the merged order is kept wherever they go
  *    next, through flat_maps and later merges alike.
  *  - Order: substream, offset, then ties and path as one sequence, element by element (a prefix first):
  *    the order of the stream at that point ([[SequenceId.withinSubstream]]).
  *  - Restore: the receiver of an edge that `restoresSequence` runs the core's
  *    [[SequenceRestoreProcessor]] over each of its partitions. A batch job is one epoch: the senders
  *    send no progress marks, and completing the input passes every offset, so the processor releases
  *    the whole partition in id order.
  *  - Edges that carry no ids get none: without preserve_order nothing here runs.
  *
  * Vertices that would have to carry ids through them other than these (aggregations and windows
  * feeding a later restore point) fail before any Spark job starts, naming the vertex.
  */
private[spark] final class SequenceRestore(spark: SparkSession, dag: PhysicalDag) {
  import SequenceRestore._
  import RowSchemas.{FanOut, Offset, SequenceColumns, Substream, Ties}

  /** `df`, the output of `v`, with each row's id appended where `v` assigns ids. */
  def assignedWhereNeeded(v: Vertex, df: DataFrame): DataFrame =
    if (!v.assignsSequence) df
    else {
      val types = df.schema.fields.map(_.dataType)
      val width = types.length
      val first = dag.firstSubstream(v)
      val input = InPlaceRows.of(df)
      if (input.getNumPartitions > (1 << PhysicalDag.SubstreamBits))
        throw new UnsupportedOperationException(s"vertex '${v.name}' (${v.description.describe}): preserve_order numbers " +
          s"the items of at most ${1 << PhysicalDag.SubstreamBits} partitions, here ${input.getNumPartitions}")
      val rows = input.mapPartitionsWithIndex { (index, partition) =>
        val substream = first + index
        var offset = -1L
        partition.map { reused =>
          val row = reused.copy() // Spark reuses the row its values point into
          offset += 1
          val values = new Array[Any](width + SequenceColumns.size)
          var i = 0
          while (i < width) { values(i) = if (row.isNullAt(i)) null else row.get(i, types(i)); i += 1 }
          values(width) = substream
          values(width + 1) = offset
          values(width + 2) = new GenericArrayData(Array.empty[Any])
          values(width + 3) = new GenericArrayData(Array.empty[Any])
          InternalRow.fromSeq(values.toSeq): InternalRow
        }
      }
      SqlBridge.internalCreateDataFrame(spark, rows, StructType(df.schema.fields ++ Fields))
    }

  /** What a sender gives an edge: `df` with its ids only if the edge carries them. */
  def forEdge(edge: Edge, df: DataFrame): DataFrame =
    if (edge.carriesSequence || !df.columns.contains(Substream)) df else df.drop(SequenceColumns: _*)

  /** What the receiver of `edge` gets once the edge moved `moved`: in sequence order where the edge
    * restores it, and without ids unless the receiver carries them on.
    */
  def received(edge: Edge, moved: DataFrame): DataFrame = {
    val ordered = if (edge.restoresSequence) restore(edge, moved) else moved
    if (dag.keepsSequence(edge) || !ordered.columns.contains(Substream)) ordered else ordered.drop(SequenceColumns: _*)
  }

  private def restore(edge: Edge, moved: DataFrame): DataFrame = {
    val senders = dag.vertex(edge.from).localParallelism
    ProcessorStage(s"${edge.to} (sequence restore of input ${edge.toOrdinal})", () => new SequenceRestoreProcessor(senders),
      sequencedRow(moved.schema), s => s.asInstanceOf[Sequenced].item.asInstanceOf[InternalRow], moved.schema).run(moved)
  }

  /** The merge of a diamond: partition i of every branch merged in sequence order. */
  def orderedMerge(v: Vertex, branches: Seq[DataFrame]): DataFrame = {
    val schema = branches.head.schema
    val toItem = sequencedRow(schema)
    val types = schema.fields.map(_.dataType)
    val (fanOut, ties) = (schema.fieldIndex(FanOut), schema.fieldIndex(Ties))
    val rdds = branches.map(InPlaceRows.of)
    val (name, lanes, partitions) = (v.name, branches.size, rdds.head.getNumPartitions)
    // A row's ties become the merge's (the core's SequenceId.mergedTies of its path, its lane and its ties)
    // before the merge compares ids, and leave with it: the merged order is kept wherever the rows go next.
    val merge: Seq[Iterator[InternalRow]] => Iterator[InternalRow] = inputs => {
      val index = org.apache.spark.TaskContext.getPartitionId()
      val laned = inputs.zipWithIndex.map { case (rows, lane) =>
        rows.map { row =>
          val values = row.toSeq(types.toIndexedSeq).toArray
          val merged = SequenceId.mergedTies(row.getArray(fanOut).toIntArray().toSeq, row.getArray(ties).toIntArray().toSeq, lane)
          values(ties) = new GenericArrayData(merged.toArray[Any])
          toItem(InternalRow.fromSeq(values.toSeq))
        }
      }
      new ProcessorTasklet(new OrderedMergeProcessor(lanes), ProcessorContext(name, index, partitions), laned.toIndexedSeq,
        Seq(inputs.indices)).map(_.asInstanceOf[Sequenced].item.asInstanceOf[InternalRow])
    }
    val merged: RDD[InternalRow] = rdds match {
      case Seq(a, b) => a.zipPartitions(b)((x, y) => merge(Seq(x, y)))
      case Seq(a, b, c) => a.zipPartitions(b, c)((x, y, z) => merge(Seq(x, y, z)))
      case Seq(a, b, c, d) => a.zipPartitions(b, c, d)((w, x, y, z) => merge(Seq(w, x, y, z)))
      case _ => throw new IllegalStateException(s"vertex '${v.name}': ordered merge of ${rdds.size} inputs")
    }
    SqlBridge.internalCreateDataFrame(spark, merged, schema)
  }
}

object SequenceRestore {
  import RowSchemas.{FanOut, Offset, Substream, Ties}
  private val Fields = Seq(StructField(Substream, IntegerType, nullable = false), StructField(Offset, LongType, nullable = false),
    StructField(FanOut, ArrayType(IntegerType, containsNull = false), nullable = false),
    StructField(Ties, ArrayType(IntegerType, containsNull = false), nullable = false))

  /** A row of `schema` (which holds the id columns) as the core's [[Sequenced]] item, the row copied. */
  private def sequencedRow(schema: StructType): InternalRow => Sequenced = {
    val (s, o, f, t) = (schema.fieldIndex(Substream), schema.fieldIndex(Offset), schema.fieldIndex(FanOut), schema.fieldIndex(Ties))
    row => Sequenced(SequenceId.of(row.getInt(s), row.getLong(o), row.getArray(f).toIntArray(), row.getArray(t).toIntArray()),
      row.copy())
  }

  /** Whether the extraction on input `ordinal` of `v` keeps the items' ids (for the restore point after it). */
  def extractionKeepsSequence(dag: PhysicalDag, v: Vertex, ordinal: Int): Boolean =
    dag.edgesInto(v.name).exists(e => e.toOrdinal == ordinal && e.carriesSequence)

  /** Fails, naming the vertex, where the plan needs ids carried through a vertex this engine cannot carry
    * them through.
    */
  def requireSupported(dag: PhysicalDag): Unit = dag.vertices.foreach { v =>
    val carriesThrough = dag.carriesSequenceThrough(v)
    def refuse(why: String) = throw new UnsupportedOperationException(
      s"vertex '${v.name}' (${v.description.describe}): preserve_order needs sequence ids carried through it to a later " +
        s"restore point, $why")
    v.description match {
      case _ if !carriesThrough => ()
      case StatelessChain(_) | MapStateful(_, _, _) | RollingAggregate(_, _) | HashJoin(_, _, _) | AddTimestamps(_, _) |
           Merge(_, _) | Distinct(_) => ()
      // An order-sensitive aggregation (to_list) keeps its input in order, and so the planner walks the ids up
      // through it; but each result is made of many items, and no one item's id can stand for it.
      case Aggregate(_, _, _) | WindowAggregate(_, _, _, _) =>
        refuse("which has no meaning for an aggregation: each result is made of many items, so no item's sequence id " +
          "can be carried to it; its results would have to start a new ordered stream, which the Spark batch engine " +
          "does not do yet behind an order-sensitive operation (to_list)")
      case _ => refuse("which the Spark batch engine does not do yet")
    }
  }
}
