package io.jetspark.core.window

/** The result of a non-keyed window `[start, end)`; `isEarly` marks a partial result emitted before the
  * watermark completed the window.
  */
final case class WindowResult[+R](start: Long, end: Long, result: R, isEarly: Boolean = false)

/** The result of the window `[start, end)` for one grouping key. */
final case class KeyedWindowResult[+K, +R](start: Long, end: Long, key: K, result: R, isEarly: Boolean = false)

/** What the first stage of a two-stage sliding-window aggregation sends to the second: the partial
  * accumulator of one frame (named by its end) and one key, from one upstream instance. The second stage
  * combines the partial frames of every upstream instance. Non-keyed aggregations use [[NonKeyed]].
  */
final case class KeyedFrame[+K, +A](frameEnd: Long, key: K, acc: A)

/** An event that a window dropped as late, against the watermark it had then: a window asked to pass
  * its late events on (`lateEventsOut`, where its stage routes failures to a dead-letter sink) emits this
  * beside counting it, as soon as it sees the event.
  */
final case class LateEvent[+T](event: T, watermark: Long)

/** The one implicit key of a non-keyed window aggregation. */
case object NonKeyed

/** A window processor's count of the late events it dropped (behind the watermark: their windows were
  * emitted), readable by the engine while the processor runs.
  */
trait CountsLateEvents {
  def lateEventsDropped: Long
}
