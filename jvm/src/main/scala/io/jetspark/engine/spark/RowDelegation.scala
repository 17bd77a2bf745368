package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.{InPlaceRows, StageFailedException, TypedExtraction}
import io.jetspark.pipeline.definition.Extractor
import org.apache.spark.rdd.{PartitionCoalescer, PartitionGroup, RDD}
import org.apache.spark.sql.functions.{col, min_by, monotonically_increasing_id, struct}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.types._
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.util.LongAccumulator

/** A `sort` or a `distinct` over a DataFrame source's rows that Catalyst runs (DESIGN.md "Edges on
  * Spark": delegation where the semantics are equal). Its output is rows of the source's schema, which
  * become Python `Row`s, as the source's own rows do, only where a vertex needs Python items.
  *
  * @param result      the vertex that emits the rows (a sort's merge, the distinct)
  * @param passThrough a sort's local-run vertex: Catalyst sorts in one go, so it passes the rows on
  * @param rows        the DataFrame source it reads
  * @param run         the source's rows to the result's rows
  */
final case class RowDelegation(result: String, passThrough: Option[String], rows: String, run: RowDelegation.Run)

object RowDelegation {
  /** The source's rows to the result's rows, counting the rows it reads into the accumulators. A sort is
    * given its pass-through vertex's (and its source's where it is the only reader): counted on the way
    * in, the rows would count twice, as the range partitioning samples them. A distinct is given none.
    */
  type Run = (DataFrame, Seq[LongAccumulator]) => DataFrame

  private val Position = "__jetspark_position"
  private val SortKey = "__jetspark_sort_key"

  /** Key types whose order and equality in Spark are Python's on the values Spark gives Python: integers,
    * booleans, dates, decimals of one scale, and strings compared by bytes (UTF-8's byte order is code
    * point order, which Python compares). Not floats (Spark makes -0.0 equal 0.0 and orders NaN; Python's
    * keys keep -0.0 apart and NaN does not order) and not timestamps (local date-times in Python, where a
    * clock turned back makes two instants equal).
    */
  private def samePythonSemantics(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | BooleanType | DateType | _: DecimalType => true
    case s: StringType => s == StringType // the binary collation only
    case _ => false
  }

  /** How Catalyst sorts `rows` by `key` (None: the item itself, which is not delegated: a Row orders
    * field by field and None fails only where a comparison reaches it), or why it does not.
    *
    * As the core's sort does, equal keys keep the order of the source (its partitions, then positions in
    * them), also when `reverse`. The result is one partition in order: a sort's output is read by one
    * processor. Python fails to order None against anything, so a null key fails the job, naming the
    * stage, once there are two items to compare (a single item needs no comparison).
    */
  def sort(stage: String, key: Option[Extractor], reverse: Boolean, rows: DataFrame): Either[String, Run] =
    for {
      e <- key.toRight("a sort by the whole item runs in Python")
      typed <- TypedExtraction.typed(e, rows)
      (k, field) = typed
      _ <- Either.cond(samePythonSemantics(field.dataType), (), s"${e.describe} is of type ${field.dataType.simpleString}")
    } yield { (source, read) =>
      val keyed = source.select((k.as(SortKey) +: monotonically_increasing_id().as(Position) +: fieldsOf(source)): _*)
      val order = if (reverse) keyed(SortKey).desc_nulls_first else keyed(SortKey).asc_nulls_first
      val sorted = keyed.orderBy(order, keyed(Position).asc)
      // The sorted runs, read run after run in one partition: the rows are counted here, not on the
      // way in, where the sampling of the range partitioning reads them once more.
      val described = e.describe // the task takes this, not the Extractor (a Column does not serialize)
      val inOrder = InPlaceRows.of(sorted).coalesce(1, shuffle = false, Some(InOrder)).mapPartitions { partition =>
        val rows = partition.map { row => read.foreach(_.add(1)); row }.buffered
        // Null keys sort first: a null key and any other item make a comparison that Python fails.
        if (rows.hasNext && rows.head.isNullAt(0)) {
          val first = rows.next().copy()
          if (rows.hasNext) throw new StageFailedException(stage,
            s"a sort key ($described) is None, which Python does not order against other keys")
          Iterator.single(first)
        } else rows
      }
      SqlBridge.internalCreateDataFrame(source.sparkSession, inOrder, sorted.schema).select(fieldsOf(source): _*)
    }

  /** All partitions of an RDD in one, in the order of their indices (Spark's default coalescer groups
    * them by location, which does not keep a range partitioning's order).
    */
  private[spark] object InOrder extends PartitionCoalescer with Serializable {
    override def coalesce(maxPartitions: Int, parent: RDD[_]): Array[PartitionGroup] = {
      val group = new PartitionGroup()
      group.partitions ++= parent.partitions
      Array(group)
    }
  }

  /** How Catalyst keeps one row per `key` (the whole item: one of equal rows), or why it does not. Of
    * rows with equal keys it keeps the first in the source's order (its partitions, then positions in
    * them), which is what the core's distinct keeps where the items arrive in that order.
    */
  def distinct(key: Extractor, rows: DataFrame): Either[String, Run] = key match {
    case Extractor.WholeItem =>
      rows.schema.fields.find(f => !samePythonSemantics(f.dataType))
        .map(f => s"its field ${f.name} is of type ${f.dataType.simpleString}").toLeft((source: DataFrame, _) => source.dropDuplicates())
    case e => TypedExtraction.typed(e, rows).flatMap { case (k, field) =>
      Either.cond(samePythonSemantics(field.dataType), { (source: DataFrame, _: Seq[LongAccumulator]) =>
        val first = source.withColumn(Position, monotonically_increasing_id()).groupBy(k.as(SortKey))
          .agg(min_by(struct(fieldsOf(source): _*), col(Position)).as(Position))
        first.select(source.columns.toSeq.map(c => col(Position).getField(c).as(c)): _*)
      }, s"${e.describe} is of type ${field.dataType.simpleString}")
    }
  }

  private def fieldsOf(rows: DataFrame): Seq[Column] = rows.columns.toSeq.map(c => col(TypedExtraction.quoted(c)))
}
