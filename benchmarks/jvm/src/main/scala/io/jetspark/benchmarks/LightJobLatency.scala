package io.jetspark.benchmarks

import io.jetspark.core.aggregate.AggregateOperations
import io.jetspark.engine.ListSinkRegistry
import io.jetspark.engine.local.{JvmVertices, LocalEngine}
import io.jetspark.pipeline.{Pipeline, Sinks, Sources}

/** Submit-to-`join()` latency of a small light job of JVM functions on the local engine, timed inside the
  * JVM (`System.nanoTime` around `newLightJob(...).join()`): 100 items, a filter, a keyed sum, a list sink,
  * the pipeline built once with the Scala API and run `runs` times after `warmup` runs, the list cleared
  * between runs outside the timed part. Two forms:
  *  - `pipeline`: `LocalEngine.default.newLightJob(pipeline)`, which plans the pipeline at every submit (what
  *    a caller of the API pays);
  *  - `dag`: the planned and translated DAG submitted again and again (the engine's own part).
  *
  * `benchmarks/python/light_jobs.py` calls [[measure]] through py4j, so that one run of it compares these
  * with the same pipeline from Python, as a Spark job and a bare py4j call; [[main]] prints them on its own:
  * `dev/sbt "benchmarks/runMain io.jetspark.benchmarks.LightJobLatency"`. Not a test: nothing is asserted
  * beyond the job's result being right.
  */
object LightJobLatency {
  val Items = 100
  private val ListName = "light-job-latency-jvm"

  def pipeline(): Pipeline = {
    val p = Pipeline.create()
    p.readFrom(Sources.items(0 until Items)).filter((x: Any) => x.asInstanceOf[Int] % 3 != 0)
      .groupingKey((x: Any) => x.asInstanceOf[Int] % 10)
      .aggregate(AggregateOperations.summingLong((x: Any) => x.asInstanceOf[Int].toLong))
      .writeTo(Sinks.list(ListName))
    p
  }

  /** What the list must hold after one run: (key, sum) per key. */
  private val expected: Set[Any] =
    (0 until Items).filter(_ % 3 != 0).groupBy(_ % 10).map { case (k, xs) => (k, xs.map(_.toLong).sum) }.toSet

  /** Runs the pipeline both ways and returns their latencies in µs as
    * `[pipeline p50, pipeline p99, dag p50, dag p99]` (nearest-rank percentiles, as the Python script computes
    * its own).
    */
  def measure(runs: Int, warmup: Int): Array[Double] = {
    val engine = LocalEngine.default
    val p = pipeline()
    val dag = JvmVertices.translate(p.plan(engine.parallelism))
    def once(submit: () => Unit): Long = {
      val start = System.nanoTime()
      submit()
      val took = System.nanoTime() - start
      val got = ListSinkRegistry.items(ListName)
      ListSinkRegistry.clear(ListName)
      if (got.toSet != expected || got.size != expected.size) throw new IllegalStateException(s"wrong result: $got")
      took
    }
    val viaPipeline = () => engine.newLightJob(p).join()
    val viaDag = () => engine.newLightJob(dag, "light-job-latency").join()
    (1 to warmup).foreach { _ => once(viaPipeline); once(viaDag) }
    // Interleaved, so that a drift of the machine falls on both alike.
    val (a, b) = (new Array[Long](runs), new Array[Long](runs))
    for (i <- 0 until runs) { a(i) = once(viaPipeline); b(i) = once(viaDag) }
    Array(percentile(a, 0.5), percentile(a, 0.99), percentile(b, 0.5), percentile(b, 0.99))
  }

  /** The nearest-rank percentile `q` of `nanos`, in µs. */
  def percentile(nanos: Array[Long], q: Double): Double = {
    val sorted = nanos.sorted
    sorted(math.max(0, math.ceil(q * sorted.length).toInt - 1)) / 1000.0
  }

  def main(args: Array[String]): Unit = {
    val runs = args.headOption.map(_.toInt).getOrElse(1000)
    val Array(p50, p99, dagP50, dagP99) = measure(runs, warmup = 20000)
    println(f"light job of JVM functions, $Items items -> filter -> keyed sum -> list, $runs runs:")
    println(f"  newLightJob(pipeline).join(): p50 $p50%.1f µs, p99 $p99%.1f µs")
    println(f"  newLightJob(dag).join():      p50 $dagP50%.1f µs, p99 $dagP99%.1f µs")
  }
}
