package io.jetspark.engine.spark.runner

import io.jetspark.core.ProcessorContext
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.processor.{HashJoinProcessor, JoinClause}
import io.jetspark.engine.spark.rows.{ExtractedRows, InPlaceRows, ProcessorStage, RowSchemas}
import io.jetspark.item.{Extracted, PickledItem, PickledKey, PythonValues}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types.StructType
import io.jetspark.plan.Vertex
import io.jetspark.plan.VertexDescription.HashJoin
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.{Column, DataFrame, SparkSession}

/** `hash_join` / `inner_hash_join` (and their forms with several enriching sides) on Spark: every
  * enriching side is collected and broadcast, and the core's [[HashJoinProcessor]] joins each partition
  * of the streamed side with them. The output is the pickled tuple `(left, right_1, ..., right_n)` of
  * each combination of matches (`None` for a side without a match, unless `inner`), for the mapper's
  * Python UDF.
  *
  * A join is a map over its streamed side (Jet's `hashJoin`), so what a streamed row carries beside its
  * item ([[rows.RowSchemas.carriedColumns]]) goes to every output for it:
  *  - its time ([[rows.RowSchemas.Ts]], on the way to a window: [[CarriedTimestamps]]), as Jet's join gives
  *    its output the left item's timestamp; the enriching sides arrive without theirs;
  *  - its sequence id (preserve_order, on the way to a restore point: [[SequenceRestore]]), the j-th
  *    combination of matches for it with `j` appended to its fan-out path, as a flat_map's j-th output
  *    gets: a left item may give several outputs (several matches on a side, or combinations of matches
  *    on several), and each needs an id of its own that orders it after the one before. Every output
  *    gets a `j`, also the only one, as the brute-force reference numbers them. The matches of one side
  *    come in the order the side was collected (partition by partition).
  *
  * Keys are extracted per input: an enriching side's rows carry their clause's right key as the key; a
  * streamed row carries the first clause's left key as the key and the other clauses' left keys, as
  * canonical key bytes, as its values (see `PythonWork.pythonExtractions`).
  */
object HashJoinRunner {

  /** The output of hash join vertex `v`: its streamed side `streamed` joined with its `enriching` sides
    * (in ordinal order), each tuple of matches mapped by Python's `mapper` UDF.
    */
  def run(v: Vertex, streamed: DataFrame, enriching: Seq[DataFrame], mapper: Column): DataFrame = {
    val HashJoin(_, _, inner) = v.description: @unchecked
    SqlBridge.mapInArrow(joined(v.name, streamed, tables(streamed.sparkSession, enriching), inner), mapper)
  }

  /** What an enriching side's extraction (key, values, item) is looked up in: its (key, item) pairs, collected
    * and broadcast. A stream's join builds them once for the job's life.
    */
  def tables(spark: SparkSession, enriching: Seq[DataFrame]): Seq[Broadcast[Array[(Array[Byte], Array[Byte])]]] =
    enriching.map(side => spark.sparkContext.broadcast(InPlaceRows.of(side).map(r => (r.getBinary(0), r.getBinary(2))).collect()))

  /** The streamed side's rows (an extraction, then what they carry) joined with `tables`: the tuples of
    * matches, with what each streamed row carries. Rows with a value in column `passedOn` (a stream
    * epoch's control rows) do not enter the join: they follow the partition's joined rows, that column
    * last, the item null.
    */
  def joined(vertexName: String, streamed: DataFrame, tables: Seq[Broadcast[Array[(Array[Byte], Array[Byte])]]], inner: Boolean,
      passedOn: Option[String] = None): DataFrame = {
    val sides = tables.size
    val toExtracted = ExtractedRows.extracted
    val carried = RowSchemas.carriedColumns(streamed) ++ passedOn
    val fields = carried.map(streamed.schema.apply)
    val types = fields.map(_.dataType).toArray
    val fanOut = carried.indexOf(RowSchemas.FanOut) // -1: no ids carried
    val passedAt = passedOn.map(streamed.schema.fieldIndex).getOrElse(-1)
    val copyCarried = ProcessorStage.copyOf(streamed.schema, carried)
    val toItem: InternalRow => Streamed = row => new Streamed(toExtracted(row), copyCarried(row))
    val input = InPlaceRows.of(streamed)
    val total = input.getNumPartitions
    val rows = input.mapPartitionsWithIndex { (index, partition) =>
      val builds = tables.map(_.value.iterator.map { case (key, item) => new Enriching(new PickledKey(key), new PickledItem(item)): Any })
      val rightKey: Any => Any = _.asInstanceOf[Enriching].key
      val clauses = (0 until sides).map { side =>
        val leftKey: Any => Any =
          if (side == 0) _.asInstanceOf[Streamed].item.key
          else e => new PickledKey(e.asInstanceOf[Streamed].item.values(side - 1).asInstanceOf[Array[Byte]])
        JoinClause(leftKey, rightKey)
      }
      // The processor asks for each combination once, in order, so counting the calls numbers them.
      val joined: (Any, Seq[Option[Any]]) => Any = (left, rights) => {
        val streamedItem = left.asInstanceOf[Streamed]
        val j = streamedItem.emitted
        streamedItem.emitted += 1
        val tuple = (streamedItem.item.item +: rights.map(_.map(_.asInstanceOf[Enriching].item))).toArray[Any]
        val beside = types.indices.map { i =>
          if (i == fanOut) new GenericArrayData(streamedItem.carried.getArray(i).toIntArray() :+ j)
          else if (streamedItem.carried.isNullAt(i)) null
          else streamedItem.carried.get(i, types(i))
        }
        InternalRow.fromSeq(PythonValues.dumps(tuple) +: beside)
      }
      val join = new HashJoinProcessor(clauses, joined, outer = !inner)
      val passing = scala.collection.mutable.ArrayBuffer.empty[InternalRow]
      val entering = if (passedAt < 0) partition else partition.filter { row =>
        row.isNullAt(passedAt) || { passing += InternalRow.fromSeq(null +: copyCarried(row).toSeq(types.toSeq)); false }
      }
      // Every enriching side is complete before the first streamed item.
      val inputs = (entering.map(toItem): Iterator[Any]) +: builds.toIndexedSeq
      new ProcessorTasklet(join, ProcessorContext(vertexName, index, total), inputs, Seq(1 to sides, Seq(0)))
        .map(_.asInstanceOf[InternalRow]) ++ passing.iterator
    }
    val item = RowSchemas.ItemSchema.fields.map(_.copy(nullable = passedOn.isDefined))
    SqlBridge.internalCreateDataFrame(streamed.sparkSession, rows, StructType(item ++ fields))
  }

  /** An enriching side's item and its clause's right key: it is only looked up and passed on, so it needs no
    * values and no encounter position (which break ties in aggregations; a join has none).
    */
  private final class Enriching(val key: PickledKey, val item: PickledItem)

  /** A streamed item, with what its row carries beside it, and how many outputs it has had so far. */
  private final class Streamed(val item: Extracted, val carried: InternalRow) {
    var emitted = 0
  }
}
