package io.jetspark.engine.local

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.core.eventtime.SubstreamItem
import io.jetspark.item.{PythonValues, SimpleEvent}
import io.jetspark.pipeline.definition.{Extractor, SourceDefinition, TimestampPolicy}
import io.jetspark.plan.{PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription.Source

import java.nio.charset.StandardCharsets.UTF_8

import CarriedItems.carried
import PythonVertices.{chainVertex, extractorJson, mapper}

/** The head of a Python light job's items or rate stream ([[StreamReading]]): its items' timestamps
  * read in Python (the same work as `add_timestamps`', in vertices before the source's own), a rate
  * stream's own, or none, then the core's watermarks per substream.
  */
private[local] object PythonStreamHead {

  /** A stream with timestamps from its items: read, then its timestamps (Python), then its watermarks
    * (the vertex of the plan, which its edges leave), for each such source of `readings`.
    */
  def readAndStamp(dag: PhysicalDag, readings: Map[String, StreamReading], python: PythonCallback): Seq[(Seq[LocalVertex], Seq[LocalEdge])] =
    dag.vertices.collect {
      case v @ Vertex(_, Source(_, Some(TimestampPolicy.FromItems(timestamp, _))), _, _, _) if readings.contains(v.name) =>
        val (read, stamp) = (s"${v.name}/read", s"${v.name}/stamp")
        val p = v.localParallelism
        (Seq(LocalVertex(read, p, LocalVertices.passThrough, source = Some(pythonStream(readings(v.name), native = false))),
          chainVertex(stamp, p, python, stampWork(v, timestamp, deadLetter = false), stamped)),
          Seq(LocalEdge(read, 0, stamp, 0, Routing.Isolated), LocalEdge(stamp, 0, v.name, 0, Routing.Isolated)))
    }

  /** The vertex of stream source `v`, reading `stream`. */
  def sourceVertex(dag: PhysicalDag, v: Vertex, source: SourceDefinition, policy: TimestampPolicy, stream: StreamReading): LocalVertex = {
    if (dag.routesFailures(v)) LocalVertices.unsupported(v, "dead letters of a stream's timestamps")
    if (v.assignsSequence) LocalVertices.unsupported(v, "preserve_order on a stream")
    policy match {
      // Its items come from the vertices before it (see readAndStamp), stamped.
      case TimestampPolicy.FromItems(_, lagMs) => LocalVertex(v.name, v.localParallelism, stream.watermarks(lagMs))
      case TimestampPolicy.Native(lagMs) if source.name == "rateStream" =>
        LocalVertex(v.name, v.localParallelism, stream.watermarks(lagMs), source = Some(pythonStream(stream, native = true)))
      case TimestampPolicy.NoTimestamps =>
        LocalVertex(v.name, v.localParallelism, LocalVertices.passThrough, source = Some(pythonStream(stream, native = false)(_).map {
          case SubstreamItem(_, item) => item
          case nothingDue => nothingDue
        }))
      case other => LocalVertices.unsupported(v, s"a ${source.name} with ${other.describe}")
    }
  }

  /** What instance `i` reads of `stream`, as Python takes it: a rate stream's events pickled, with their own
    * time where the stream has `native` timestamps.
    */
  private def pythonStream(stream: StreamReading, native: Boolean): Int => Iterator[Any] = stream.read(_).map {
    case SubstreamItem(s, e: SimpleEvent) => SubstreamItem(s, if (native) Timestamped(e.timestamp, PythonValues.dumps(e)) else PythonValues.dumps(e))
    case other => other
  }

  /** The work of reading the timestamps of the items entering `v` (`add_timestamps`, a stream source's). */
  def stampWork(v: Vertex, timestamp: Extractor, deadLetter: Boolean): String =
    mapper.writeValueAsString(mapper.createObjectNode().put("kind", "stamp").put("vertex", v.name)
      .put("stage", v.fusedChain.head).put("dead_letter", deadLetter)
      .set[JsonNode]("timestamp", extractorJson(v, timestamp)))

  /** Python's answer to `add_timestamps`, per item: the stage its timestamp failed in (empty for none),
    * the timestamp in ms, and the item's pickle (for a failure: the `DeadLetter`'s).
    */
  def stamped(batch: IndexedSeq[Any], frames: Vector[Array[Byte]]): Iterator[Any] = {
    if (frames.size != 3 * batch.size) throw new IllegalStateException(s"Python answered ${frames.size} frames for ${batch.size} items")
    batch.iterator.zip(frames.grouped(3)).map { case (item, triple) =>
      val (stage, ts, pickled) = (triple(0), triple(1), triple(2))
      if (stage.nonEmpty) FailedRecord(new String(stage, UTF_8), pickled)
      else carried(item, Timestamped(new String(ts, UTF_8).toLong, pickled), keepTime = false)
    }
  }
}
