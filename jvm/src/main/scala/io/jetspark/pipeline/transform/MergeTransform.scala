package io.jetspark.pipeline.transform

/** Emits the items of all its inputs. */
final class MergeTransform(ups: Seq[Transform], rebs: Seq[Rebalance]) extends Transform(ups, rebs) {
  override protected def defaultName: String = "merge"
  override def orderClass: OrderClass = OrderClass.Insensitive
  override def describe: String = s"merge of ${ups.size} inputs"
}
