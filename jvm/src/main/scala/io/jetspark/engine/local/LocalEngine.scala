package io.jetspark.engine.local

import io.jetspark.core.ProcessorContext
import io.jetspark.pipeline.Pipeline

import java.util.concurrent.{ArrayBlockingQueue, ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.AtomicLong
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/** A Jet-like engine inside one JVM (DESIGN.md "The local engine and light jobs"): every vertex runs as
  * `parallelism` processor instances on a small pool of cooperative threads, connected by bounded
  * queues, one per (sender instance, receiver instance) of an edge; watermarks are coalesced over the
  * senders of an edge and over the edges of a processor by the core's coalescer.
  *
  * It runs light jobs: [[newLightJob]] plans nothing and stores nothing; it builds the tasklets and
  * hands them to the worker threads in one step, so a trivial job's submit and join take microseconds.
  * Running executions are kept in an in-memory registry and leave it when they end. A check every
  * second (only while some execution is registered) cleans up what leaked: an execution that ended but
  * is still registered, or one whose owner is gone (nobody can join or cancel it any more), which is
  * cancelled.
  *
  * {{{
  * val p = Pipeline.create()
  * p.readFrom(Sources.items(Seq(1, 2, 3))).map((x: Any) => x.asInstanceOf[Int] * 2).writeTo(Sinks.list("out"))
  * LocalEngine.default.newLightJob(p).join()
  * }}}
  */
final class LocalEngine(cooperativeThreads: Int, queueCapacity: Int = 1024, batchSize: Int = 256) {
  private val service = new ExecutionService(cooperativeThreads)
  private val executions = new ConcurrentHashMap[Long, LocalExecution]()
  private val ids = new AtomicLong
  private lazy val leakCheck: ScheduledExecutorService = {
    val scheduler = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "jetspark-light-job-checker"); t.setDaemon(true); t
    }
    scheduler.scheduleWithFixedDelay(() => cleanUpLeaks(), 1, 1, TimeUnit.SECONDS)
    scheduler
  }

  /** The default parallelism of a vertex: one processor per cooperative thread. */
  def parallelism: Int = service.threadCount

  /** Plans `pipeline` (with [[parallelism]]) and starts it as a light job of JVM functions. */
  def newLightJob(pipeline: Pipeline): LightJob = newLightJob(pipeline, parallelism)

  def newLightJob(pipeline: Pipeline, parallelism: Int): LightJob =
    newLightJob(JvmVertices.translate(pipeline.plan(parallelism)), "light-job")

  /** Starts `dag`: builds its tasklets and submits them, nothing else. */
  def newLightJob(dag: LocalDag, name: String, ownerAlive: () => Boolean = () => true): LightJob = {
    val execution = new LocalExecution(ids.incrementAndGet(), name, ownerAlive)
    executions.put(execution.id, execution)
    execution.onDone(() => { executions.remove(execution.id); () })
    leakCheck
    try {
      val tasklets = build(dag, execution)
      execution.start(tasklets.size)
      service.submit(tasklets)
    } catch {
      case NonFatal(e) => execution.abandon(e)
    }
    new LightJob(execution.id, name, execution)
  }

  /** Executions registered now (running ones, and leaked ones until the next check). */
  def registeredExecutions: Int = executions.size

  private def cleanUpLeaks(): Unit = executions.values.asScala.foreach { e =>
    if (e.isDone) executions.remove(e.id)
    else if (!(try e.ownerAlive() catch { case NonFatal(_) => false }))
      e.fail(new java.util.concurrent.CancellationException(s"light job ${e.name} was cancelled: its owner is gone"))
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
  /** The engine of this JVM: as many cooperative threads as cores, at least two, at most four. */
  lazy val default: LocalEngine = new LocalEngine(math.max(2, math.min(4, Runtime.getRuntime.availableProcessors())))

  def newLightJob(pipeline: Pipeline): LightJob = default.newLightJob(pipeline)
}
