package io.jetspark.engine.local

import io.jetspark.core.aggregate.AggregateOperations
import io.jetspark.core.window.{KeyedWindowResult, WindowResult}
import io.jetspark.engine.ListSinkRegistry
import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.CancellationException
import java.util.concurrent.atomic.AtomicBoolean
import scala.util.Random
import io.jetspark.core.testing.TestSeed

/** Light jobs of JVM functions on the local engine, each compared with a brute-force computation of
  * the same pipeline over plain collections.
  */
class LocalEngineTest extends AnyFunSuite {
  private val engine = new LocalEngine(cooperativeThreads = 2)
  private def int(x: Any): Int = x.asInstanceOf[Int]
  private var listCounter = 0
  private def freshList(): String = { listCounter += 1; s"local-engine-test-$listCounter" }

  /** Runs `build`'s pipeline (writing to one fresh list) to completion; returns the list. */
  private def run(parallelism: Int = 2, preserveOrder: Boolean = false, on: LocalEngine = engine)(build: (Pipeline, SinkDefinition) => Unit): Vector[Any] = {
    val name = freshList()
    val p = Pipeline.create(preserveOrder)
    build(p, Sinks.list(name))
    val job = on.newLightJob(p, parallelism)
    if (!job.join(20000)) { job.cancel(); fail(s"still running after 20 s: $job") }
    val out = ListSinkRegistry.items(name)
    ListSinkRegistry.clear(name)
    out
  }

  private def sameMultiset(expected: Seq[Any], actual: Seq[Any]): Unit =
    assert(actual.groupBy(identity).view.mapValues(_.size).toMap == expected.groupBy(identity).view.mapValues(_.size).toMap,
      s"\n  expected (any order): ${expected.take(20)}...\n  actual: ${actual.take(20)}...")

  test("map, filter and flat_map over 1000 items give what the same functions over a Seq give") {
    val input = (1 to 1000).toVector
    val out = run() { (p, sink) =>
      p.readFrom(Sources.items(input)).flatMap((x: Any) => Seq(x, int(x) * 10)).filter((x: Any) => int(x) % 3 != 0)
        .map((x: Any) => int(x) + 1).writeTo(sink)
    }
    sameMultiset(input.flatMap(x => Seq(x, x * 10)).filter(_ % 3 != 0).map(_ + 1), out)
  }

  test("a map returning null emits nothing for that item (Jet's rule)") {
    val out = run() { (p, sink) => p.readFrom(Sources.items(1 to 10)).map((x: Any) => if (int(x) % 2 == 0) null else x).writeTo(sink) }
    sameMultiset(Seq(1, 3, 5, 7, 9), out)
  }

  test("keyed aggregation in two stages (counting, summing) equals a groupBy") {
    val random = new Random(TestSeed(7))
    val words = Vector.fill(2000)(s"w${random.nextInt(40)}")
    val counts = run() { (p, sink) =>
      p.readFrom(Sources.items(words)).groupingKey((w: Any) => w).aggregate(AggregateOperations.counting()).writeTo(sink)
    }
    sameMultiset(words.groupBy(identity).map { case (w, ws) => (w, ws.size.toLong) }.toSeq, counts)
    val sums = run(parallelism = 3) { (p, sink) =>
      p.readFrom(Sources.items(words)).rebalance().groupingKey((w: Any) => w.toString.length)
        .aggregate(AggregateOperations.summingLong((w: Any) => w.toString.drop(1).toLong)).writeTo(sink)
    }
    sameMultiset(words.groupBy(_.length).map { case (k, ws) => (k, ws.map(_.drop(1).toLong).sum) }.toSeq, sums)
  }

  test("global aggregation emits one result, also for no input") {
    assert(run() { (p, sink) => p.readFrom(Sources.items(1 to 100)).aggregate(AggregateOperations.summingLong((x: Any) => int(x).toLong)).writeTo(sink) } ==
      Vector(5050L))
    assert(run() { (p, sink) => p.readFrom(Sources.items(Nil)).aggregate(AggregateOperations.counting()).writeTo(sink) } == Vector(0L))
  }

