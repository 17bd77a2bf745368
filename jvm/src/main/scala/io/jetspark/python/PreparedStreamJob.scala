package io.jetspark.python

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.connector.ItemsStreamSource
import io.jetspark.engine.spark.epoch.{EpochEngine, StreamingJob}
import io.jetspark.engine.spark.{PythonExtraction, PythonUdfName, PythonWork, Rebalancing}
import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.{Extractor, TimestampPolicy}
import io.jetspark.plan.VertexDescription.{HashJoin, Source, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.{Column, SparkSession}

import scala.jdk.CollectionConverters._

/** A stream pipeline planned for the Spark epoch engine, between the two calls Python makes: it reads the
  * Arrow UDFs to build (`pythonWorkJson`, in the shape of [[PreparedBatchJob.pythonWorkJson]]), then starts
  * the job with them (`start`), which returns at once.
  */
final class PreparedStreamJob(spark: SparkSession, val dag: PhysicalDag) {

  /** The UDFs: every chain, the source's timestamps, what enters each window and each join, the key of
    * each `rebalance(key)`, all with their time and the control rows (`controlled`) beside the items; each
    * join's mapper; the rows of each batch DataFrame source as items.
    */
  def pythonWorkJson(): String = {
    val mapper = new ObjectMapper()
    val work = mapper.createObjectNode()
    val chains = work.putArray("chains")
    PythonWork.pythonChains(dag).foreach { case (vertex, steps) =>
      PythonWorkJson.chain(chains, vertex, steps, sequenced = false, timed = true, controlled = true)
    }
    val extractions = work.putArray("extractions")
    dag.vertices.foreach {
      case v @ Vertex(_, Source(_, Some(TimestampPolicy.FromItems(ts, _))), _, _, _) =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, None, Nil, Some(ts), timedInput = false, None,
          deadLetter = false), sequenced = false, controlled = true)
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) if stage != AggregationStage.Combine =>
        val slots = PythonAggregations.extractors(op).map(PythonExtraction.OperationSlot(_, op))
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, key, slots, None, timedInput = true, None,
          deadLetter = false), sequenced = false, controlled = true)
      case v @ Vertex(_, HashJoin(clauses, _, _), _, _, _) =>
        // As on the batch engine (PythonWork.pythonExtractions): the streamed item's other left keys ride along
        // as values; each enriching side's right key.
        val sides: Seq[(Option[Extractor], Seq[PythonExtraction.Value])] =
          (Some(clauses.head.leftKey), clauses.tail.map(c => PythonExtraction.KeyBytes(c.leftKey))) +:
            clauses.map(c => (Some(c.rightKey), Nil))
        sides.zipWithIndex.foreach { case ((key, values), ordinal) =>
          PythonWorkJson.extraction(extractions, PythonExtraction(v, ordinal, key, values, None, timedInput = true, None,
            deadLetter = dag.routesFailures(v)), sequenced = false, controlled = true)
        }
      case v => dag.edgesInto(v.name).filter(Rebalancing.rebalancedByKey).foreach { e =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, e.toOrdinal, Rebalancing.rebalanceKey(dag, v, e.toOrdinal), Nil,
          None, timedInput = true, None, deadLetter = false), sequenced = false, controlled = true)
      }
    }
    work.set[JsonNode]("joins", mapper.valueToTree[JsonNode](PythonWork.pythonJoins(dag).map { case (vertex, mapperRef, deadLetter) =>
      Map[String, Any]("vertex" -> vertex.name, "stage" -> vertex.fusedChain.head, "mapper_ref" -> mapperRef,
        "dead_letter" -> deadLetter, "sequenced" -> false, "timed" -> true, "controlled" -> true).asJava
    }.asJava))
    work.set[JsonNode]("dataframe_sources", mapper.valueToTree[JsonNode](PythonWork.dataframeSources(dag).map {
      case (vertex, schema) => Map[String, AnyRef]("vertex" -> vertex.name, "schema" -> schema.json).asJava
    }.asJava))
    Seq("stateful", "custom_aggregations", "typed_results").foreach(work.putArray)
    mapper.writeValueAsString(work)
  }

  /** Starts the job with the UDFs Python built (`udfs(i)` named `names(i)`): its state and offsets live
    * under `checkpointDir`; a micro-batch starts every `triggerIntervalMs` (0: as soon as the last ends).
    */
  def start(names: java.util.List[String], udfs: java.util.List[Column], name: String, checkpointDir: String,
      triggerIntervalMs: Long, idleTimeoutMs: Long): StreamingJob = {
    val engine = new EpochEngine(spark, dag, names.asScala.map(PythonUdfName.parse).zip(udfs.asScala).toMap,
      s"$checkpointDir/state", idleTimeoutMs)
    val Source(source, _) = engine.source.description: @unchecked
    val partitions = source.parameters("partitions").asInstanceOf[Seq[Seq[Any]]].map(_.map(_.asInstanceOf[Array[Byte]]))
    val id = ItemsStreamSource.register(partitions, source.parameters("itemsPerBatch").asInstanceOf[Int])
    val stream = spark.readStream.format(ItemsStreamSource.Format).option("id", id).load()
    new StreamingJob(engine, stream, checkpointDir, triggerIntervalMs, name)
  }
}
