package io.jetspark.engine.local

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean

/** The coordinator's side of light jobs (Jet's `LightMasterContext`): the jobs it started and has not
  * yet seen end, kept in memory only. The engine's registry of executions is the other side; the light
  * job checker compares the two ([[LocalEngine]]), as Jet's checker asks each coordinator about the
  * executions of its members.
  *
  * A job is known from before its execution is registered until its execution ends, so that in a sound
  * run every initialised execution is known; only a fault ([[LightJobFaults]]) makes one unknown.
  */
private[local] final class LightJobCoordinator(faults: LightJobFaults) {
  private val jobs = ConcurrentHashMap.newKeySet[Long]()

  def started(id: Long): Unit = { jobs.add(id); () }

  def ended(id: Long): Unit = { jobs.remove(id); () }

  def knows(id: Long): Boolean = jobs.contains(id)

  /** Jobs started and not seen to end. */
  def knownCount: Int = jobs.size

  /** Cancels job `id`: its execution stops, and the job ends (and is forgotten) when the execution has. */
  def cancel(id: Long, execution: LocalExecution): Unit = {
    execution.cancel()
    if (faults.forgetOnCancel.get) ended(id)
  }

  /** Jet's `CheckLightJobsOperation`: of the initialised executions `ids`, those this coordinator does
    * not know.
    */
  def unknown(ids: Seq[Long]): Seq[Long] = ids.filterNot(jobs.contains)
}

/** Faults that one JVM never has, made on demand so that tests can see the checker clean up after them.
  * In Jet they come from races between a job's operations across members: an init operation that is
  * lost or arrives after the job ended, a coordinator that forgets a job while a member still runs it.
  * Here the init runs in the call that starts the job and the coordinator hears of the end from the
  * execution itself, so without these the checker's two cleanups could never be exercised. Reached only
  * inside this package (`LocalEngine.faults`); nothing public sets them.
  */
private[local] final class LightJobFaults {

  /** The next job's init is lost: its execution is registered but its tasklets are never built. */
  val loseNextInit = new AtomicBoolean

  /** A cancel makes the coordinator forget the job at once, not when its execution ends (as Jet's
    * coordinator may, when members do not stop at the same time).
    */
  val forgetOnCancel = new AtomicBoolean
}
