package io.jetspark.core.snapshot

import java.io.{ByteArrayOutputStream, ObjectOutputStream}

import org.scalatest.funsuite.AnyFunSuite

/** The snapshot format's header is the contract that lets a jetspark refuse state it cannot read: the
  * bytes here are written by hand, as another version of jetspark (or another program) would write them.
  */
class SnapshotFormatTest extends AnyFunSuite {

  private def written(magic: Int, version: Int, entries: Seq[(Any, Any)]): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeInt(magic)
    out.writeInt(version)
    out.writeInt(entries.size)
    entries.foreach { case (k, v) => out.writeObject(k); out.writeObject(v) }
    out.close()
    bytes.toByteArray
  }

  private val jssn = 0x4a53534e // "JSSN" in ASCII

  test("a snapshot of version 1 with the magic number is read entry by entry") {
    val entries = Seq[(Any, Any)](("k", 1L), (BroadcastKey("watermark"), Vector(3, 4)))
    assert(SnapshotFormat.decode(written(jssn, 1, entries)) == entries.map { case (k, v) => SnapshotEntry(k, v) })
  }

  test("a snapshot of an unknown version is refused, naming both versions") {
    for (version <- Seq(0, 2, 7, -1)) {
      val error = intercept[SnapshotFormatException](SnapshotFormat.decode(written(jssn, version, Seq(("k", 1)))))
      assert(error.getMessage.contains(s"snapshot format version $version cannot be read"), error.getMessage)
      assert(error.getMessage.contains("reads version 1"), error.getMessage)
    }
  }

  test("bytes without the magic number are refused as not a snapshot") {
    val error = intercept[SnapshotFormatException](SnapshotFormat.decode(written(0x12345678, 1, Nil)))
    assert(error.getMessage == "not a jetspark snapshot (magic 0x12345678)")
  }
}
