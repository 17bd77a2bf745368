package io.jetspark.python

import io.jetspark.engine.local.{LightJob, LocalEngine, PythonCallback, PythonVertices}
import io.jetspark.plan.PhysicalDag

/** A Python pipeline planned for the local engine, between the two calls Python makes: it reads the
  * work it must answer (`pythonWorkJson`), then starts the light job with its callback (`start`).
  */
final class PreparedLightJob(val dag: PhysicalDag) {
  /** See [[PythonVertices.workJson]]. */
  def pythonWorkJson(): String = PythonVertices.workJson(dag)

  /** Starts the light job on this JVM's local engine; Python work runs through `python`, which also
    * tells the engine's leak check whether the driver's Python is still there.
    */
  def start(python: PythonCallback, jobId: String): LightJob =
    LocalEngine.default.newLightJob(PythonVertices.translate(dag, python), jobId, () => python.ping())
}
