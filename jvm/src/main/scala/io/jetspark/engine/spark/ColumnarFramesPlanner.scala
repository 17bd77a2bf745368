package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.engine.spark.FrameLayout._
import io.jetspark.pipeline.PythonAggregateSpec

import scala.jdk.CollectionConverters._

/** Which typed windows keep their frames as columns ([[ColumnarFrames]]), and how. */
private[spark] object ColumnarFramesPlanner {
  /** The columnar frames of `window` with operation `op`, or None where `op` has another part or a pick
    * reads a value that is not an integer (floats compare as Python compares them, NaN included, in the
    * core's operations).
    */
  def plan(window: TypedWindow, op: PythonAggregateSpec, budget: () => FrameTable.Budget = () => new FrameTable.Budget()): Option[ColumnarFrames] = {
    val parts = Array.newBuilder[Part]
    var count = 0
    def shapeOf(spec: JsonNode): Option[Shape] = {
      def slot = spec.get("slots").get(0).asInt
      spec.get("name").asText match {
        case "counting" => parts += Count; count += 1; Some(Leaf(count - 1))
        case name @ ("min_by" | "max_by") => TypedWindow.integral(window.values(slot)._2).map { read =>
          parts += Pick(2 + slot, read, greatest = name == "max_by"); count += 1; Leaf(count - 1)
        }
        case "all_of" =>
          val shapes = spec.get("parts").elements().asScala.map(shapeOf).toSeq
          if (shapes.forall(_.isDefined)) Some(AllOf(shapes.flatten)) else None
        case _ => None
      }
    }
    // A projected row's timestamp and values are never null (checked fails the stage on a null).
    val neverNull = 1 until 2 + window.values.length
    val itemFields = window.itemOrdinals.zip(window.row.toSeq.flatMap(_.fields)).map { case (ordinal, f) =>
      ordinal -> f.copy(nullable = f.nullable && !neverNull.contains(ordinal))
    }
    // Every row of an integer key holds the same number there; of a float key, 0.0 and -0.0 are one key.
    val keyField = if (window.key.exists(k => TypedWindow.integral(k._2).isDefined)) itemFields.indexWhere(_._1 == 0) else -1
    val shape = shapeOf(PythonAggregations.slotted(op)._1)
    val leaves = parts.result()
    // (A frame's merge tells which picks took the incoming item in the bits of a Long.)
    shape.filter(_ => leaves.count(_.isInstanceOf[Pick]) <= 64).map(s => new ColumnarFrames(new FrameLayout(leaves, s, itemFields, keyField),
      window.keys, window.checked, window.rowItemsAt(itemFields.indices), budget))
  }
}
