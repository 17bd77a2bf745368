package io.jetspark.item

/** An event of `Sources.rate_stream`, pickled as Python's `jetspark.sources.SimpleEvent(timestamp, sequence)`. */
final case class SimpleEvent(timestamp: Long, sequence: Long)
