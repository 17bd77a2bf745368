package io.jetspark.engine.spark.epoch

import io.jetspark.engine.spark.epoch.CheckpointManifest.Manifest
import org.scalatest.funsuite.AnyFunSuite

class CheckpointManifestTest extends AnyFunSuite {
  private val written = Manifest(1, Seq("source" -> "items stream", "w" -> "sliding window 40/10, counting", "out" -> "list"))

  test("the same plan and format: nothing differs") {
    assert(CheckpointManifest.differences(written, written.copy()).isEmpty)
  }

  test("each difference is said: the format, a vertex changed, a vertex more or less") {
    val changed = Manifest(2, Seq("source" -> "items stream", "w" -> "session window 12, counting"))
    assert(CheckpointManifest.differences(written, changed) == Seq(
      "its snapshot format is version 1, this jetspark's is 2",
      "vertex 1 was 'w' (sliding window 40/10, counting), here it is 'w' (session window 12, counting)",
      "vertex 2 was 'out' (list), which this job does not have"))
    assert(CheckpointManifest.differences(changed.copy(formatVersion = 1), written).last ==
      "vertex 2 is 'out' (list), which the checkpoint does not have")
  }
}
