package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.SinkDefinition

/** Writes its input to a sink. Sinks are order-sensitive: the written order is what the user sees. */
final class SinkTransform(up: Transform, reb: Rebalance, val sink: SinkDefinition) extends Transform(Seq(up), Seq(reb)) {
  override protected def defaultName: String = s"${sink.name}-sink"
  override def orderClass: OrderClass = OrderClass.Sensitive
  override def describe: String = s"sink ${sink.describe}"
}
