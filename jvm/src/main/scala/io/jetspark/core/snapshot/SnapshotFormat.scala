package io.jetspark.core.snapshot

import java.io._

/** One saved piece of a processor's state. Keys decide which processor instance restores the entry
  * after a restart (a partition key, or a [[BroadcastKey]] for every instance).
  */
final case class SnapshotEntry(key: Any, value: Any)

/** A key whose entry is delivered to every instance on restore (for example a processor's watermark). */
final case class BroadcastKey(name: String)

/** The bytes of a snapshot: a magic number, a format version and the entries, Java-serialized.
  * The version lets a later jetspark refuse, with a clear message, a snapshot it cannot read.
  */
object SnapshotFormat {
  val Magic: Int = 0x4a53534e // "JSSN"
  val CurrentVersion: Int = 1

  def encode(entries: Seq[SnapshotEntry]): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeInt(Magic)
    out.writeInt(CurrentVersion)
    out.writeInt(entries.size)
    entries.foreach { e => out.writeObject(e.key); out.writeObject(e.value) }
    out.close()
    bytes.toByteArray
  }

  def decode(data: Array[Byte]): Seq[SnapshotEntry] = {
    val in = JavaSerialization.input(new ByteArrayInputStream(data))
    try {
      val magic = in.readInt()
      if (magic != Magic) throw new SnapshotFormatException(f"not a jetspark snapshot (magic 0x$magic%08x)")
      val version = in.readInt()
      if (version != CurrentVersion)
        throw new SnapshotFormatException(s"snapshot format version $version cannot be read by this jetspark (reads version $CurrentVersion)")
      val n = in.readInt()
      Vector.fill(n)(SnapshotEntry(in.readObject(), in.readObject()))
    } finally in.close()
  }
}

final class SnapshotFormatException(message: String) extends RuntimeException(message)
