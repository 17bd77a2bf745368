package io.jetspark.engine.spark.window

import io.jetspark.engine.spark.window.FrameLayout._
import io.jetspark.pipeline.{PythonAggregateSpec, PythonOperation, ValueSlot}

/** Which typed windows keep their frames as columns ([[ColumnarFrames]]), and how. */
private[spark] object ColumnarFramesPlanner {
  /** The columnar frames of `window` with operation `op`, or None where `op` has another part or a pick
    * reads a value that is not an integer (floats compare as Python compares them, NaN included, in the
    * core's operations).
    */
  def plan(window: TypedWindow, op: PythonAggregateSpec, budget: () => FrameTable.Budget = () => new FrameTable.Budget()): Option[ColumnarFrames] = {
    val parts = Array.newBuilder[Part]
    var count = 0
    def pick(v: ValueSlot, greatest: Boolean): Option[Shape] = TypedWindow.integral(window.values(v.index)._2).map { read =>
      parts += Pick(2 + v.index, read, greatest); count += 1; Leaf(count - 1)
    }
    def shapeOf(op: PythonOperation): Option[Shape] = op match {
      case PythonOperation.Counting => parts += Count; count += 1; Some(Leaf(count - 1))
      case PythonOperation.MinBy(v) => pick(v, greatest = false)
      case PythonOperation.MaxBy(v) => pick(v, greatest = true)
      case PythonOperation.AllOf(operations) =>
        val shapes = operations.map(shapeOf)
        if (shapes.forall(_.isDefined)) Some(AllOf(shapes.flatten)) else None
      case PythonOperation.Summing(_) | PythonOperation.Averaging(_) | PythonOperation.Variance(_) |
           PythonOperation.LinearTrend(_, _) | PythonOperation.TopN(_, _) | PythonOperation.BottomN(_, _) |
           PythonOperation.ToList | PythonOperation.ToSet | PythonOperation.UserDefined(_) => None
    }
    // A projected row's timestamp and values are never null (checked fails the stage on a null).
    val neverNull = 1 until 2 + window.values.length
    val itemFields = window.itemOrdinals.zip(window.row.toSeq.flatMap(_.fields)).map { case (ordinal, f) =>
      ordinal -> f.copy(nullable = f.nullable && !neverNull.contains(ordinal))
    }
    // Every row of an integer key holds the same number there; of a float key, 0.0 and -0.0 are one key.
    val keyField = if (window.key.exists(k => TypedWindow.integral(k._2).isDefined)) itemFields.indexWhere(_._1 == 0) else -1
    val shape = shapeOf(op.operation)
    val leaves = parts.result()
    // (A frame's merge tells which picks took the incoming item in the bits of a Long.)
    shape.filter(_ => leaves.count(_.isInstanceOf[Pick]) <= 64).map(s => new ColumnarFrames(new FrameLayout(leaves, s, itemFields, keyField),
      window.keys, window.checked, window.rowItemsAt(itemFields.indices), budget))
  }
}
