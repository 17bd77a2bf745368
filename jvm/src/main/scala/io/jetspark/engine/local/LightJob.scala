package io.jetspark.engine.local

import java.util.concurrent.{CancellationException, CompletableFuture, ExecutionException, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}

/** A light job failed; the message names the vertex (and processor instance) where it failed. */
final class LightJobFailedException(message: String, cause: Throwable) extends RuntimeException(message, cause)

/** A light job (Jet's design doc 020): started by one call, joined or cancelled, nothing else. It keeps
  * no metadata besides two in-memory entries, the coordinator's and the engine's registry's (see
  * [[LocalEngine]]), which go when the job ends, and takes no snapshots.
  *
  * Status: `RUNNING`, then `COMPLETED`, `FAILED` or `CANCELLED`.
  */
final class LightJob private[local] (val id: Long, val name: String, execution: LocalExecution, coordinator: LightJobCoordinator) {

  /** Waits until the job ends. Throws [[LightJobFailedException]] (naming the failing vertex) when it
    * failed, `CancellationException` when it was cancelled.
    */
  def join(): Unit = execution.await(None)

  /** Waits at most `timeoutMs`; false when the job is still running then. Throws as [[join]] when it
    * ended badly.
    */
  def join(timeoutMs: Long): Boolean = execution.await(Some(timeoutMs))

  /** Cancels the job, through its coordinator: every processor stops at its next step (one inside a call
    * that blocks, when the call returns); [[join]] then throws `CancellationException`. Has no effect on
    * a job that already ended.
    */
  def cancel(): Unit = coordinator.cancel(id, execution)

  def status: String = execution.status

  /** How many late events the job's windows dropped so far: events behind their watermark, whose windows
    * were emitted already.
    */
  def lateEventsDropped: Long = execution.lateEventsDropped

  override def toString: String = s"LightJob($id, $name, $status)"
}

/** One light job's execution in the engine's registry: registered, then initialised ([[start]]: its
  * tasklets built and about to be submitted), then ended. Its tasklets count down as they finish; the
  * first failure (or a cancel) makes every other tasklet stop. `ownerAlive` tells the engine's light
  * job checker whether anyone can still join or cancel the job (the driver's Python process of a Python
  * light job).
  */
private[local] final class LocalExecution(val id: Long, val name: String, val ownerAlive: () => Boolean) {
  /** When it was registered: the checker removes it if it is still not initialised a timeout later. */
  val registeredAtNanos: Long = System.nanoTime()
  private val remaining = new AtomicInteger
  private val failureRef = new AtomicReference[Throwable]()
  private val done = new CompletableFuture[Unit]()
  @volatile private var terminating = false
  @volatile private var initialized = false

  /** Initialises it: `taskletCount` tasklets are about to run. */
  @volatile private var tasklets: Seq[LocalTasklet] = Nil

  def start(tasklets: Seq[LocalTasklet]): Unit = {
    this.tasklets = tasklets
    remaining.set(tasklets.size)
    initialized = true
    if (tasklets.isEmpty) finish()
  }

  /** The late events its windows dropped so far. */
  def lateEventsDropped: Long = tasklets.iterator.map(_.lateEventsDropped).sum

  def isInitialized: Boolean = initialized
  def isTerminating: Boolean = terminating
  def isDone: Boolean = done.isDone
  def failure: Option[Throwable] = Option(failureRef.get)
  def onDone(action: () => Unit): Unit = { done.whenComplete((_, _) => action()); () }

  def fail(e: Throwable): Unit = {
    failureRef.compareAndSet(null, e)
    terminating = true
  }

  def cancel(): Unit = if (!done.isDone) fail(new CancellationException(s"light job $name was cancelled"))

  def taskletDone(): Unit = if (remaining.decrementAndGet() == 0) finish()

  /** Ends a job that never started its tasklets (a failure while it was being set up). */
  def abandon(e: Throwable): Unit = { fail(e); finish() }

  /** Ends it now, failed with `e` (or the failure it already had), without waiting for its tasklets: the
    * checker's end of an execution that nobody will end otherwise. A tasklet still inside a call of its
    * processor (a function that blocks and ignores the cancel) cannot be stopped safely from outside;
    * it sees the termination when that call returns, and closes its processor then.
    */
  def terminate(e: Throwable): Unit = if (!done.isDone) {
    fail(e)
    done.completeExceptionally(failureRef.get)
    ()
  }

  private def finish(): Unit = failure match {
    case Some(e) => done.completeExceptionally(e)
    case None => done.complete(())
  }

  // From how the job ended, not from a failure recorded since: a cancel (or the checker) may still
  // record one after the last tasklet finished.
  def status: String =
    if (!done.isDone) "RUNNING"
    else if (!done.isCompletedExceptionally) "COMPLETED"
    else failure match {
      case Some(_: CancellationException) => "CANCELLED"
      case _ => "FAILED"
    }

  def await(timeoutMs: Option[Long]): Boolean = {
    try timeoutMs match {
      case None => done.get()
      case Some(ms) => done.get(ms, TimeUnit.MILLISECONDS)
    } catch {
      case _: TimeoutException => return false
      case e: ExecutionException => throw e.getCause
      case _: CancellationException => throw failure.get
    }
    true
  }
}
