package io.jetspark.pipeline

import com.fasterxml.jackson.databind.JsonNode

/** A value that an operation reads: number `index` of the values extracted for the whole operation (its
  * parts' values one after another, as the spec lists the parts), extracted as `extractor` says
  * (`{"kind": "field" | "column" | "python" | "item", ...}`, as Python wrote it).
  */
final case class ValueSlot(index: Int, extractor: JsonNode)

/** An aggregate operation as python/jetspark/aggregate.py defines it, read once from its spec by
  * [[PythonOperationReader]]. What the engines decide about an operation (the core's operation it binds
  * to, its Catalyst functions, its columnar frames, whether it runs in Python) are exhaustive matches over
  * these cases, so the compiler names every decision that a new operation misses. `name` is Python's name
  * of the operation, for messages.
  */
sealed abstract class PythonOperation(val name: String) extends Serializable {
  import PythonOperation._

  /** The values this operation reads itself (not its parts'), in slot order. */
  def ownSlots: Seq[ValueSlot] = this match {
    case Summing(v) => Seq(v)
    case Averaging(v) => Seq(v)
    case Variance(v) => Seq(v)
    case LinearTrend(x, y) => Seq(x, y)
    case MinBy(v) => Seq(v)
    case MaxBy(v) => Seq(v)
    case TopN(_, v) => Seq(v)
    case BottomN(_, v) => Seq(v)
    case Counting | ToList | ToSet | AllOf(_) | UserDefined(_) => Nil
  }

  /** Whether a part of this operation (itself, or one inside `all_of`) is `AggregateOperation.of(...)`:
    * functions only Python can run.
    */
  def hasUserDefinedPart: Boolean = this match {
    case UserDefined(_) => true
    case AllOf(parts) => parts.exists(_.hasUserDefinedPart)
    case Counting | Summing(_) | Averaging(_) | Variance(_) | LinearTrend(_, _) | MinBy(_) | MaxBy(_) | TopN(_, _) |
         BottomN(_, _) | ToList | ToSet => false
  }

  /** The values of this operation and of its parts, in slot order: what Python extracts for it. */
  def slots: Seq[ValueSlot] = this match {
    case AllOf(parts) => parts.flatMap(_.slots)
    case _ => ownSlots
  }
}

object PythonOperation {
  case object Counting extends PythonOperation("counting")
  final case class Summing(value: ValueSlot) extends PythonOperation("summing")
  final case class Averaging(value: ValueSlot) extends PythonOperation("averaging")
  final case class Variance(value: ValueSlot) extends PythonOperation("variance")
  final case class LinearTrend(x: ValueSlot, y: ValueSlot) extends PythonOperation("linear_trend")
  final case class MinBy(value: ValueSlot) extends PythonOperation("min_by")
  final case class MaxBy(value: ValueSlot) extends PythonOperation("max_by")
  /** The `n` greatest items by `value` (the item itself where Python gave no key). */
  final case class TopN(n: Int, value: ValueSlot) extends PythonOperation("top_n")
  final case class BottomN(n: Int, value: ValueSlot) extends PythonOperation("bottom_n")
  case object ToList extends PythonOperation("to_list")
  case object ToSet extends PythonOperation("to_set")
  final case class AllOf(parts: Seq[PythonOperation]) extends PythonOperation("all_of")
  /** `AggregateOperation.of(...)`: functions that only Python runs, number `ref` of the pipeline's Python objects. */
  final case class UserDefined(ref: Int) extends PythonOperation("custom")
}
