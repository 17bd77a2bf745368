package io.jetspark.engine.local

import io.jetspark.core.ProcessorContext
import io.jetspark.pipeline.Pipeline

import java.util.concurrent.{ArrayBlockingQueue, CancellationException, ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.AtomicLong
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/** A Jet-like engine inside one JVM (DESIGN.md "The local engine and light jobs"): every vertex runs as
  * `parallelism` processor instances on a small pool of cooperative threads, connected by bounded
  * queues, one per (sender instance, receiver instance) of an edge; watermarks are coalesced over the
  * senders of an edge and over the edges of a processor by the core's coalescer. A processor takes up to
  * `batchSize` items per call (one callback to Python per batch, for a Python light job).
  *
  * It runs light jobs: [[newLightJob]] plans nothing and stores nothing; it builds the tasklets, runs
  * them on the caller's thread for up to `callerRunsNanos` (while they progress), and hands what is left
  * to the worker threads: a small job has ended when its start returns, with no thread hand-off, so its
  * submit and join take tens of microseconds. A job's functions therefore must not wait for what its
  * submitter does after the start.
  *
  * A job's life has two sides, both in memory, as in Jet's design doc 020: the coordinator's (the jobs
  * it started and has not seen end, [[LightJobCoordinator]]) and the engine's registry of executions.
  * An execution is registered, then initialised (its tasklets built and submitted), and leaves the
  * registry when it ends. The light job checker (Jet's Light Job Checker) runs every second while some
  * execution is registered, and not at all otherwise, and removes what leaked:
  *  - an execution still not initialised `uninitializedTimeoutMs` after it was registered (its init was
  *    lost); its job fails. Jet waits 5 minutes, the default here too: an init that came later would
  *    find its execution gone, and that loss would go unnoticed, so the timeout must outlast any delay;
  *  - an initialised execution its coordinator no longer knows (Jet's `CheckLightJobsOperation`): an
  *    orphan, e.g. one whose tasklets did not all stop after a cancel that the coordinator considered
  *    done. It is terminated at once: its job ends as cancelled and it leaves the registry, although a
  *    tasklet blocked inside a call of its processor only stops when that call returns;
  *  - an execution whose owner is gone (`ownerAlive` false: nobody can join or cancel it any more),
  *    which is cancelled, and one that ended but is still registered.
  *
  * {{{
  * val p = Pipeline.create()
  * p.readFrom(Sources.items(Seq(1, 2, 3))).map((x: Any) => x.asInstanceOf[Int] * 2).writeTo(Sinks.list("out"))
  * LocalEngine.default.newLightJob(p).join()
  * }}}
  */
final class LocalEngine(cooperativeThreads: Int, queueCapacity: Int = 1024, val batchSize: Int = 256,
    uninitializedTimeoutMs: Long = LocalEngine.DefaultUninitializedTimeoutMs, val callerRunsNanos: Long = LocalEngine.DefaultCallerRunsNanos) {
  require(uninitializedTimeoutMs > 0, s"uninitializedTimeoutMs must be positive, was $uninitializedTimeoutMs")
  require(callerRunsNanos >= 0, s"callerRunsNanos must be 0 or more, was $callerRunsNanos")
  private val service = new ExecutionService(cooperativeThreads)
  private val executions = new ConcurrentHashMap[Long, LocalExecution]()
  private val ids = new AtomicLong
  private val checks = new AtomicLong
  private[local] val faults = new LightJobFaults
  private[local] val coordinator = new LightJobCoordinator(faults)
  private lazy val checker: ScheduledExecutorService = {
    val scheduler = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "jetspark-light-job-checker"); t.setDaemon(true); t
    }
    scheduler.scheduleWithFixedDelay(() => check(), LocalEngine.CheckIntervalMs, LocalEngine.CheckIntervalMs, TimeUnit.MILLISECONDS)
    scheduler
  }

  /** The default parallelism of a vertex: one processor per cooperative thread. */
  def parallelism: Int = service.threadCount

  /** Plans `pipeline` (with [[parallelism]]) and starts it as a light job of JVM functions. */
  def newLightJob(pipeline: Pipeline): LightJob = newLightJob(pipeline, parallelism)

  def newLightJob(pipeline: Pipeline, parallelism: Int): LightJob =
    newLightJob(JvmVertices.translate(pipeline.plan(parallelism)), "light-job")

  /** Starts `dag`: registers its execution, builds its tasklets, runs them on the caller's thread for up
    * to `callerRunsNanos` ([[runOnCaller]]; 0: not at all) and submits the rest, nothing else.
    */
  def newLightJob(dag: LocalDag, name: String, ownerAlive: () => Boolean = () => true,
      callerRunsNanos: Long = callerRunsNanos): LightJob = {
    val execution = new LocalExecution(ids.incrementAndGet(), name, ownerAlive)
    // The coordinator knows the job before its execution is registered, so the checker never finds a
    // sound execution unknown.
    coordinator.started(execution.id)
    executions.put(execution.id, execution)
    execution.onDone { () => executions.remove(execution.id); coordinator.ended(execution.id) }
    checker
    if (!faults.loseNextInit.compareAndSet(true, false)) {
      try {
        val tasklets = build(dag, execution)
        execution.start(tasklets)
        // A fatal error thrown from a function on this thread ends the job before it reaches the caller.
        service.submit(try runOnCaller(tasklets, callerRunsNanos) catch { case e: Throwable => execution.terminate(e); throw e })
      } catch {
        case NonFatal(e) => execution.abandon(e)
      }
    }
    new LightJob(execution.id, name, execution, coordinator)
  }

  /** Runs `tasklets` on the caller's thread, a round (one call of each) at a time, while some progress and
    * for at most `callerRunsNanos` (checked after each call); returns those not done, for the worker
    * threads. A small job ends here, so its start returns it ended, without a hand-off to another thread
    * (each costs a wake-up, and a Python light job's callbacks from the caller's thread reach Python on the
    * connection it is waiting on). A round without progress waits for something outside the job (a
    * stream's next item, a queue's reader on another thread): the rest is handed off at once.
    */
  private def runOnCaller(tasklets: Seq[LocalTasklet], callerRunsNanos: Long): Seq[LocalTasklet] = {
    val deadline = System.nanoTime() + callerRunsNanos
    def due = System.nanoTime() - deadline >= 0
    var left = tasklets.toVector
    var progressed = true
    while (left.nonEmpty && progressed && !due) {
      progressed = false
      var i = 0
      while (i < left.size && !due) { if (left(i).call()) progressed = true; i += 1 }
      left = left.filterNot(_.isDone)
    }
    left
  }

  /** Executions registered now (running ones, and leaked ones until the checker removes them). */
  def registeredExecutions: Int = executions.size

  /** How many rounds the light job checker has run: tests see by it that none runs while no execution is
    * registered.
    */
  private[local] def checksRun: Long = checks.get

  /** One round of the light job checker (see the class doc). */
  private def check(): Unit = if (!executions.isEmpty) {
    checks.incrementAndGet()
    val now = System.nanoTime()
    val initialized = executions.values.asScala.toSeq.filter { e =>
      if (e.isDone) { executions.remove(e.id, e); false }
      else if (e.isInitialized) true
      else {
        if (now - e.registeredAtNanos >= TimeUnit.MILLISECONDS.toNanos(uninitializedTimeoutMs)) {
          e.terminate(new LightJobFailedException(
            s"light job ${e.name} was not initialized within $uninitializedTimeoutMs ms; the light job checker removed it", null))
          executions.remove(e.id, e)
        }
        false
      }
    }
    if (initialized.nonEmpty) {
      val orphans = coordinator.unknown(initialized.map(_.id)).toSet
      initialized.foreach { e =>
        if (orphans(e.id)) {
          e.terminate(new CancellationException(
            s"light job ${e.name} was terminated by the light job checker: its coordinator no longer knows it"))
          executions.remove(e.id, e)
        } else if (!(try e.ownerAlive() catch { case NonFatal(_) => false }))
          e.fail(new CancellationException(s"light job ${e.name} was cancelled: its owner is gone"))
      }
    }
  }

  private def build(dag: LocalDag, execution: LocalExecution): Seq[LocalTasklet] = {
    // queues(edge index)(sender)(receiver)
    val queues = dag.edges.map { e =>
      val (senders, receivers) = (dag.vertex(e.from).parallelism, dag.vertex(e.to).parallelism)
      Array.tabulate(senders, receivers) { (s, r) =>
        val reaches = e.routing match {
          case Routing.Isolated => s % receivers == r
          case Routing.AllToOne => r == 0
          case _ => true
        }
        if (reaches) new ArrayBlockingQueue[Any](queueCapacity) else null
      }
    }
    val edgeIndex = dag.edges.zipWithIndex.toMap
    dag.vertices.flatMap { v =>
      val ordinals = dag.inputOrdinals(v.name)
      val groups = ordinals.groupBy(_._1.priority).toList.sortBy(_._1)
        .map(_._2.flatMap { case (_, first, count) => first until first + count }.toList)
      (0 until v.parallelism).map { i =>
        val inputs = ordinals.flatMap { case (e, _, count) =>
          val q = queues(edgeIndex(e))
          if (e.sendersApart) (0 until count).map(s => new InputOrdinal(Option(q(s)(i)).toArray))
          else Seq(new InputOrdinal(q.indices.flatMap(s => Option(q(s)(i))).toArray))
        }.toIndexedSeq
        val outputs = dag.edgesFrom(v.name).map(e => new OutputEdge(queues(edgeIndex(e))(i), e.routing, e.errorsOf, e.carriesSequence)).toIndexedSeq
        new LocalTasklet(execution, v, ProcessorContext(v.name, i, v.parallelism), inputs, groups, outputs,
          v.source.map(_(i)), batchSize)
      }
    }
  }
}

object LocalEngine {
  /** Jet's interval of the light job checker. */
  private[local] val CheckIntervalMs = 1000L

  /** How long a job's start runs it on the caller's thread before the worker threads take it over. */
  val DefaultCallerRunsNanos: Long = 5000000L

  /** Jet's timeout of an uninitialised execution. */
  val DefaultUninitializedTimeoutMs: Long = 5 * 60 * 1000L

  /** The engine of this JVM: as many cooperative threads as cores, at least two, at most four. */
  lazy val default: LocalEngine = new LocalEngine(math.max(2, math.min(4, Runtime.getRuntime.availableProcessors())))

  def newLightJob(pipeline: Pipeline): LightJob = default.newLightJob(pipeline)
}
