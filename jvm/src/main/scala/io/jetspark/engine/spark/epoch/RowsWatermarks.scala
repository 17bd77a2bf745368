package io.jetspark.engine.spark.epoch

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import java.nio.charset.StandardCharsets

/** The watermark of a source whose rows a window's first stage reads ([[RowsWindowStage]]) after each
  * epoch, kept under the job's state (`stateRoot`), so that the first epoch after a driver restart judges
  * late rows one by one, by the watermark as of the epoch before, as every other epoch does. (The driver
  * learns the watermark from the stage's tasks; a new driver has heard from none.) Each source keeps the
  * files of its last two epochs: a replayed epoch reads the one before it.
  */
private[epoch] final class RowsWatermarks(stateRoot: String, hadoop: Configuration) {
  private def file(source: String, epoch: Long) = new Path(new Path(stateRoot, s"rows-watermarks/$source"), epoch.toString)

  /** Source `source`'s watermark after epoch `epoch`, where it was written. */
  def after(source: String, epoch: Long): Option[Long] = {
    val path = file(source, epoch)
    val fs = path.getFileSystem(hadoop)
    Option.when(fs.exists(path)) {
      val in = fs.open(path)
      try new String(in.readAllBytes(), StandardCharsets.UTF_8).trim.toLong finally in.close()
    }
  }

  /** Keeps `watermark` as source `source`'s after epoch `epoch`, and forgets the one of epoch `epoch - 2`. */
  def write(source: String, epoch: Long, watermark: Long): Unit = {
    val path = file(source, epoch)
    val fs = path.getFileSystem(hadoop)
    val out = fs.create(path, true)
    try out.write(watermark.toString.getBytes(StandardCharsets.UTF_8)) finally out.close()
    fs.delete(file(source, epoch - 2), false)
  }
}
