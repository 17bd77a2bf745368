package io.jetspark.engine.spark.epoch

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.core.snapshot.{SnapshotFormat, SnapshotFormatException}
import io.jetspark.plan.PhysicalDag
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import java.nio.charset.StandardCharsets
import scala.jdk.CollectionConverters._

/** What a stream job's checkpoint was written for, kept beside it in `<checkpoint_dir>/jetspark.json`: the
  * snapshot format's version, and the plan's vertices in order, each with what it does. A vertex's state is
  * stored under its number in the plan ([[EpochEngine]]), so a job started on a checkpoint of another plan
  * would have its state read by the wrong vertex, or misread. Such a job is refused before its query
  * starts, with what differs; the first job on a checkpoint writes the manifest.
  */
object CheckpointManifest {
  val FileName = "jetspark.json"

  /** The manifest of `dag`: the format version, and per vertex (in plan order) its name and description. */
  final case class Manifest(formatVersion: Int, vertices: Seq[(String, String)])

  def of(dag: PhysicalDag): Manifest =
    Manifest(SnapshotFormat.CurrentVersion, dag.vertices.map(v => v.name -> v.description.describe))

  /** Writes `dag`'s manifest under `checkpointDir` where none is, else fails unless the one there is the same. */
  def requireMatching(checkpointDir: String, dag: PhysicalDag, hadoop: Configuration): Unit = {
    val path = new Path(checkpointDir, FileName)
    val fs = path.getFileSystem(hadoop)
    val mine = of(dag)
    if (!fs.exists(path)) {
      val out = fs.create(path, false)
      try out.write(encode(mine)) finally out.close()
    } else {
      val in = fs.open(path)
      val theirs = try decode(in.readAllBytes()) finally in.close()
      differences(theirs, mine) match {
        case Nil => ()
        case found => throw new SnapshotFormatException(s"the checkpoint at $checkpointDir was written for another " +
          s"job, and its state cannot be read by this one: ${found.mkString("; ")}. Start the job on a new checkpoint_dir, " +
          "or run the job the checkpoint was written for")
      }
    }
  }

  /** What differs between the manifest a checkpoint has (`theirs`) and the job's (`mine`), said for a user. */
  def differences(theirs: Manifest, mine: Manifest): Seq[String] = {
    val format = if (theirs.formatVersion == mine.formatVersion) Nil
      else Seq(s"its snapshot format is version ${theirs.formatVersion}, this jetspark's is ${mine.formatVersion}")
    def shown(vertex: (String, String)): String = s"'${vertex._1}' (${vertex._2})"
    val vertices = theirs.vertices.zipAll(mine.vertices, null, null).zipWithIndex.collect {
      case ((was, now), i) if was != now =>
        if (now == null) s"vertex $i was ${shown(was)}, which this job does not have"
        else if (was == null) s"vertex $i is ${shown(now)}, which the checkpoint does not have"
        else s"vertex $i was ${shown(was)}, here it is ${shown(now)}"
    }
    format ++ vertices
  }

  private val Json = new ObjectMapper()

  private def encode(m: Manifest): Array[Byte] = {
    val node = Json.createObjectNode().put("snapshot_format", m.formatVersion)
    val vertices = node.putArray("vertices")
    m.vertices.foreach { case (name, description) => vertices.addObject().put("name", name).put("description", description) }
    Json.writerWithDefaultPrettyPrinter().writeValueAsString(node).getBytes(StandardCharsets.UTF_8)
  }

  private def decode(bytes: Array[Byte]): Manifest = {
    val node = Json.readTree(bytes)
    Manifest(node.path("snapshot_format").asInt(-1),
      node.path("vertices").elements().asScala.map(v => v.path("name").asText() -> v.path("description").asText()).toSeq)
  }
}
