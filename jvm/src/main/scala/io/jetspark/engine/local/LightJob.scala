package io.jetspark.engine.local

import java.util.concurrent.{CancellationException, CompletableFuture, ExecutionException, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}

/** A light job failed; the message names the vertex (and processor instance) where it failed. */
final class LightJobFailedException(message: String, cause: Throwable) extends RuntimeException(message, cause)

/** A light job (Jet's design doc 020): started by one call, joined or cancelled, nothing else. It keeps
  * no metadata besides the engine's in-memory registry entry, which goes when the job ends, and takes
  * no snapshots.
  *
  * Status: `RUNNING`, then `COMPLETED`, `FAILED` or `CANCELLED`.
  */
final class LightJob private[local] (val id: Long, val name: String, execution: LocalExecution) {

  /** Waits until the job ends. Throws [[LightJobFailedException]] (naming the failing vertex) when it
    * failed, `CancellationException` when it was cancelled.
    */
  def join(): Unit = execution.await(None)

  /** Waits at most `timeoutMs`; false when the job is still running then. Throws as [[join]] when it
    * ended badly.
    */
  def join(timeoutMs: Long): Boolean = execution.await(Some(timeoutMs))

  /** Cancels the job: every processor stops at its next step; [[join]] then throws `CancellationException`.
    * Has no effect on a job that already ended.
    */
  def cancel(): Unit = execution.cancel()

  def status: String = execution.status

  override def toString: String = s"LightJob($id, $name, $status)"
}

/** The running state of one light job: its tasklets count down as they finish; the first failure (or
  * a cancel) makes every other tasklet stop. `ownerAlive` tells the engine's leak check whether anyone
  * can still join or cancel the job (the driver's Python process of a Python light job).
  */
private[local] final class LocalExecution(val id: Long, val name: String, val ownerAlive: () => Boolean) {
  private val remaining = new AtomicInteger
  private val failureRef = new AtomicReference[Throwable]()
  private val done = new CompletableFuture[Unit]()
  @volatile private var terminating = false

  def start(taskletCount: Int): Unit = {
    remaining.set(taskletCount)
    if (taskletCount == 0) finish()
  }

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

  private def finish(): Unit = failure match {
    case Some(e) => done.completeExceptionally(e)
    case None => done.complete(())
  }

  def status: String =
    if (!done.isDone) "RUNNING"
    else failure match {
      case None => "COMPLETED"
      case Some(_: CancellationException) => "CANCELLED"
      case Some(_) => "FAILED"
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
