package io.jetspark.item

/** A Python item (or key) whose pickle the JVM keeps as it is: equal by content, and written back into
  * results as `jetspark._items.loads(pickle)`, so that Python gets the very object back.
  */
final class PickledItem(val bytes: Array[Byte]) extends Serializable {
  override def equals(other: Any): Boolean = other match {
    case p: PickledItem => java.util.Arrays.equals(bytes, p.bytes)
    case _ => false
  }
  override val hashCode: Int = java.util.Arrays.hashCode(bytes)
  override def toString: String = s"PickledItem(${bytes.length} bytes)"
}
