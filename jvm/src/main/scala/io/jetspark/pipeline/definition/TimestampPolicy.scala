package io.jetspark.pipeline.definition

/** How a stream source gives its items event timestamps (Jet requires an explicit choice).
  * The watermark of a substream is the highest timestamp seen on it minus `allowedLagMs`.
  */
sealed trait TimestampPolicy extends Serializable {
  def hasTimestamps: Boolean = true
  def describe: String
}

object TimestampPolicy {
  final case class FromItems(timestamp: Extractor, allowedLagMs: Long) extends TimestampPolicy {
    if (allowedLagMs < 0) throw new IllegalArgumentException(s"allowedLagMs must be >= 0, was $allowedLagMs")
    override def describe: String = s"timestamps from ${timestamp.describe}, lag ${allowedLagMs}ms"
  }
  final case class Native(allowedLagMs: Long) extends TimestampPolicy {
    if (allowedLagMs < 0) throw new IllegalArgumentException(s"allowedLagMs must be >= 0, was $allowedLagMs")
    override def describe: String = s"native timestamps, lag ${allowedLagMs}ms"
  }
  case object Ingestion extends TimestampPolicy {
    override def describe: String = "ingestion timestamps"
  }
  case object NoTimestamps extends TimestampPolicy {
    override def hasTimestamps: Boolean = false
    override def describe: String = "no timestamps"
  }
}
