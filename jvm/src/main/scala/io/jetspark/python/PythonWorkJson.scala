package io.jetspark.python

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import io.jetspark.engine.spark.PythonExtraction
import io.jetspark.pipeline.PythonRef
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.transform._
import io.jetspark.plan.Vertex

/** How the JVM tells Python which Arrow UDFs to build, as JSON (read by `python/jetspark/_protocol.py`):
  * the entries that batch and stream jobs share. What each UDF's rows carry beside the item: `timed`, the
  * item's time; `sequenced`, its sequence id; `controlled`, a stream's control rows (`ctl`), which pass
  * through Python untouched.
  */
private[python] object PythonWorkJson {

  /** A chain of fused Python steps. */
  def chain(chains: ArrayNode, vertex: Vertex, steps: Seq[StatelessTransform], sequenced: Boolean, timed: Boolean,
      controlled: Boolean = false): ObjectNode = {
    val node = chains.addObject().put("vertex", vertex.name)
    val specs = node.putArray("steps")
    steps.foreach(t => specs.add(step(t)))
    node.put("sequenced", sequenced).put("timed", timed).put("controlled", controlled)
  }

  /** An extraction of keys, values and perhaps the timestamp ([[PythonExtraction]]). */
  def extraction(extractions: ArrayNode, e: PythonExtraction, sequenced: Boolean, controlled: Boolean = false): ObjectNode = {
    val node = extractions.addObject()
      .put("vertex", e.vertex.name).put("stage", e.stage).put("dead_letter", e.deadLetter).put("ordinal", e.ordinal)
      .put("sequenced", sequenced).put("timed", e.timedInput).put("controlled", controlled)
    node.set[JsonNode]("key", e.key.getOrElse(JsonNodeFactory.instance.nullNode()))
    val values = node.putArray("values")
    e.values.foreach(values.add)
    e.timestamp.foreach(node.set[JsonNode]("timestamp", _))
    e.timeStage.foreach(t => node.put("time_stage", t.stage).put("time_dead_letter", t.deadLetter))
    node
  }

  private def step(t: StatelessTransform): ObjectNode = {
    val kind = t match {
      case _: MapTransform => "map"
      case _: FilterTransform => "filter"
      case _: FlatMapTransform => "flat_map"
      case _: PeekTransform => "peek"
    }
    val node = JsonNodeFactory.instance.objectNode().put("kind", kind).put("stage", t.name).put("dead_letter", t.errorSink.isDefined)
    t.fn match {
      case Extractor.PythonFn(PythonRef(r), _) => node.put("ref", r)
      case _ => node.putNull("ref")
    }
  }
}
