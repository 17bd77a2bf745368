package io.jetspark.python

import com.fasterxml.jackson.databind.node.ArrayNode
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.engine.spark.epoch.{CheckpointManifest, EpochEngine, EpochRolling, EpochSinks, EpochSources, SourceExtractions, StreamUnion, StreamingJob}
import io.jetspark.engine.spark.runner.{SequenceRestore, SinkRunner}
import io.jetspark.engine.spark.{PythonExtraction, PythonUdfName, PythonWork, Rebalancing}
import io.jetspark.item.{CustomAggregationWork, PythonAggregations}
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.plan.VertexDescription.{HashJoin, MapStateful, RollingAggregate, Source, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}

import scala.jdk.CollectionConverters._

/** A stream pipeline planned for the Spark epoch engine, between the two calls Python makes: it reads the
  * Arrow UDFs to build (`pythonWorkJson`, in the shape of [[PreparedBatchJob.pythonWorkJson]]), then starts
  * the job with them (`start`), which returns at once.
  */
final class PreparedStreamJob(spark: SparkSession, val dag: PhysicalDag) {
  private lazy val sourceExtractions = new SourceExtractions(dag)

  /** The UDFs: every chain, the source's timestamps, what enters each window, join, rolling aggregation and
    * `map_stateful`, the key of each `rebalance(key)`, all with their time and the control rows
    * (`controlled`) beside the items; the stateful UDFs of the last two where they run in Python; each
    * join's mapper; the rows of each DataFrame source as items.
    */
  def pythonWorkJson(): String = {
    val mapper = new ObjectMapper()
    val work = mapper.createObjectNode()
    val chains = work.putArray("chains")
    PythonWork.pythonChains(dag).foreach { case (vertex, steps) =>
      PythonWorkJson.chain(chains, vertex, steps, sequenced = dag.keepsSequenceIn(vertex), timed = true, controlled = true)
    }
    val extractions = work.putArray("extractions")
    // Where a window reads a source straight, one extraction reads the items' time and its key and values.
    // The time read there is the source's: a record whose time fails is the source stage's failure.
    def sourceTimeStage(source: Vertex) = PythonExtraction.TimeStage(dag.ownStage(source), dag.routesFailures(source))
    dag.vertices.foreach {
      case v @ Vertex(_, Source(_, _), _, _, _) if sourceExtractions.sources.exists(_.name == v.name) &&
          sourceExtractions.of(v).timeInPython.isDefined && sourceExtractions.of(v).windowAtSource.isEmpty =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, None, Nil, sourceExtractions.of(v).timeInPython, timedInput = false,
          None, deadLetter = false).copy(timeStage = Some(sourceTimeStage(v))), sequenced = false, controlled = true)
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) if stage != AggregationStage.Combine &&
          sourceExtractions.readingRows(v).isEmpty =>
        val atSource = sourceExtractions.extractingAtSource(v)
        timedExtraction(extractions, v, key, Some(op), atSource.flatMap(_.timeInPython), atSource.map(e => sourceTimeStage(e.source)))
      case v @ Vertex(_, RollingAggregate(key, op: PythonAggregateSpec), _, _, _) => timedExtraction(extractions, v, key, Some(op), None)
      case v @ Vertex(_, MapStateful(key, _, _), _, _, _) => timedExtraction(extractions, v, key, None, None)
      case v @ Vertex(_, HashJoin(clauses, _, _), _, _, _) =>
        // As on the batch engine (PythonWork.pythonExtractions): the streamed item's other left keys ride along
        // as values; each enriching side's right key.
        val sides: Seq[(Option[Extractor], Seq[PythonExtraction.Value])] =
          (Some(clauses.head.leftKey), clauses.tail.map(c => PythonExtraction.KeyBytes(c.leftKey))) +:
            clauses.map(c => (Some(c.rightKey), Nil))
        sides.zipWithIndex.foreach { case ((key, values), ordinal) =>
          PythonWorkJson.extraction(extractions, PythonExtraction(v, ordinal, key, values, None, timedInput = true, None,
            deadLetter = dag.routesFailures(v)), sequenced = ordinal == 0 && dag.keepsSequenceIn(v), controlled = true)
        }
      case v => dag.edgesInto(v.name).filter(Rebalancing.rebalancedByKey).foreach { e =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, e.toOrdinal, Rebalancing.rebalanceKey(dag, v, e.toOrdinal), Nil,
          None, timedInput = true, None, deadLetter = dag.routesFailures(v)),
          sequenced = SequenceRestore.extractionKeepsSequence(dag, v, e.toOrdinal), controlled = true)
      }
    }
    // State kept across epochs (`kept`: PythonEpochStage) by a map_stateful, by a window with a user-defined
    // part, or by a rolling aggregation that runs in Python (EpochRolling.runsInPython).
    work.set[JsonNode]("stateful", mapper.valueToTree[JsonNode](PythonWork.pythonStateful(dag).map {
      case (vertex, create, fn, keyed, _) =>
        Map[String, Any]("vertex" -> vertex.name, "stage" -> vertex.fusedChain.head, "create_ref" -> create, "fn_ref" -> fn,
          "keyed" -> keyed, "dead_letter" -> dag.routesFailures(vertex), "sequenced" -> dag.keepsSequenceIn(vertex), "timed" -> true,
          "controlled" -> true, "kept" -> true).asJava
    }.asJava))
    val inPython = (v: Vertex) => PythonAggregations.runsInPython(v) || EpochRolling.runsInPython(dag, v)
    work.set[JsonNode]("custom_aggregations", mapper.valueToTree[JsonNode](CustomAggregationWork.of(dag, inPython).collect {
      case w if w.mode == "rolling" || w.window.isDefined =>
        Map[String, Any]("vertex" -> w.vertex.name, "stage" -> w.vertex.fusedChain.head, "mode" -> w.mode,
          "operations" -> w.operations.asJava, "keyed" -> w.keyed, "dead_letter" -> dag.routesFailures(w.vertex),
          "window" -> w.window.orNull, "sequenced" -> dag.keepsSequenceIn(w.vertex), "timed" -> true, "controlled" -> true,
          "kept" -> true).asJava
    }.asJava))
    work.set[JsonNode]("joins", mapper.valueToTree[JsonNode](PythonWork.pythonJoins(dag).map { case (vertex, mapperRef, deadLetter) =>
      Map[String, Any]("vertex" -> vertex.name, "stage" -> vertex.fusedChain.head, "mapper_ref" -> mapperRef,
        "dead_letter" -> deadLetter, "sequenced" -> dag.keepsSequenceIn(vertex), "timed" -> true, "controlled" -> true).asJava
    }.asJava))
    // A batch DataFrame's rows (a join's enriching side) as items; a stream's, with the columns the JVM
    // reads beside them passed on, unless a window reads them as rows.
    val sources = work.putArray("dataframe_sources")
    val streams = sourceExtractions.sources.map(_.name).toSet
    PythonWork.dataframeSources(dag).filterNot { case (v, _) =>
      streams(v.name) && sourceExtractions.of(v).rowsWindow.isDefined
    }.foreach { case (v, schema) =>
      val node = sources.addObject().put("vertex", v.name).put("schema", schema.json)
      PythonWork.kafkaDeserializers(v).foreach { case (key, value) =>
        node.set[JsonNode]("kafka", mapper.valueToTree[JsonNode](Map("key" -> key, "value" -> value, "stage" -> v.fusedChain.head).asJava))
      }
      if (streams(v.name)) {
        val passed = node.putArray("passed")
        EpochSources.PassedColumns.foreach(f => passed.addObject().put("name", f.name).put("type", f.dataType.sql))
      }
    }
    work.putArray("typed_results")
    mapper.writeValueAsString(work)
  }

  /** What Python extracts where items enter `v`: its key (none: global), the values of `op`'s slots, with the
    * items' time, their sequence ids where the edge into `v` carries them, and the control rows beside them; or, where `v` reads the source straight
    * ([[SourceExtraction]]), with the time it reads from the items (`sourceTime`), the source's (`timeStage`).
    */
  private def timedExtraction(extractions: ArrayNode, v: Vertex, key: Option[Extractor], op: Option[PythonAggregateSpec],
      sourceTime: Option[Extractor], timeStage: Option[PythonExtraction.TimeStage] = None): Unit = {
    val slots = op.toSeq.flatMap(op => PythonAggregations.extractors(op).map(PythonExtraction.OperationSlot(_, op)))
    PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, key, slots, sourceTime, timedInput = sourceTime.isEmpty, None,
      deadLetter = dag.routesFailures(v)).copy(timeStage = timeStage),
      sequenced = sourceTime.isEmpty && SequenceRestore.extractionKeepsSequence(dag, v, 0), controlled = true)
  }

  /** The registry lists of this job's console sinks ([[SinkRunner.consoleListsJson]]). */
  def consoleListsJson(jobId: String): String = SinkRunner.consoleListsJson(dag, jobId)

  /** Starts the job with the UDFs Python built (`udfs(i)` named `names(i)`): its state and offsets live
    * under `checkpointDir`; a micro-batch starts every `triggerIntervalMs` (0: as soon as the last ends).
    * `jobId` scopes its console lists and its Python row sinks. Under `guarantee` EXACTLY_ONCE, a sink
    * that would write a replayed epoch again is a definition error ([[EpochSinks.requireExactlyOnce]]); a
    * checkpoint written for another plan is refused ([[CheckpointManifest]]).
    */
  def start(names: java.util.List[String], udfs: java.util.List[Column], name: String, checkpointDir: String,
      triggerIntervalMs: Long, idleTimeoutMs: Long, jobId: String, guarantee: String): StreamingJob = {
    if (guarantee == "EXACTLY_ONCE") EpochSinks.requireExactlyOnce(dag)
    CheckpointManifest.requireMatching(checkpointDir, dag, spark.sparkContext.hadoopConfiguration)
    val engine = new EpochEngine(spark, dag, names.asScala.map(PythonUdfName.parse).zip(udfs.asScala).toMap,
      s"$checkpointDir/state", idleTimeoutMs, sourceExtractions, jobId, exactlyOnce = guarantee == "EXACTLY_ONCE")
    new StreamingJob(engine, new StreamUnion(spark, sourceExtractions.sources), checkpointDir, triggerIntervalMs, name)
  }
}
