package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.Extractor

/** `addTimestamps(timestamp, allowedLagMs)` on a batch stage (Jet's `BatchStage.addTimestamps`): the same
  * items, now with event time, so that windows can follow. `timestamp` gives an item's time in ms.
  *
  * A batch is one epoch: no watermark inside it and a final watermark of +infinity, so no item is ever
  * late and `allowedLagMs` (how far a stream's watermark trails its highest timestamp) has no effect; it
  * is kept for plans and for pipelines that later read a stream instead. For the same reason the
  * assignment does not depend on the items' order, unlike a stream source's (its watermark follows the
  * order): it is order-insensitive.
  *
  * The timestamp is read with `timestamp` here, once per item, and travels beside the item (Jet's
  * `JetEvent`): stateless stages downstream give their outputs the time of the item they came from, and
  * a window reads that time whatever those stages made of the item (see `EventTimeRule`).
  */
final class AddTimestampsTransform(up: Transform, reb: Rebalance, val timestamp: Extractor, val allowedLagMs: Long)
    extends Transform(Seq(up), Seq(reb)) {
  if (allowedLagMs < 0) throw new IllegalArgumentException(s"addTimestamps: allowedLagMs must be >= 0, was $allowedLagMs")
  override protected def defaultName: String = "addTimestamps"
  override def orderClass: OrderClass = OrderClass.Insensitive
  override def describe: String = s"addTimestamps(${timestamp.describe}, lag ${allowedLagMs}ms)"
}
