package io.jetspark.pipeline.transform

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.Extractor

/** Keeps state across items (one state overall, or one per key) and emits per item: its result depends
  * on input order. Without a key it runs as a single processor.
  */
sealed abstract class StatefulTransform(up: Transform, reb: Rebalance) extends Transform(Seq(up), Seq(reb)) {
  def key: Option[Extractor]
  override def groupingKey(ordinal: Int): Option[Extractor] = key
  override def orderClass: OrderClass = OrderClass.Sensitive
  protected def keyText: String = key.fold("")(k => s" by ${k.describe}")
}

/** `createFn` is applied to null and gives a fresh state; `fn` gets `(state, item)` (keyed:
  * `(state, key, item)`) and returns `(newState, output)`, output null emitting nothing.
  */
final class MapStatefulTransform(up: Transform, reb: Rebalance, val key: Option[Extractor], val createFn: Extractor, val fn: Extractor)
    extends StatefulTransform(up, reb) {
  override protected def defaultName: String = "mapStateful"
  override def describe: String = s"mapStateful$keyText(${fn.describe})"
}

/** Emits the running result after each item (keyed: `(key, runningResult)`). */
final class RollingAggregateTransform(up: Transform, reb: Rebalance, val key: Option[Extractor], val op: AggregateOperation[_, _, _])
    extends StatefulTransform(up, reb) {
  override protected def defaultName: String = "rollingAggregate"
  override def describe: String = s"rollingAggregate$keyText"
}
