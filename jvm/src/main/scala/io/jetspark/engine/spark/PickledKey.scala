package io.jetspark.engine.spark

import java.util.Arrays

/** A key extracted in Python, as its pickle: keys compare by their serialized form (DESIGN.md "Items"),
  * so equal Python keys are equal here whatever their type, and hash the same on every executor.
  */
final class PickledKey(val bytes: Array[Byte]) extends Serializable {
  override def equals(other: Any): Boolean = other match {
    case k: PickledKey => Arrays.equals(bytes, k.bytes)
    case _ => false
  }
  override val hashCode: Int = Arrays.hashCode(bytes)
  override def toString: String = s"PickledKey(${bytes.length} bytes)"
}
