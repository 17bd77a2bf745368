package io.jetspark.engine.spark.epoch

import java.nio.ByteBuffer

/** What a sender tells each of its receivers at the end of its output for an epoch, in band: a row whose
  * item is null and whose `ctl` column holds this (DESIGN.md, "Streaming on Spark: the epoch engine").
  * It is the epoch's barrier (a receiver counts one from each of its senders before it commits state)
  * and carries the sender's watermark, or that the sender is done for good.
  *
  * @param sender    the sending task's partition
  * @param epoch     the epoch it ends
  * @param watermark the highest watermark the sender has emitted (`Long.MinValue`: none yet)
  * @param done      the sender's input is exhausted: nothing follows, in this epoch or any other
  */
final case class EpochControl(sender: Int, epoch: Long, watermark: Long, done: Boolean) {
  def encode: Array[Byte] = ByteBuffer.allocate(EpochControl.Size).putInt(sender).putLong(epoch).putLong(watermark)
    .put((if (done) 1 else 0).toByte).array()
}

object EpochControl {
  /** The column that holds a control row's bytes; null on data rows. */
  val Column = "ctl"
  private val Size = 4 + 8 + 8 + 1

  def decode(bytes: Array[Byte]): EpochControl = {
    if (bytes.length != Size) throw new IllegalStateException(s"a control row of ${bytes.length} bytes, not $Size")
    val b = ByteBuffer.wrap(bytes)
    EpochControl(b.getInt, b.getLong, b.getLong, b.get() == 1)
  }
}
