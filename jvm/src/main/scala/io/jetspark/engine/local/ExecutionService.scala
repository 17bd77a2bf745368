package io.jetspark.engine.local

import java.util.concurrent.{ConcurrentLinkedQueue, ExecutorService, Executors}
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.locks.LockSupport
import scala.collection.mutable.ArrayBuffer

/** The threads that run tasklets (Jet's TaskletExecutionService): a fixed few cooperative workers, each
  * calling its tasklets in turn, and a thread of its own for each non-cooperative tasklet (one whose
  * functions block), taken from a pool that keeps idle threads for a minute: a Python light job's
  * callbacks then reuse the py4j connections of earlier jobs' threads instead of opening new ones.
  */
private[local] final class ExecutionService(cooperativeThreads: Int) {
  require(cooperativeThreads >= 1, s"at least one cooperative thread, got $cooperativeThreads")

  private val workers = Array.tabulate(cooperativeThreads)(i => new CooperativeWorker(s"jetspark-local-$i"))
  private val nextWorker = new AtomicInteger
  private val blockingCount = new AtomicInteger
  private val blocking: ExecutorService = Executors.newCachedThreadPool { (r: Runnable) =>
    val t = new Thread(r, s"jetspark-local-blocking-${blockingCount.incrementAndGet()}")
    t.setDaemon(true)
    t
  }
  workers.foreach(_.start())

  def threadCount: Int = cooperativeThreads

  def submit(tasklets: Seq[LocalTasklet]): Unit = tasklets.foreach { t =>
    if (t.cooperative) workers(Math.floorMod(nextWorker.getAndIncrement(), workers.length)).add(t)
    else blocking.execute { () =>
      val idler = new BackoffIdler
      while (!t.isDone) if (t.call()) idler.reset() else idler.idle()
    }
  }
}

/** Calls its tasklets in turn until each is done, and waits for more when it has none. */
private final class CooperativeWorker(name: String) extends Thread(name) {
  setDaemon(true)
  private val incoming = new ConcurrentLinkedQueue[LocalTasklet]()
  private val tasklets = ArrayBuffer.empty[LocalTasklet]
  private val idler = new BackoffIdler

  def add(t: LocalTasklet): Unit = {
    incoming.add(t)
    LockSupport.unpark(this)
  }

  override def run(): Unit = while (true) {
    var t = incoming.poll()
    while (t != null) { tasklets += t; t = incoming.poll() }
    if (tasklets.isEmpty) LockSupport.park(this)
    else {
      var progressed = false
      var i = 0
      while (i < tasklets.size) {
        val tasklet = tasklets(i)
        if (tasklet.call()) progressed = true
        if (tasklet.isDone) tasklets.remove(i) else i += 1
      }
      if (progressed) idler.reset() else idler.idle()
    }
  }
}

/** Jet's back-off after a round without progress: spin, then yield, then park from 1 µs doubling up to 1 ms. */
private final class BackoffIdler {
  private var idleRounds = 0

  def reset(): Unit = idleRounds = 0

  def idle(): Unit = {
    idleRounds += 1
    if (idleRounds <= 25) Thread.onSpinWait()
    else if (idleRounds <= 50) Thread.`yield`()
    else LockSupport.parkNanos(math.min(1000L << math.min(idleRounds - 50, 10), 1000000L))
  }
}
