package io.jetspark.engine.spark.epoch

import com.fasterxml.jackson.databind.node.ObjectNode
import io.jetspark.plan.PhysicalDag
import io.jetspark.plan.VertexDescription.{Sink, Source}
import org.apache.spark.SparkContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.util.{AccumulatorV2, LongAccumulator}

/** A stream job's figures per vertex, gathered by the epochs' tasks as they run (accumulators), readable on
  * the driver at any time: items each vertex emitted (its results, not its dead letters), the watermark
  * each of its partitions sent on, the size of the state each partition committed last, and a window's
  * late drops. A vertex's items in are what its senders emitted (every edge of a stream delivers each
  * item to one receiver); a sink's are what it was given, which for a dead-letter sink are the dead
  * letters of the stage it serves.
  */
final class EpochMetrics(sc: SparkContext, dag: PhysicalDag, windows: Set[String]) {
  import EpochMetrics.lag

  private val itemsOut: Map[String, LongAccumulator] =
    dag.vertices.map(v => v.name -> sc.longAccumulator(s"${v.name}.items_out")).toMap
  private val watermarks: Map[String, LatestPerPartition] = dag.vertices.map(v => v.name -> register(new LatestPerPartition)).toMap
  private val stateBytes: Map[String, LatestPerPartition] = dag.vertices.map(v => v.name -> register(new LatestPerPartition)).toMap
  /** Events each window dropped as late, over the run. */
  val lateEvents: Map[String, LongAccumulator] = windows.map(v => v -> sc.longAccumulator(s"$v.late")).toMap

  private def register(a: LatestPerPartition): LatestPerPartition = { sc.register(a); a }

  /** What a stateful vertex's partition adds once it commits `bytes` of state in `epoch`. */
  def stateOf(vertex: String): LatestPerPartition = stateBytes(vertex)

  /** `rows`, the output of `vertex` (control rows in column `ctlAt`; where it has one, the dead letters'
    * stage in column `failureAt`), counting its items, not its dead letters, and noting the watermark each
    * partition sends on as the rows pass.
    */
  def counted(vertex: String, rows: RDD[InternalRow], ctlAt: Int, failureAt: Option[Int] = None): RDD[InternalRow] = {
    val failure = failureAt.getOrElse(-1)
    val (items, marks) = (itemsOut(vertex), watermarks(vertex))
    rows.mapPartitions(input => new Iterator[InternalRow] {
      private var count = 0L
      def hasNext: Boolean = input.hasNext || { if (count > 0) { items.add(count); count = 0 }; false }
      def next(): InternalRow = {
        val row = input.next()
        if (row.isNullAt(ctlAt)) { if (failure < 0 || row.isNullAt(failure)) count += 1 }
        else {
          val control = EpochControl.decode(row.getBinary(ctlAt))
          val watermark = if (control.done) Long.MaxValue else control.watermark
          // The parts of one substream note theirs in one place, where the greatest stays (EpochControl.part).
          marks.add((if (control.part) 0 else control.sender, watermark, watermark))
        }
        row
      }
    }, preservesPartitioning = true)
  }

  /** The items `vertex` emitted so far. */
  def itemsOutOf(vertex: String): Long = itemsOut(vertex).sum

  /** Where a stage that reads `vertex`'s items itself, without a pass of [[counted]], counts them. */
  def itemsOutCounter(vertex: String): LongAccumulator = itemsOut(vertex)

  /** Where a stage that makes `vertex`'s watermarks itself notes them, per partition. */
  def watermarksOf(vertex: String): LatestPerPartition = watermarks(vertex)

  /** The least watermark `vertex`'s partitions sent on, after the first. */
  def watermarkOf(vertex: String): Option[Long] = watermarks(vertex).value.values.map(_._2).minOption

  /** Into `job`: `items_read` (by the sources), `items_written` (by the sinks), `state_bytes` (all
    * vertices) and `vertices`, per vertex: `items_in`, `items_out`, `watermark` (the least its partitions
    * sent on; absent before the first), `watermark_lag_ms` (wall-clock time `now` minus that watermark,
    * while it is finite), `state_bytes` (the state its partitions committed last) and, for a window,
    * `late_events_dropped`.
    */
  def write(job: ObjectNode, now: Long): Unit = {
    val vertices = job.putObject("vertices")
    dag.vertices.foreach { v =>
      val node = vertices.putObject(v.name)
        .put("items_in", if (v.description.isInstanceOf[Sink]) itemsOutOf(v.name) else dag.edgesInto(v.name).map(e => itemsOutOf(e.from)).sum)
        .put("items_out", itemsOutOf(v.name))
      watermarkOf(v.name).foreach { wm =>
        node.put("watermark", wm)
        lag(now, wm).foreach(node.put("watermark_lag_ms", _))
      }
      node.put("state_bytes", stateSize(v.name))
      lateEvents.get(v.name).foreach(late => node.put("late_events_dropped", late.sum))
    }
    job.put("items_read", dag.vertices.filter(_.description.isInstanceOf[Source]).map(v => itemsOutOf(v.name)).sum)
      .put("items_written", dag.vertices.filter(_.description.isInstanceOf[Sink]).map(v => itemsOutOf(v.name)).sum)
      .put("state_bytes", dag.vertices.map(v => stateSize(v.name)).sum)
  }

  private def stateSize(vertex: String): Long = stateBytes(vertex).value.values.map(_._2).sum
}

object EpochMetrics {
  /** How far `watermark` lags behind the wall-clock time `now`, while it is finite. */
  def lag(now: Long, watermark: Long): Option[Long] =
    if (watermark == Long.MaxValue || watermark == Long.MinValue) None else Some(now - watermark)
}

/** Per partition, the value of the highest version added: `(partition, version, value)`. A watermark is
  * its own version; a state's size is versioned by its epoch.
  */
final class LatestPerPartition extends AccumulatorV2[(Int, Long, Long), Map[Int, (Long, Long)]] {
  private var latest = Map.empty[Int, (Long, Long)]

  override def isZero: Boolean = latest.isEmpty
  override def copy(): LatestPerPartition = { val c = new LatestPerPartition; c.latest = latest; c }
  override def reset(): Unit = latest = Map.empty
  override def add(v: (Int, Long, Long)): Unit = keep(v._1, (v._2, v._3))
  override def merge(other: AccumulatorV2[(Int, Long, Long), Map[Int, (Long, Long)]]): Unit =
    other.value.foreach { case (partition, entry) => keep(partition, entry) }
  override def value: Map[Int, (Long, Long)] = latest

  private def keep(partition: Int, entry: (Long, Long)): Unit =
    if (latest.get(partition).forall(_._1 <= entry._1)) latest += partition -> entry
}
