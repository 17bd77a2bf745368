package io.jetspark.engine.local

import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.{CancellationException, CountDownLatch}

/** The light job checker (Jet's Light Job Checker): the faults it exists for are injected through
  * [[LightJobFaults]], and every test ends with nothing registered and no job known to the coordinator.
  * The checker runs every [[LocalEngine.CheckIntervalMs]]; waits are bounded by that.
  */
class LightJobCheckerTest extends AnyFunSuite {
  private val interval = LocalEngine.CheckIntervalMs

  /** A job whose source, on a thread of its own, blocks in its iterator until `release` opens: a
    * function that ignores a cancel for as long as it runs. Its engine must hand every job to its threads
    * at once (`callerRunsNanos = 0`): run on the caller's thread first, the source would block the test.
    */
  private def stuckJob(engine: LocalEngine, release: CountDownLatch): LightJob = {
    val dag = LocalDag(
      Seq(LocalVertex("stuck", 1, LocalVertices.passThrough, cooperative = false,
          source = Some(_ => Iterator(1) ++ Iterator.continually { release.await(); 2 })),
        LocalVertex("sink", 1, _ => new SinkProcessor(_ => ()))),
      Seq(LocalEdge("stuck", 0, "sink", 0, Routing.RoundRobin)))
    engine.newLightJob(dag, "stuck")
  }

  private def trivialDag: LocalDag = LocalDag(
    Seq(LocalVertex("one", 1, LocalVertices.passThrough, source = Some(_ => Iterator(1))),
      LocalVertex("sink", 1, _ => new SinkProcessor(_ => ()))),
    Seq(LocalEdge("one", 0, "sink", 0, Routing.RoundRobin)))

  test("an execution whose init was lost is removed once the uninitialized timeout has passed, not before") {
    val timeoutMs = 2500L
    val engine = new LocalEngine(cooperativeThreads = 1, uninitializedTimeoutMs = timeoutMs)
    engine.faults.loseNextInit.set(true)
    val started = System.nanoTime()
    val job = engine.newLightJob(trivialDag, "lost-init")
    assert(engine.registeredExecutions == 1 && job.status == "RUNNING" && engine.coordinator.knows(job.id))
    // The first check comes after one interval, younger than the timeout: it must leave the execution.
    eventually(interval * 2)(engine.checksRun >= 1)
    // The registry is read before the clock: what it says was true at least that early.
    val registered = engine.registeredExecutions
    if (System.nanoTime() - started < timeoutMs * 1000000L) assert(registered == 1, "removed before its timeout")
    val e = intercept[LightJobFailedException](job.join(timeoutMs + 2 * interval))
    assert(e.getMessage.contains(s"not initialized within $timeoutMs ms"), e.getMessage)
    assert(System.nanoTime() - started >= timeoutMs * 1000000L)
    assert(job.status == "FAILED")
    assert(engine.registeredExecutions == 0 && !engine.coordinator.knows(job.id))
    // Only the next job's init was lost.
    assert(engine.newLightJob(trivialDag, "sound").join(5000))
    eventually(interval)(engine.registeredExecutions == 0)
  }

  test("an execution its coordinator forgot after a cancel, still running, is terminated and removed at the next check") {
    val engine = new LocalEngine(cooperativeThreads = 1, callerRunsNanos = 0)
    engine.faults.forgetOnCancel.set(true)
    val release = new CountDownLatch(1)
    try {
      val job = stuckJob(engine, release)
      assert(!job.join(200))
      job.cancel()
      // The fault: the coordinator forgot the job, but its stuck tasklet keeps the execution registered.
      assert(!engine.coordinator.knows(job.id) && engine.registeredExecutions == 1 && job.status == "RUNNING")
      intercept[CancellationException](job.join(2 * interval + 500))
      assert(job.status == "CANCELLED" && engine.registeredExecutions == 0)
    } finally release.countDown()
    // The tasklet, released, finds its execution terminated and stops; nothing comes back to the registry.
    Thread.sleep(100)
    assert(engine.registeredExecutions == 0 && engine.coordinator.knownCount == 0)
  }

  test("the checker leaves alone an execution its coordinator knows, however long it runs or takes to stop") {
    // A timeout far shorter than the job: it applies to executions never initialised, not to this one.
    val engine = new LocalEngine(cooperativeThreads = 1, uninitializedTimeoutMs = 100, callerRunsNanos = 0)
    val release = new CountDownLatch(1)
    try {
      val job = stuckJob(engine, release)
      eventually(interval * 2)(engine.checksRun >= 1)
      assert(job.status == "RUNNING" && engine.registeredExecutions == 1)
      job.cancel()
      // The coordinator waits for the execution to end after a cancel: a check in between leaves it.
      val checks = engine.checksRun
      eventually(interval * 2)(engine.checksRun > checks)
      assert(job.status == "RUNNING" && engine.registeredExecutions == 1 && engine.coordinator.knows(job.id))
      release.countDown()
      intercept[CancellationException](job.join(5000))
      assert(job.status == "CANCELLED")
      eventually(interval)(engine.registeredExecutions == 0 && engine.coordinator.knownCount == 0)
    } finally release.countDown()
  }

  test("no check runs while no execution is registered") {
    val engine = new LocalEngine(cooperativeThreads = 1, callerRunsNanos = 0)
    assert(engine.newLightJob(trivialDag, "first").join(5000))
    eventually(interval)(engine.registeredExecutions == 0)
    val idle = engine.checksRun
    Thread.sleep(interval * 3 / 2)
    assert(engine.checksRun == idle, "a check ran with nothing registered")
    val release = new CountDownLatch(1)
    try {
      val job = stuckJob(engine, release)
      eventually(interval * 2)(engine.checksRun > idle)
      job.cancel()
    } finally release.countDown()
    eventually(interval)(engine.registeredExecutions == 0)
  }

  private def eventually(withinMs: Long)(condition: => Boolean): Unit = {
    val deadline = System.nanoTime() + (withinMs + 500) * 1000000L
    while (!condition && System.nanoTime() < deadline) Thread.sleep(10)
    assert(condition)
  }
}
