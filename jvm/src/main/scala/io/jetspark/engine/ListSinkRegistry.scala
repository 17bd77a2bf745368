package io.jetspark.engine

import scala.collection.mutable

/** The named lists of `Sinks.list(name)` (and of dead-letter sinks), held by the driver: what jobs have
  * committed so far, in arrival order. Shared by the engines (the Spark engine and the local engine
  * write to the same lists, and the session reads them). Items of Python pipelines are pickles: Python
  * reads them back as they were; a JVM pipeline's items are kept as they are.
  *
  * A stream's epochs write as [[Epoch]]s: an epoch written again (replayed after a failure, by the same
  * job or by one resumed from its checkpoint) replaces what it wrote the first time, where it stood, so
  * that a replay neither duplicates nor reorders a list.
  */
object ListSinkRegistry {
  /** Epoch `epoch` of `writer`: a name that stays the same for a stream's sink over its checkpoint's life. */
  final case class Epoch(writer: String, epoch: Long)

  /** A list: its items in runs, each an epoch's or a plain append's. */
  private final class Runs {
    val runs = mutable.ArrayBuffer.empty[(Option[Epoch], IndexedSeq[Any])]
    def items: Vector[Any] = runs.iterator.flatMap(_._2).toVector
  }

  private val lists = mutable.LinkedHashMap.empty[String, Runs]

  def append(name: String, items: Iterable[Any]): Unit = synchronized {
    lists.getOrElseUpdate(name, new Runs).runs += ((None, items.toIndexedSeq))
  }

  /** Writes `items` as `epoch`'s, in place of what `epoch` wrote before, if anything. */
  def writeEpoch(name: String, epoch: Epoch, items: Iterable[Any]): Unit = synchronized {
    val runs = lists.getOrElseUpdate(name, new Runs).runs
    val run = (Some(epoch), items.toIndexedSeq)
    // A replayed epoch is one of the last: look from the end, not through the whole stream's runs.
    runs.lastIndexWhere(_._1.contains(epoch)) match {
      case -1 => runs += run
      case at => runs(at) = run
    }
  }

  /** A copy of the list's items so far (empty when nothing was written to it). */
  def items(name: String): Vector[Any] = synchronized { lists.get(name).fold(Vector.empty[Any])(_.items) }

  /** The list's items as the pickles a Python pipeline wrote. */
  def pickles(name: String): Vector[Array[Byte]] = items(name).map {
    case bytes: Array[Byte] => bytes
    case other => throw new IllegalStateException(
      s"list '$name' holds ${other.getClass.getName} items written by a JVM pipeline; Python reads only what Python pipelines wrote")
  }

  /** The list's items so far, taken out of it: what a reader that prints them has not printed yet. */
  def drainPickles(name: String): Vector[Array[Byte]] = synchronized { val taken = pickles(name); clear(name); taken }

  def clear(name: String): Unit = synchronized { lists.remove(name); () }
}
