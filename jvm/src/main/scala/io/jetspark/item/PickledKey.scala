package io.jetspark.item

import java.util.Arrays

/** A key extracted in Python, in its canonical serialized form (`jetspark._items.canonical_key`): keys
  * compare by it (DESIGN.md "Items"), so equal Python keys (within the limits that function states) are
  * equal here and hash the same on every executor; results write it back as
  * `jetspark._items.loads_key(bytes)`.
  */
final class PickledKey(val bytes: Array[Byte]) extends Serializable {
  override def equals(other: Any): Boolean = other match {
    case k: PickledKey => Arrays.equals(bytes, k.bytes)
    case _ => false
  }
  override val hashCode: Int = Arrays.hashCode(bytes)
  override def toString: String = s"PickledKey(${bytes.length} bytes)"
}