  test("a sort emits every item in order") {
    val input = Vector.fill(500)(Random.nextInt(100))
    val out = run(parallelism = 3, preserveOrder = true) { (p, sink) => p.readFrom(Sources.items(input)).rebalance(Extractor.ScalaFn(_.hashCode)).sort().writeTo(sink) }
    assert(out == input.sorted)
  }

  test("hash join: every order with its customer, None where there is none; inner drops those") {
    val customers = Vector((1, "ann"), (2, "bob"), (3, "cy"))
    val orders = Vector.tabulate(300)(i => (i, i % 5))
    val joined = run() { (p, sink) =>
      val c = p.readFrom(Sources.items(customers))
      p.readFrom(Sources.items(orders))
        .hashJoin(c, JoinClause.on(Extractor.ScalaFn(_.asInstanceOf[(Int, Int)]._2), Extractor.ScalaFn(_.asInstanceOf[(Int, String)]._1)))
        .writeTo(sink)
    }
    val byId = customers.toMap
    sameMultiset(orders.map(o => (o, byId.get(o._2).map(n => (o._2, n)).orNull)), joined)
    val inner = run() { (p, sink) =>
      val c = p.readFrom(Sources.items(customers))
      p.readFrom(Sources.items(orders))
        .innerHashJoin(c, JoinClause.on(Extractor.ScalaFn(_.asInstanceOf[(Int, Int)]._2), Extractor.ScalaFn(_.asInstanceOf[(Int, String)]._1)),
          Extractor.ScalaFn { pair =>
            val (o, c) = pair.asInstanceOf[((Int, Int), (Int, String))]
            s"${o._1}:${c._2}"
          })
        .writeTo(sink)
    }
    sameMultiset(orders.filter(o => byId.contains(o._2)).map(o => s"${o._1}:${byId(o._2)}"), inner)
  }

  test("a stream joined with what it derives from itself does not deadlock on its full queues") {
    //   source ──────────────────────────▶ join (streamed side, read last)
    //      └──▶ aggregate by key ──▶ ──────▶ join (build side, read first)
    val tight = new LocalEngine(cooperativeThreads = 1, queueCapacity = 4, batchSize = 2)
    val input = (0 until 500).map(i => (i % 5, i)).toVector
    val out = run(on = tight) { (p, sink) =>
      val events = p.readFrom(Sources.items(input))
      val counts = events.groupingKey((e: Any) => e.asInstanceOf[(Int, Int)]._1).aggregate(AggregateOperations.counting())
      events.hashJoin(counts, JoinClause.on(Extractor.ScalaFn(_.asInstanceOf[(Int, Int)]._1), Extractor.ScalaFn(_.asInstanceOf[(Int, Long)]._1)))
        .writeTo(sink)
    }
    sameMultiset(input.map(e => (e, (e._1, 100L))), out)
  }

  test("merge delivers the items of both branches") {
    val out = run() { (p, sink) =>
      val a = p.readFrom(Sources.items(1 to 200))
      val b = p.readFrom(Sources.items(1000 to 1100)).map((x: Any) => -int(x))
      a.merge(b).writeTo(sink)
    }
    sameMultiset((1 to 200) ++ (1000 to 1100).map(-_), out)
  }

  test("map_stateful and rolling aggregation keep their state per key in encounter order") {
    val input = Vector.tabulate(300)(i => (i % 4, i))
    val running = run(preserveOrder = true) { (p, sink) =>
      p.readFrom(Sources.items(input)).groupingKey((x: Any) => x.asInstanceOf[(Int, Int)]._1)
        .mapStateful(() => 0, (state: Any, key: Any, item: Any) => {
          val total = int(state) + item.asInstanceOf[(Int, Int)]._2
          (total, (key, total))
        }).writeTo(sink)
    }
    val expected = input.groupBy(_._1).toSeq.flatMap { case (k, items) => items.map(_._2).scanLeft(0)(_ + _).tail.map((k, _)) }
    sameMultiset(expected, running)
    // per key, the running totals arrive in increasing order
    running.groupBy(_.asInstanceOf[(Int, Int)]._1).values.foreach(vs => assert(vs.map(_.asInstanceOf[(Int, Int)]._2) == vs.map(_.asInstanceOf[(Int, Int)]._2).sorted))
  }

