package io.jetspark.engine.local

import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}

/** The end of a branch in the local engine: `write` gets each inbox's items, in order, and nothing is
  * emitted. Watermarks end here.
  */
final class SinkProcessor(write: IndexedSeq[Any] => Unit) extends AbstractProcessor {
  override def process(ordinal: Int, inbox: Inbox): Unit = {
    write(inbox.iterator.toIndexedSeq)
    inbox.clear()
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = true
}

/** An item of a stream with event time, as it travels between the local engine's vertices: stateless
  * steps map `item` and keep `timestamp` (Jet's JetEvent); windows read it; sinks get `item`.
  */
final case class Timestamped(timestamp: Long, item: Any)
