package io.jetspark.engine.spark.epoch

import io.jetspark.core.IdleMessage
import io.jetspark.core.eventtime.{WatermarkCoalescer, WatermarkCoalescerState}

import java.nio.ByteBuffer

/** What a sender tells each of its receivers at the end of its output for an epoch, in band: a row whose
  * item is null and whose `ctl` column holds this (DESIGN.md, "Streaming on Spark: the epoch engine").
  * It is the epoch's barrier (a receiver counts one from each of its senders before it commits state)
  * and carries the sender's watermark, whether the sender is idle, or that it is done for good.
  *
  * @param sender    the sending task's partition
  * @param epoch     the epoch it ends
  * @param watermark the highest watermark the sender has emitted (`Long.MinValue`: none yet)
  * @param done      the sender's input is exhausted: nothing follows, in this epoch or any other
  * @param idle      the sender is idle at the epoch's end (Jet's `IDLE_MESSAGE`): its substream delivered
  *                  nothing for the idle timeout, or every live sender of its own is idle; receivers leave
  *                  it out of their watermark until it is active again
  * @param part      the sender holds one part of a substream that other senders flagged so hold the rest of
  *                  (the tasks of a micro-batch that one substream fills, [[RowsWindowStage]]): its
  *                  watermark is the substream's only as far as its own rows go, so a receiver takes the
  *                  greatest of the parts' watermarks as that substream's, not the least
  */
final case class EpochControl(sender: Int, epoch: Long, watermark: Long, done: Boolean, idle: Boolean = false,
    part: Boolean = false) {
  def encode: Array[Byte] = ByteBuffer.allocate(EpochControl.Size).putInt(sender).putLong(epoch).putLong(watermark)
    .put(((if (done) EpochControl.DoneBit else 0) | (if (idle) EpochControl.IdleBit else 0) |
      (if (part) EpochControl.PartBit else 0)).toByte).array()
}

object EpochControl {
  /** The column that holds a control row's bytes; null on data rows. */
  val Column = "ctl"
  private val Size = 4 + 8 + 8 + 1
  private val DoneBit = 1
  private val IdleBit = 2
  private val PartBit = 4

  def decode(bytes: Array[Byte]): EpochControl = {
    if (bytes.length != Size) throw new IllegalStateException(s"a control row of ${bytes.length} bytes, not $Size")
    val b = ByteBuffer.wrap(bytes)
    val (sender, epoch, watermark, flags) = (b.getInt, b.getLong, b.getLong, b.get())
    EpochControl(sender, epoch, watermark, (flags & DoneBit) != 0, (flags & IdleBit) != 0, (flags & PartBit) != 0)
  }

  /** What a receiver's senders' control rows coalesce to ([[WatermarkCoalescer]], one input per row, the
    * parts of a substream one input together, never below `floor`): the watermark, and whether the receiver is idle itself (every sender not done is idle).
    */
  final case class Coalesced(watermark: Long, idle: Boolean)

  /** What the senders' control rows of epoch `epoch` at `vertex`'s `partition` coalesce to, never below
    * `floor`: one row from each of `senders` distinct senders, or the epoch fails (a lost or repeated
    * barrier), naming the vertex.
    */
  def barrier(vertex: String, partition: Int, epoch: Long, controls: Seq[EpochControl], senders: Int, floor: Long): Coalesced = {
    val fromSenders = controls.map(_.sender).distinct
    if (controls.size != senders || fromSenders.size != senders || controls.exists(_.epoch != epoch))
      throw new IllegalStateException(s"vertex '$vertex', partition $partition, epoch $epoch: expected one control row " +
        s"(the epoch's barrier) from each of $senders upstream tasks, got ${controls.map(c => s"${c.sender}@${c.epoch}").mkString("[", ", ", "]")}")
    coalesce(controls, floor)
  }

  def coalesce(senders: Seq[EpochControl], floor: Long): Coalesced = {
    // The parts of one substream are one input: it is done, or idle, once every part is.
    val (parts, whole) = senders.partition(_.part)
    val controls = whole ++ parts.headOption.map(_.copy(watermark = parts.map(_.watermark).max, done = parts.forall(_.done),
      idle = parts.forall(_.idle)))
    val coalescer = new WatermarkCoalescer(math.max(1, controls.size))
    coalescer.restore(WatermarkCoalescerState(floor))
    // A fresh coalescer starts every input active, so IdleMessage comes out only once the last one fed is
    // idle too: it says the final state.
    val forwarded = controls.zipWithIndex.flatMap { case (c, input) =>
      if (c.done) coalescer.observeDone(input)
      else coalescer.observeWatermark(input, c.watermark) ++ (if (c.idle) coalescer.observeIdle(input) else Nil)
    }
    Coalesced(coalescer.lastEmitted, forwarded.contains(IdleMessage))
  }
}
