package io.jetspark.pipeline.transform

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, SessionWindowDefinition, WindowDefinition}

/** A transform that aggregates with one operation per input. Its output order is its own (order
  * producing), unless an operation depends on the input order (to-list), which makes it order-sensitive.
  * `keys` is empty for a global aggregation, else the grouping key of each input.
  */
sealed trait AggregatingTransform extends Transform {
  def ops: Seq[AggregateOperation[_, _, _]]
  def keys: Seq[Extractor]

  def isKeyed: Boolean = keys.nonEmpty
  def canCombine: Boolean = ops.forall(_.canCombine)
  def isOrderSensitive: Boolean = ops.exists(_.isOrderSensitive)
  protected def aggregationOrderClass: OrderClass = if (isOrderSensitive) OrderClass.Sensitive else OrderClass.Producing
  protected def keyText: String = if (isKeyed) s" by ${keys.map(_.describe).distinct.mkString(", ")}" else ""
}

/** `aggregate(op)` (one input) and `aggregate2(other, op0, op1)` (two inputs, co-grouped when keyed). */
final class AggregateTransform(ups: Seq[Transform], rebs: Seq[Rebalance], val ops: Seq[AggregateOperation[_, _, _]], val keys: Seq[Extractor])
    extends Transform(ups, rebs) with AggregatingTransform {
  require(ops.size == ups.size, "one aggregate operation per input")
  require(keys.isEmpty || keys.size == ups.size, "a grouping key per input, or none")
  override protected def defaultName: String = if (ups.size > 1) s"aggregate${ups.size}" else "aggregate"
  override def orderClass: OrderClass = aggregationOrderClass
  override def groupingKey(ordinal: Int): Option[Extractor] = keys.lift(ordinal)
  override def describe: String = s"$defaultName$keyText"
}

/** `window(w).aggregate(op)`: per window (and key), emitted when the watermark passes the window's end. */
final class WindowAggregateTransform(up: Transform, reb: Rebalance, val window: WindowDefinition, op: AggregateOperation[_, _, _], key: Option[Extractor])
    extends Transform(Seq(up), Seq(reb)) with AggregatingTransform {
  override val ops: Seq[AggregateOperation[_, _, _]] = Seq(op)
  override val keys: Seq[Extractor] = key.toSeq
  def isSession: Boolean = window.isInstanceOf[SessionWindowDefinition]
  override protected def defaultName: String = "windowAggregate"
  override def orderClass: OrderClass = aggregationOrderClass
  override def groupingKey(ordinal: Int): Option[Extractor] = key
  override def describe: String = s"windowAggregate ${window.describe}$keyText"
}

/** `distinct()`: the first item of each key (a whole-item key for a non-keyed stage). With a real key,
  * "first" depends on the input order; with the whole item every candidate is equal.
  */
final class DistinctTransform(up: Transform, reb: Rebalance, val key: Extractor) extends Transform(Seq(up), Seq(reb)) {
  override protected def defaultName: String = "distinct"
  override def orderClass: OrderClass = if (key == Extractor.WholeItem) OrderClass.Producing else OrderClass.Sensitive
  override def groupingKey(ordinal: Int): Option[Extractor] = Some(key)
  override def describe: String = s"distinct by ${key.describe}"
}

/** `sort(key, reverse)`: every item, ordered by `key` (the whole item when empty). */
final class SortTransform(up: Transform, reb: Rebalance, val key: Option[Extractor], val reverse: Boolean) extends Transform(Seq(up), Seq(reb)) {
  override protected def defaultName: String = "sort"
  override def orderClass: OrderClass = OrderClass.Producing
  override def describe: String = s"sort by ${key.fold("item")(_.describe)}${if (reverse) " descending" else ""}"
}
