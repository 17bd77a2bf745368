package io.jetspark.engine.spark.rows

/** Encounter positions of the items that enter an aggregation: within a Spark task (one partition of the
  * stage that takes them) in arrival order, and across tasks in partition order (`partition << 40 | n`).
  * Positions are unique, so the operations that break ties by them ([[io.jetspark.item.Kept]]) pick the same items whatever
  * the order in which partial accumulators combine (two stages, frames of a window, two stacks). The local
  * engine's extractions number their items the same way from their processor's index.
  */
object EncounterPositions {
  private final class Counter(val task: AnyRef, var next: Long)
  private val counters = ThreadLocal.withInitial[Counter](() => new Counter(null, 0L))

  def next(): Long = {
    val counter = ofTask()
    val position = counter.next
    counter.next += 1
    position
  }

  /** The position the current task gives next. */
  def upcoming(): Long = ofTask().next

  /** Continues the current task's positions from `position` on, unless they are past it: a stream's stage
    * keeps them rising from one epoch to the next (each epoch is a new task), so that ties break by
    * arrival across epochs too.
    */
  def continueFrom(position: Long): Unit = {
    val counter = ofTask()
    counter.next = math.max(counter.next, position)
  }

  private def ofTask(): Counter = {
    val task = org.apache.spark.TaskContext.get()
    var counter = counters.get()
    if (counter.task ne task) {
      counter = new Counter(task, if (task == null) 0L else task.partitionId().toLong << 40)
      counters.set(counter)
    }
    counter
  }
}
