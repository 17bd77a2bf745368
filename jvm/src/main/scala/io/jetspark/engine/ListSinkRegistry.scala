package io.jetspark.engine

import scala.collection.mutable

/** The named lists of `Sinks.list(name)` (and of dead-letter sinks), held by the driver: what jobs have
  * committed so far, in arrival order. Shared by the engines (the Spark engine and the local engine
  * write to the same lists, and the session reads them). Items of Python pipelines are pickles: Python
  * reads them back as they were; a JVM pipeline's items are kept as they are.
  */
object ListSinkRegistry {
  private val lists = mutable.LinkedHashMap.empty[String, mutable.ArrayBuffer[Any]]

  def append(name: String, items: Iterable[Any]): Unit = synchronized {
    lists.getOrElseUpdate(name, mutable.ArrayBuffer.empty) ++= items
  }

  /** A copy of the list's items so far (empty when nothing was written to it). */
  def items(name: String): Vector[Any] = synchronized { lists.get(name).fold(Vector.empty[Any])(_.toVector) }

  /** The list's items as the pickles a Python pipeline wrote. */
  def pickles(name: String): Vector[Array[Byte]] = items(name).map {
    case bytes: Array[Byte] => bytes
    case other => throw new IllegalStateException(
      s"list '$name' holds ${other.getClass.getName} items written by a JVM pipeline; Python reads only what Python pipelines wrote")
  }

  def clear(name: String): Unit = synchronized { lists.remove(name); () }
}
