package io.jetspark.engine.spark

import io.jetspark.core.ProcessorContext
import io.jetspark.core.execution.ProcessorTasklet
import io.jetspark.core.processor.{HashJoinProcessor, JoinClause}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{DataFrame, SparkSession}

/** `hash_join` / `inner_hash_join` (and their forms with several enriching sides) on Spark: every
  * enriching side is collected and broadcast, and the core's [[HashJoinProcessor]] joins each partition
  * of the streamed side with them. The output is the pickled tuple `(left, right_1, ..., right_n)` of
  * each combination of matches (`None` for a side without a match, unless `inner`), for the mapper's
  * Python UDF.
  *
  * Where the streamed rows carry their items' time (column [[WindowStages.Ts]], on the way to a window:
  * [[CarriedTimestamps]]), every output for a streamed item carries that item's time, as Jet's join gives
  * its output the left item's timestamp; the enriching sides arrive without theirs.
  *
  * Keys are extracted per input: an enriching side's rows carry their clause's right key as the key; a
  * streamed row carries the first clause's left key as the key and the other clauses' left keys, as
  * canonical key bytes, as its values (see `SparkBatchEngine.pythonExtractions`).
  */
object HashJoinStage {

  def run(spark: SparkSession, vertexName: String, streamed: DataFrame, enriching: Seq[DataFrame], inner: Boolean): DataFrame = {
    val tables = enriching.map(side =>
      spark.sparkContext.broadcast(side.queryExecution.toRdd.map(r => (r.getBinary(0), r.getBinary(2))).collect()))
    val sides = enriching.size
    val toExtracted = SparkBatchEngine.extracted
    val timeAt = if (streamed.columns.contains(WindowStages.Ts)) Some(streamed.schema.fieldIndex(WindowStages.Ts)) else None
    val toItem: InternalRow => Streamed = row => Streamed(toExtracted(row), timeAt.map(row.getLong))
    val total = streamed.queryExecution.toRdd.getNumPartitions
    val rows = streamed.queryExecution.toRdd.mapPartitionsWithIndex { (index, partition) =>
      val builds = tables.map(_.value.iterator.map { case (key, item) =>
        new Extracted(new PickledKey(key), new PickledItem(item), Array.empty, Array.empty): Any
      })
      val rightKey: Any => Any = _.asInstanceOf[Extracted].key
      val clauses = (0 until sides).map { side =>
        val leftKey: Any => Any =
          if (side == 0) _.asInstanceOf[Streamed].item.key
          else e => new PickledKey(e.asInstanceOf[Streamed].item.values(side - 1).asInstanceOf[Array[Byte]])
        JoinClause(leftKey, rightKey)
      }
      val joined: (Any, Seq[Option[Any]]) => Any = (left, rights) => {
        val streamedItem = left.asInstanceOf[Streamed]
        val tuple = (streamedItem.item.item +: rights.map(_.map(_.asInstanceOf[Extracted].item))).toArray[Any]
        InternalRow.fromSeq(PythonValues.dumps(tuple) +: streamedItem.time.toSeq)
      }
      val join = new HashJoinProcessor(clauses, joined, outer = !inner)
      // Every enriching side is complete before the first streamed item.
      val inputs = (partition.map(toItem): Iterator[Any]) +: builds.toIndexedSeq
      new ProcessorTasklet(join, ProcessorContext(vertexName, index, total), inputs, Seq(1 to sides, Seq(0)))
        .map(_.asInstanceOf[InternalRow])
    }
    val schema = SparkBatchEngine.ItemSchema
    SqlBridge.internalCreateDataFrame(spark, rows, timeAt.fold(schema)(at => schema.add(streamed.schema(at))))
  }

  /** A streamed item, with the time it carries where it carries one. */
  private final case class Streamed(item: Extracted, time: Option[Long])
}
