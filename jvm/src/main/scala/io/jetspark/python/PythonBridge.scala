package io.jetspark.python

import io.jetspark.JetSparkVersion
import io.jetspark.engine.ListSinkRegistry
import io.jetspark.engine.spark.PythonValues

import org.apache.spark.sql.SparkSession

/** The one JVM surface that the Python package calls through py4j. Everything Python needs goes
  * through here, in few calls: a py4j round trip costs about a millisecond.
  */
object PythonBridge {

  /** The jar's version; Python compares it with its own to catch a stale jar. */
  def version(): String = JetSparkVersion.current

  /** The plan of the pipeline that the Python layer recorded as `spec` (see [[PipelineSpecReader]]), as
    * text; `parallelism` 0 plans with the session's default parallelism. A definition error comes back
    * as [[io.jetspark.pipeline.PipelineDefinitionError]], naming the stage and the rule.
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
    new PreparedBatchJob(spark, PipelineSpecReader.read(spec, objects).plan(p))
  }

  /** Plans a pipeline for a light job on the local engine (same spec and objects as [[prepareBatch]]);
    * `parallelism` 0 plans with the local engine's thread count.
    */
  def prepareLight(spec: String, objects: java.util.List[AnyRef], parallelism: Int): PreparedLightJob = {
    val p = if (parallelism > 0) parallelism else io.jetspark.engine.local.LocalEngine.default.parallelism
    new PreparedLightJob(PipelineSpecReader.read(spec, objects).plan(p))
  }

  /** What list sink `name` holds so far: its items' pickles, packed in one byte array. */
  def getList(name: String): Array[Byte] = PythonValues.packFrames(ListSinkRegistry.pickles(name))
  def clearList(name: String): Unit = ListSinkRegistry.clear(name)

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