  // Two substreams; substream 1 carries the same timestamps as substream 0 but 30 ms later in the
  // stream: at any point its events are 30 ms older.
  //   substream 0:  ts 0, 1, 2, ..., 299
  //   substream 1:  ts -30, -29, ..., 269     (delivered interleaved, one item of each in turn)
  // With the watermark of each substream its own (lag 0) and the minimum taken over them, nothing is
  // late; a single max-based watermark would drop nearly all of substream 1.
  private val lagging: Seq[Seq[Any]] = Seq((0 until 300).map(t => (t % 3, t.toLong)), (0 until 300).map(t => (t % 3, t - 30L)))
  private def ts(e: Any): Long = e.asInstanceOf[(Int, Long)]._2
  private def key(e: Any): Any = e.asInstanceOf[(Int, Long)]._1

  /** Sliding windows by brute force: every window end (a multiple of `slide`) after each event and
    * within `size` of it, counted per key.
    */
  private def slidingCounts(events: Seq[Any], size: Long, slide: Long): Seq[KeyedWindowResult[Any, Long]] =
    events.flatMap { e =>
      val firstEnd = Math.floorDiv(ts(e), slide) * slide + slide
      Iterator.iterate(firstEnd)(_ + slide).takeWhile(_ <= ts(e) + size - 1 + slide).filter(end => ts(e) >= end - size && ts(e) < end)
        .map(end => (key(e), end))
    }.groupBy(identity).toSeq.map { case ((k, end), hits) => KeyedWindowResult(end - size, end, k, hits.size.toLong) }

  test("keyed sliding windows over a lagging substream: watermarks coalesced per substream, nothing late") {
    for (parallelism <- Seq(1, 2)) {
      val out = run(parallelism) { (p, sink) =>
        p.readFrom(Sources.itemsStream(lagging, 1)).withTimestamps((e: Any) => ts(e), 0L)
          .groupingKey((e: Any) => key(e)).window(WindowDefinition.sliding(10, 2)).aggregate(AggregateOperations.counting())
          .writeTo(sink)
      }
      sameMultiset(slidingCounts(lagging.flatten, 10, 2), out)
    }
  }

  test("a map between the source and the window keeps each event's timestamp; a non-keyed tumbling window counts all") {
    val out = run() { (p, sink) =>
      p.readFrom(Sources.itemsStream(lagging, 3)).withTimestamps((e: Any) => ts(e), 0L)
        .map((e: Any) => s"event at ${ts(e)}")
        .window(WindowDefinition.tumbling(50)).aggregate(AggregateOperations.counting())
        .writeTo(sink)
    }
    val expected = lagging.flatten.groupBy(e => Math.floorDiv(ts(e), 50L) * 50).toSeq.map { case (start, es) => WindowResult(start, start + 50, es.size.toLong) }
    sameMultiset(expected, out)
  }

  test("a tumbling window of an operation that cannot combine runs in one stage (Jet's rule); a sliding one is refused when planned") {
    // Counting that cannot combine: only a tumbling window, one frame per window, takes it.
    val countingAlone = new io.jetspark.plan.PlanTestSupport.CountingWithoutCombine(1)
    def windowOf(w: WindowDefinition)(p: Pipeline, sink: SinkDefinition): Unit =
      p.readFrom(Sources.itemsStream(lagging, 3)).withTimestamps((e: Any) => ts(e), 0L)
        .groupingKey((e: Any) => key(e)).window(w).aggregate(countingAlone).setName("counts").writeTo(sink)
    val expected = lagging.flatten.groupBy(e => (key(e), Math.floorDiv(ts(e), 50L) * 50)).toSeq
      .map { case ((k, start), es) => KeyedWindowResult(start, start + 50, k, es.size.toLong) }
    sameMultiset(expected, run()(windowOf(WindowDefinition.tumbling(50))))
    val error = intercept[PipelineDefinitionError](run()(windowOf(WindowDefinition.sliding(50, 10))))
    assert(error.stage == "counts" && error.rule == PipelineDefinitionError.WindowNeedsCombine, error.getMessage)
  }

