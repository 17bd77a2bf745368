package io.jetspark.engine.local

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.core.processor.Sequenced
import io.jetspark.item.{CustomAggregationWork, Extracted, PickledKey}

import java.nio.charset.StandardCharsets.UTF_8
import scala.jdk.CollectionConverters._

import CarriedItems.{carried, payloadOf}
import PythonVertices.{call, mapper}

/** The vertices of a Python light job's aggregations whose operation is a user-defined
  * `AggregateOperation.of` (also in a window), and the frames they exchange with Python.
  */
private[local] object PythonAggregationVertices {

  /** A vertex of an aggregation whose operation has a user-defined part: each processor's accumulators
    * live in Python (python/jetspark/light_job.py runs python/jetspark/worker/custom_aggregations.py in
    * the work's mode). Its work names the processor, so that each has its own. Per call Python gets a
    * command frame: `batch`, with the input's ordinal, then per item its key's canonical bytes, its pickle
    * (a partial accumulator's, in `combine` mode), its time (into a window; else empty) and its extracted
    * values (their count, then their pickles); or `end`. A window (the work's `window`) gives its results
    * and dead letters at the end, each result with its time (`end - 1`) in the place of the key. It answers with triples: the stage a record failed in (empty for an output), the
    * group's key (a partial accumulator's, in `accumulate` mode) and the pickle. A rolling aggregation
    * answers once per item, in order (its result, or its dead letter): where items `carries` their ids
    * or time, each answer carries its item's. A window on a `stream` answers no batch: its epochs
    * ([[PythonStreamWindowProcessor]]) send `epoch`, the watermark, the time (ms) and whether the input
    * is done (`1`), and Python answers the number of late events it dropped, then the triples.
    */
  def customAggregation(w: CustomAggregationWork, python: PythonCallback, carries: Boolean, stream: Boolean = false): LocalVertex = {
    // Sliding (and tumbling) windows close at multiples of their slide; a session may close at any watermark.
    val closes: (Long, Long) => Boolean = w.window.filter(_.path("kind").asText == "sliding").map(_.path("slide_ms").asLong) match {
      case Some(slide) => (before, now) => Math.floorDiv(now, slide) > Math.floorDiv(before, slide)
      case None => (before, now) => now > before
    }
    val stage = w.vertex.fusedChain.head
    def work(instance: Int): String = {
      val node = mapper.createObjectNode().put("kind", "custom_aggregation").put("vertex", w.vertex.name)
        .put("instance", instance).put("stage", stage).put("mode", w.mode).put("keyed", w.keyed)
        .put("dead_letter", w.deadLetter).put("stream", stream)
      node.set[JsonNode]("operations", mapper.valueToTree[JsonNode](w.operations.asJava))
      node.set[JsonNode]("window", w.window.getOrElse(mapper.nullNode()))
      mapper.writeValueAsString(node)
    }
    // An item's time goes where a window reads it; empty elsewhere.
    def time(x: Any): Array[Byte] = Sequenced.itemOf(x) match {
      case Timestamped(ts, _) if w.window.isDefined => ts.toString.getBytes(UTF_8)
      case _ => Array.emptyByteArray
    }
    def frames(x: Any): Seq[Array[Byte]] = payloadOf(x) match {
      case e: Extracted => Seq(e.key.bytes, e.pickled, time(x), e.rawValues.length.toString.getBytes(UTF_8)) ++ e.rawValues
      case (key: PickledKey, partial: Array[Byte]) => Seq(key.bytes, partial, Array.emptyByteArray, "0".getBytes(UTF_8))
      case other => throw new IllegalStateException(s"vertex '${w.vertex.name}': expected an extracted item or a partial accumulator, got $other")
    }
    def outputs(answer: Vector[Array[Byte]]): Iterator[Any] = answer.grouped(3).map { triple =>
      val (failedIn, key, pickled) = (triple(0), triple(1), triple(2))
      if (failedIn.nonEmpty) FailedRecord(new String(failedIn, UTF_8), pickled)
      else if (w.mode == "accumulate") (new PickledKey(key), pickled)
      else if (w.window.isDefined) Timestamped(new String(key, UTF_8).toLong, pickled)
      else pickled
    }
    LocalVertex(w.vertex.name, w.vertex.localParallelism, { context =>
      val instanceWork = work(context.globalProcessorIndex)
      def batch(ordinal: Int, items: IndexedSeq[Any]): Iterator[Any] = {
        val answers = outputs(call(python, instanceWork, Seq("batch".getBytes(UTF_8), ordinal.toString.getBytes(UTF_8)) ++ items.flatMap(frames)))
        if (!carries) answers
        else {
          val results = answers.toVector
          if (results.size != items.size)
            throw new IllegalStateException(s"vertex '${w.vertex.name}': Python answered ${results.size} results for ${items.size} items")
          items.iterator.zip(results).map {
            case (_, failed: FailedRecord) => failed
            case (item, result) => carried(item, result)
          }
        }
      }
      def bytes(x: Any): Array[Byte] = x.toString.getBytes(UTF_8)
      if (stream) {
        new PythonStreamWindowProcessor((ordinal, items) => batch(ordinal, items).foreach(x =>
          throw new IllegalStateException(s"vertex '${w.vertex.name}': Python answered $x to a batch of a stream's window")), { (watermark, nowMs, done) =>
          val answer = call(python, instanceWork, Seq(bytes("epoch"), bytes(watermark), bytes(nowMs), bytes(if (done) 1 else 0)))
          (new String(answer.head, UTF_8).toLong, outputs(answer.tail))
        }, w.window.fold(0L)(_.path("early_results_period_ms").asLong(0L)), closes)
      } else new PythonAggregationProcessor(batch,
        () => outputs(call(python, instanceWork, Seq("end".getBytes(UTF_8)))))
    }, cooperative = false)
  }
}
