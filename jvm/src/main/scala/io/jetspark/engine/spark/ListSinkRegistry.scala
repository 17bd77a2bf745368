package io.jetspark.engine.spark

import scala.collection.mutable

/** The named lists of `Sinks.list(name)` (and of dead-letter sinks), held by the driver: what a job
  * has committed so far, in arrival order. Items are pickles: Python reads them back as they were.
  */
object ListSinkRegistry {
  private val lists = mutable.LinkedHashMap.empty[String, mutable.ArrayBuffer[Array[Byte]]]

  def append(name: String, items: Iterable[Array[Byte]]): Unit = synchronized {
    lists.getOrElseUpdate(name, mutable.ArrayBuffer.empty) ++= items
  }

  /** A copy of the list's items so far (empty when nothing was written to it). */
  def get(name: String): java.util.List[Array[Byte]] = synchronized {
    java.util.Arrays.asList(lists.get(name).fold(Array.empty[Array[Byte]])(_.toArray): _*)
  }

  def clear(name: String): Unit = synchronized { lists.remove(name); () }
}
