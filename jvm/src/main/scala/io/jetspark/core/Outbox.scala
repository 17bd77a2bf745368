package io.jetspark.core

/** Where a processor emits. Every offer may be refused (back-pressure); a processor that gets `false`
  * must stop, return, and offer the same item again on a later call. One bucket per output ordinal,
  * plus the snapshot bucket.
  */
trait Outbox {
  def bucketCount: Int
  /** Offers `item` to output `ordinal`; `-1` offers to every output (all or none accept). */
  def offer(ordinal: Int, item: Any): Boolean
  def offer(item: Any): Boolean = offer(-1, item)
  /** Offers one entry of this processor's state while `saveToSnapshot` runs. */
  def offerToSnapshot(key: Any, value: Any): Boolean
}

/** An outbox that collects into buffers and refuses when a bucket holds `capacity` items. Whoever runs
  * the processor drains the buffers between calls. `refuse()` is a hook for test outboxes that refuse
  * on a schedule of their own.
  */
class BufferedOutbox(val bucketCount: Int, capacity: Int) extends Outbox {
  require(bucketCount >= 1 && capacity >= 1)
  val buckets: Array[scala.collection.mutable.ArrayBuffer[Any]] = Array.fill(bucketCount)(scala.collection.mutable.ArrayBuffer.empty[Any])
  val snapshotBucket: scala.collection.mutable.ArrayBuffer[(Any, Any)] = scala.collection.mutable.ArrayBuffer.empty

  protected def refuse(): Boolean = false

  override def offer(ordinal: Int, item: Any): Boolean = {
    require(item != null, "null item offered to the outbox")
    val targets = if (ordinal == -1) buckets.indices else Seq(ordinal)
    if (targets.exists(i => buckets(i).size >= capacity) || refuse()) false
    else { targets.foreach(i => buckets(i) += item); true }
  }

  override def offerToSnapshot(key: Any, value: Any): Boolean =
    if (snapshotBucket.size >= capacity || refuse()) false
    else { snapshotBucket += ((key, value)); true }

  def drainBucket(ordinal: Int): Seq[Any] = { val out = buckets(ordinal).toList; buckets(ordinal).clear(); out }
  def drainSnapshot(): Seq[(Any, Any)] = { val out = snapshotBucket.toList; snapshotBucket.clear(); out }
}
