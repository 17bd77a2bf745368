package io.jetspark.engine.spark.window

import io.jetspark.item.Extracted

/** An item entering a window: what Python extracted from it, and its timestamp. */
private[spark] final class TimedEvent(val ts: Long, val event: Extracted) extends Serializable
