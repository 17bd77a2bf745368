package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.{BatchSource, SourceDefinition, StreamSource, TimestampPolicy}

/** Reads a source; has no inputs. */
sealed abstract class SourceTransform(val source: SourceDefinition) extends Transform(Nil, Nil) {
  override protected def defaultName: String = s"${source.name}-source"
}

final class BatchSourceTransform(override val source: BatchSource) extends SourceTransform(source) {
  override def orderClass: OrderClass = OrderClass.Insensitive
  override def describe: String = s"batch source ${source.describe}"
}

/** A stream source; `timestamps` stays empty until the user chooses (a definition error if never). */
final class StreamSourceTransform(override val source: StreamSource) extends SourceTransform(source) {
  private var timestampsValue: Option[TimestampPolicy] = None
  def timestamps: Option[TimestampPolicy] = timestampsValue
  private[pipeline] def timestamps_=(policy: Option[TimestampPolicy]): Unit = timestampsValue = policy

  // Timestamp assignment is order-sensitive: watermarks follow the highest timestamp seen.
  override def orderClass: OrderClass = OrderClass.Sensitive
  override def describe: String =
    s"stream source ${source.describe}, ${timestamps.fold("timestamps not chosen")(_.describe)}"
}
