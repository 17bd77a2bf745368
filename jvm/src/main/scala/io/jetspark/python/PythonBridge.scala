package io.jetspark.python

import io.jetspark.JetSparkVersion
import io.jetspark.engine.ListSinkRegistry
import io.jetspark.engine.local.{LocalEngine, PythonCallback, PythonVertices}
import io.jetspark.engine.spark.FileSources
import io.jetspark.engine.spark.runner.PythonRowSinks
import io.jetspark.item.PythonValues

import org.apache.spark.sql.SparkSession

/** The one JVM surface that the Python package calls through py4j. Everything Python needs goes
  * through here, in few calls: a py4j round trip costs about a millisecond.
  */
object PythonBridge {

  /** The jar's version; Python compares it with its own to catch a stale jar. */
  def version(): String = JetSparkVersion.current

  /** The plan of the pipeline that the Python layer recorded as `spec` (see [[PipelineSpecReader]]), as
    * text; `parallelism` 0 plans with the session's default parallelism. A definition error comes back
    * as [[io.jetspark.pipeline.definition.PipelineDefinitionError]], naming the stage and the rule.
    */
  def explain(spec: String, parallelism: Int): String = plan(spec, parallelism).explain()

  /** The same plan as Graphviz DOT. */
  def toDot(spec: String, parallelism: Int): String = plan(spec, parallelism).toDot()

  /** The same plan as a Mermaid flowchart. */
  def toMermaid(spec: String, parallelism: Int): String = plan(spec, parallelism).toMermaid()

  /** Plans a batch pipeline for the Spark engine. `objects` holds what the spec's `ref`s number: item
    * pickles for `Sources.items`, and null where a Python callable stays in Python.
    */
  def prepareBatch(spark: SparkSession, spec: String, objects: java.util.List[AnyRef], parallelism: Int): PreparedBatchJob = {
    val p = if (parallelism > 0) parallelism else spark.sparkContext.defaultParallelism
    new PreparedBatchJob(spark, FileSources.resolve(spark, PipelineSpecReader.read(spec, objects).plan(p)))
  }

  /** Plans a stream pipeline for the Spark epoch engine (same spec and objects as [[prepareBatch]]). */
  def prepareStream(spark: SparkSession, spec: String, objects: java.util.List[AnyRef], parallelism: Int): PreparedStreamJob = {
    val p = if (parallelism > 0) parallelism else spark.sparkContext.defaultParallelism
    new PreparedStreamJob(spark, PipelineSpecReader.read(spec, objects).plan(p))
  }

  /** Plans a pipeline (same spec and objects as [[prepareBatch]]) and starts it as a light job on this
    * JVM's local engine, in one call; `parallelism` 0 plans with the engine's thread count. Python work
    * runs through `python`, which also tells the engine's light job checker whether the driver's Python is
    * still there. What the engine cannot run fails here, naming the vertex. The engine runs the job on
    * this thread first, for up to `callerRunsNanos`.
    *
    * Returns the job; or, when it completed within this call (the engine runs a small job on the
    * caller's thread), the late events its windows dropped, a `java.lang.Long`: Python then holds no
    * handle, and needs no round trip to join it or to release it.
    */
  def startLight(spec: String, objects: java.util.List[AnyRef], python: PythonCallback, jobId: String, parallelism: Int,
      callerRunsNanos: Long): AnyRef = {
    val p = if (parallelism > 0) parallelism else LocalEngine.default.parallelism
    val dag = PythonVertices.translate(PipelineSpecReader.read(spec, objects).plan(p), python)
    val job = LocalEngine.default.newLightJob(dag, jobId, () => python.ping(), callerRunsNanos)
    if (job.status == "COMPLETED") java.lang.Long.valueOf(job.lateEventsDropped) else job
  }

  /** How many light job executions this JVM's local engine has registered now; for tests, which check
    * that every execution leaves the registry when its job ends.
    */
  def lightExecutions(): Int = LocalEngine.default.registeredExecutions

  /** How many items the local engine gives a processor per call: a Python light job calls back once per
    * such batch (tests bound the number of callbacks by it).
    */
  def lightBatchSize(): Int = LocalEngine.default.batchSize

  /** [[startLight]] with `objects` packed in one byte array (`jetspark._protocol.packed_objects`: a frame
    * per object, empty for null, else a 1 byte and the object's bytes), as Python sends them when every
    * object is bytes or null: py4j would send a list element by element, a round trip each.
    */
  def startLightPacked(spec: String, objects: Array[Byte], python: PythonCallback, jobId: String, parallelism: Int,
      callerRunsNanos: Long): AnyRef =
    startLight(spec, unpackObjects(objects), python, jobId, parallelism, callerRunsNanos)

  private[python] def unpackObjects(packed: Array[Byte]): java.util.List[AnyRef] = {
    val out = new java.util.ArrayList[AnyRef]()
    PythonValues.unpackFrames(packed).foreach { frame =>
      out.add(if (frame.isEmpty) null else java.util.Arrays.copyOfRange(frame, 1, frame.length))
    }
    out
  }

  /** What list sink `name` holds so far: its items' pickles, packed in one byte array. */
  def getList(name: String): Array[Byte] = PythonValues.packFrames(ListSinkRegistry.pickles(name))
  def clearList(name: String): Unit = ListSinkRegistry.clear(name)
  def drainList(name: String): Array[Byte] = PythonValues.packFrames(ListSinkRegistry.drainPickles(name))

  /** The Python side of job `jobId`'s files and foreach-batch sinks, for the time the job runs. */
  def registerRowSinks(jobId: String, sinks: PythonRowSinks): Unit = PythonRowSinks.register(jobId, sinks)
  def unregisterRowSinks(jobId: String): Unit = PythonRowSinks.unregister(jobId)

  private def plan(spec: String, parallelism: Int) = {
    val p = if (parallelism > 0) parallelism else SparkSession.active.sparkContext.defaultParallelism
    PipelineSpecReader.read(spec, null).plan(p)
  }

  /** Runs one task per partition that loads this jar's classes on an executor and reports the version
    * it found there: proof that `spark.jars` / `--jars` reached the executors, not only the driver.
    */
  def executorVersions(spark: SparkSession, partitions: Int): Array[String] =
    spark.sparkContext
      .parallelize(0 until partitions, partitions)
      .map(_ => JetSparkVersion.current)
      .collect()
}
