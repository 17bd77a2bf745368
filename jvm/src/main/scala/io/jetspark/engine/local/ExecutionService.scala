package io.jetspark.engine.local

import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.locks.LockSupport
import scala.collection.mutable.ArrayBuffer

/** The threads that run tasklets (Jet's TaskletExecutionService): a fixed few cooperative workers, each
  * calling its tasklets in turn, and a thread of its own for each non-cooperative tasklet (one whose
  * functions block). A worker that made no progress in a whole round backs off (spin, yield, then
  * park from 1 µs up to 1 ms), and sleeps until it is given work when it has none.
  */
private[local] final class ExecutionService(cooperativeThreads: Int) {
  require(cooperativeThreads >= 1, s"at least one cooperative thread, got $cooperativeThreads")

  private val workers = Array.tabulate(cooperativeThreads)(i => new CooperativeWorker(s"jetspark-local-$i"))
  private val nextWorker = new AtomicInteger
  private val dedicatedCount = new AtomicInteger
  workers.foreach(_.start())

  def threadCount: Int = cooperativeThreads

  def submit(tasklets: Seq[LocalTasklet]): Unit = tasklets.foreach { t =>
    if (t.cooperative) workers(Math.floorMod(nextWorker.getAndIncrement(), workers.length)).add(t)
    else {
      val thread = new CooperativeWorker(s"jetspark-local-blocking-${dedicatedCount.incrementAndGet()}", exitWhenIdle = true)
      thread.add(t)
      thread.start()
    }
  }
}

/** Calls its tasklets in turn until each is done. With `exitWhenIdle` (a non-cooperative tasklet's own
  * thread) it ends when its tasklets are done; otherwise it waits for more.
  */
private final class CooperativeWorker(name: String, exitWhenIdle: Boolean = false) extends Thread(name) {
  setDaemon(true)
  private val incoming = new ConcurrentLinkedQueue[LocalTasklet]()
  private val tasklets = ArrayBuffer.empty[LocalTasklet]
  private var idleRounds = 0

  def add(t: LocalTasklet): Unit = {
    incoming.add(t)
    LockSupport.unpark(this)
  }

  override def run(): Unit = while (true) {
    var t = incoming.poll()
    while (t != null) { tasklets += t; t = incoming.poll() }
    if (tasklets.isEmpty) {
      if (exitWhenIdle) return
      LockSupport.park(this)
    } else {
      var progressed = false
      var i = 0
      while (i < tasklets.size) {
        val tasklet = tasklets(i)
        if (tasklet.call()) progressed = true
        if (tasklet.isDone) tasklets.remove(i) else i += 1
      }
      if (progressed) idleRounds = 0 else idle()
    }
  }

  private def idle(): Unit = {
    idleRounds += 1
    if (idleRounds <= 25) Thread.onSpinWait()
    else if (idleRounds <= 50) Thread.`yield`()
    else LockSupport.parkNanos(math.min(1000L << math.min(idleRounds - 50, 10), 1000000L))
  }
}