  test("session windows per key equal sessions merged by brute force") {
    val random = new Random(TestSeed(11))
    val events: Seq[Any] = (0 until 200).map(_ => (random.nextInt(3), random.nextInt(2000).toLong)).sortBy(ts)
    val timeout = 40L
    val out = run() { (p, sink) =>
      p.readFrom(Sources.itemsStream(Seq(events), 5)).withTimestamps((e: Any) => ts(e), 0L)
        .groupingKey((e: Any) => key(e)).window(WindowDefinition.session(timeout)).aggregate(AggregateOperations.counting())
        .writeTo(sink)
    }
    val expected = events.groupBy(key).toSeq.flatMap { case (k, es) =>
      es.map(ts).sorted.foldLeft(List.empty[(Long, Long, Long)]) {
        case ((start, end, n) :: rest, t) if t < end => (start, math.max(end, t + timeout), n + 1) :: rest
        case (sessions, t) => (t, t + timeout, 1L) :: sessions
      }.map { case (start, end, n) => KeyedWindowResult(start, end, k, n) }
    }
    sameMultiset(expected, out)
  }

  test("a merge of two timestamped streams coalesces their watermarks across the two inputs") {
    val out = run() { (p, sink) =>
      val fast = p.readFrom(Sources.itemsStream(Seq(lagging.head), 1)).withTimestamps((e: Any) => ts(e), 0L)
      val slow = p.readFrom(Sources.itemsStream(Seq(lagging(1)), 1)).withTimestamps((e: Any) => ts(e), 0L)
      fast.merge(slow).groupingKey((e: Any) => key(e)).window(WindowDefinition.tumbling(20)).aggregate(AggregateOperations.counting())
        .writeTo(sink)
    }
    sameMultiset(slidingCounts(lagging.flatten, 20, 20), out)
  }

  test("queues of capacity 2 (back-pressure at every step) give the same result") {
    val tight = new LocalEngine(cooperativeThreads = 2, queueCapacity = 2, batchSize = 3)
    val input = (1 to 2000).toVector
    val out = run(on = tight) { (p, sink) =>
      p.readFrom(Sources.items(input)).map((x: Any) => int(x) % 17).groupingKey((x: Any) => x).aggregate(AggregateOperations.counting()).writeTo(sink)
    }
    sameMultiset(input.map(_ % 17).groupBy(identity).map { case (k, v) => (k, v.size.toLong) }.toSeq, out)
  }

  test("a failing function fails the job, naming the vertex; the registry forgets the job") {
    val p = Pipeline.create()
    p.readFrom(Sources.items(1 to 100)).map((x: Any) => if (int(x) == 42) throw new ArithmeticException("bad 42") else x)
      .setName("fragile").writeTo(Sinks.noop())
    val job = engine.newLightJob(p, 2)
    val e = intercept[LightJobFailedException](job.join())
    assert(e.getMessage.contains("vertex 'fragile'") && e.getMessage.contains("bad 42"), e.getMessage)
    assert(job.status == "FAILED")
    eventually(engine.registeredExecutions == 0)
  }

  test("cancel stops a running job; join throws CancellationException") {
    val p = Pipeline.create()
    p.readFrom(Sources.items(1 to 100000)).map((x: Any) => { Thread.sleep(1); x }).writeTo(Sinks.noop())
    val job = engine.newLightJob(p, 2)
    assert(!job.join(50))
    assert(job.status == "RUNNING")
    job.cancel()
    intercept[CancellationException](job.join())
    assert(job.status == "CANCELLED")
    eventually(engine.registeredExecutions == 0)
  }

  test("what the engine cannot run fails at submit, naming the vertex") {
    val p = Pipeline.create()
    p.readFrom(Sources.items(1 to 3)).map(Extractor.field("x")).setName("by-field").writeTo(Sinks.noop())
    val e = intercept[UnsupportedVertexException](JvmVertices.translate(p.plan(2)))
    assert(e.getMessage.contains("vertex 'by-field'"), e.getMessage)
  }

