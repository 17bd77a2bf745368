package io.jetspark.item

/** An item on its way into an aggregation: its grouping key as a pickle, itself (a Python item's
  * [[PickledItem]], or a [[RowItem]] where the JVM read a DataFrame's row), the values extracted from
  * it for the operation (by a Python worker and read back with Pyrolite, `rawValues` their pickles to pass
  * them on unchanged; or read by Catalyst), and its encounter position (numbered by the engine that
  * extracted it), by which `min_by`, `max_by`, `top_n` and `bottom_n` break ties. Equal when the items
  * are: `to_set` keeps distinct items.
  */
final class Extracted(val key: PickledKey, val item: AnyRef, val values: Array[Any], val rawValues: Array[Array[Byte]],
    val position: Long) extends Serializable {
  /** The pickle of a Python item (stages that only ever see Python items read it). */
  def pickled: Array[Byte] = item.asInstanceOf[PickledItem].bytes

  override def equals(other: Any): Boolean = other match {
    case e: Extracted => item == e.item
    case _ => false
  }
  override def hashCode: Int = item.hashCode
}
