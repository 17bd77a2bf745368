package io.jetspark.core

import java.util.ArrayDeque

/** Items waiting for a processor on one input ordinal. The processor removes what it processed; what it
  * leaves (because its outbox refused) is offered again on the next call.
  */
trait Inbox {
  def isEmpty: Boolean
  def size: Int
  /** The head item, or `null` when empty. */
  def peek(): Any
  /** The items in order, without removing them (Jet's inbox is iterable too). */
  def iterator: Iterator[Any]
  /** Removes and returns the head item, or `null` when empty. */
  def poll(): Any
  /** Removes the head item; the inbox must not be empty. */
  def remove(): Unit
  def clear(): Unit
}

/** The inbox used by the engines and by the test harness. */
final class ArrayDequeInbox extends Inbox {
  private val queue = new ArrayDeque[Any]()
  def add(item: Any): Unit = queue.addLast(item)
  def addAll(items: Iterable[Any]): Unit = items.foreach(queue.addLast)
  override def isEmpty: Boolean = queue.isEmpty
  override def size: Int = queue.size
  override def peek(): Any = queue.peekFirst()
  override def iterator: Iterator[Any] = scala.jdk.CollectionConverters.IteratorHasAsScala(queue.iterator()).asScala
  override def poll(): Any = queue.pollFirst()
  override def remove(): Unit = { queue.removeFirst(); () }
  override def clear(): Unit = queue.clear()
}
