package io.jetspark.core

/** An item that travels in band with data on an edge. Control items are never reordered with the
  * data items of the same input: everything before a control item on an input is delivered before it.
  */
sealed trait ControlItem extends Serializable

/** Event time has reached `timestamp` on this input: no later item has a lower timestamp (items that do
  * are late). Watermarks on one input never go back.
  */
final case class Watermark(timestamp: Long) extends ControlItem

/** The sending input has nothing to say for now and must not hold back the watermark of the receiver.
  * It is active again as soon as it sends an item or a watermark.
  */
case object IdleMessage extends ControlItem

/** Snapshot `snapshotId` is taken between the items before and after this barrier. */
final case class Barrier(snapshotId: Long) extends ControlItem

/** The sending input is exhausted. Nothing follows it. */
case object DoneItem extends ControlItem