  test("an execution whose owner is gone is cancelled and removed by the light job checker") {
    val own = new LocalEngine(cooperativeThreads = 1)
    val ownerAlive = new AtomicBoolean(true)
    val endless = LocalDag(
      Seq(LocalVertex("endless", 1, LocalVertices.passThrough, source = Some(_ => Iterator.continually(1))),
        LocalVertex("sink", 1, _ => new SinkProcessor(_ => ()))),
      Seq(LocalEdge("endless", 0, "sink", 0, Routing.RoundRobin)))
    val job = own.newLightJob(endless, "leaky", () => ownerAlive.get)
    assert(!job.join(300) && own.registeredExecutions == 1)
    ownerAlive.set(false)
    val e = intercept[CancellationException](job.join(5000))
    assert(e.getMessage.contains("owner is gone"))
    eventually(own.registeredExecutions == 0)
  }

  test("a small job runs to its end on the caller's thread, within its start") {
    val patient = new LocalEngine(cooperativeThreads = 1, callerRunsNanos = 60L * 1000000000L)
    val caller = Thread.currentThread()
    val threads = java.util.concurrent.ConcurrentHashMap.newKeySet[Thread]()
    val name = freshList()
    val p = Pipeline.create()
    p.readFrom(Sources.items(1 to 300)).map((x: Any) => { threads.add(Thread.currentThread()); int(x) + 1 })
      .groupingKey((x: Any) => int(x) % 3).aggregate(AggregateOperations.counting).writeTo(Sinks.list(name))
    val job = patient.newLightJob(p, 2)
    assert(job.status == "COMPLETED")
    assert(threads.size == 1 && threads.contains(caller))
    sameMultiset((2 to 301).groupBy(_ % 3).map { case (k, xs) => (k, xs.size.toLong) }.toSeq, ListSinkRegistry.items(name))
    ListSinkRegistry.clear(name)
    assert(patient.registeredExecutions == 0)
  }

  test("the caller's thread hands the job to the engine's threads when its time is up, or at once when nothing progresses") {
    val caller = Thread.currentThread()
    // One item per call: the caller runs the source's first call and the map's first item, which takes
    // longer than the caller may run (100 ms, long enough for the calls before it on a loaded machine);
    // the other items are mapped on the engine's threads.
    val brief = new LocalEngine(cooperativeThreads = 1, batchSize = 1, callerRunsNanos = 100000000L)
    val threads = new java.util.concurrent.ConcurrentLinkedQueue[Thread]()
    val out = run(parallelism = 1, on = brief) { (p, sink) =>
      p.readFrom(Sources.items(1 to 5)).map((x: Any) => { threads.add(Thread.currentThread()); Thread.sleep(200); x }).writeTo(sink)
    }
    sameMultiset(1 to 5, out)
    assert(threads.peek() == caller && threads.toArray.tail.forall(_ != caller), threads)
    // A stream with nothing due: a round without progress, so start returns long before the caller's time
    // (a minute) is up, the job running on.
    val patient = new LocalEngine(cooperativeThreads = 1, callerRunsNanos = 60L * 1000000000L)
    val waiting = LocalDag(
      Seq(LocalVertex("waiting", 1, LocalVertices.passThrough, source = Some(_ => Iterator.continually(NothingDue))),
        LocalVertex("sink", 1, _ => new SinkProcessor(_ => ()))),
      Seq(LocalEdge("waiting", 0, "sink", 0, Routing.RoundRobin)))
    val started = System.nanoTime()
    val job = patient.newLightJob(waiting, "waiting")
    assert(System.nanoTime() - started < 30L * 1000000000L && job.status == "RUNNING")
    job.cancel()
    intercept[CancellationException](job.join(5000))
    eventually(patient.registeredExecutions == 0)
  }

  private def eventually(condition: => Boolean): Unit = {
    val deadline = System.nanoTime() + 5000000000L
    while (!condition && System.nanoTime() < deadline) Thread.sleep(10)
    assert(condition)
  }
}
