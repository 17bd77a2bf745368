package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.Extractor

/** A transform of one item at a time, with no state: the planner may fuse a chain of these into one
  * vertex, and consecutive Python steps into one Python round trip.
  */
sealed abstract class StatelessTransform(up: Transform, reb: Rebalance, val fn: Extractor)
    extends Transform(Seq(up), Seq(reb)) {
  override def orderClass: OrderClass = OrderClass.Insensitive
  def runsInPython: Boolean = fn.runsInPython
  override def describe: String = s"$defaultName(${fn.describe})"
}

final class MapTransform(up: Transform, reb: Rebalance, fn: Extractor) extends StatelessTransform(up, reb, fn) {
  override protected def defaultName: String = "map"
}

/** Keeps the items `fn` returns true for. */
final class FilterTransform(up: Transform, reb: Rebalance, fn: Extractor) extends StatelessTransform(up, reb, fn) {
  override protected def defaultName: String = "filter"
}

/** Emits every element of the iterable `fn` returns. */
final class FlatMapTransform(up: Transform, reb: Rebalance, fn: Extractor) extends StatelessTransform(up, reb, fn) {
  override protected def defaultName: String = "flatMap"
}

/** Passes items on unchanged after calling `fn` on each (for logging). */
final class PeekTransform(up: Transform, reb: Rebalance, fn: Extractor) extends StatelessTransform(up, reb, fn) {
  override protected def defaultName: String = "peek"
}
