package io.jetspark.python

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.engine.spark.epoch.{EpochEngine, EpochSources, StreamingJob}
import io.jetspark.engine.spark.{PythonExtraction, PythonUdfName, PythonWork}
import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.TimestampPolicy
import io.jetspark.plan.VertexDescription.{Source, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}

import scala.jdk.CollectionConverters._

/** A stream pipeline planned for the Spark epoch engine, between the two calls Python makes: it reads the
  * Arrow UDFs to build (`pythonWorkJson`, in the shape of [[PreparedBatchJob.pythonWorkJson]]), then starts
  * the job with them (`start`), which returns at once.
  */
final class PreparedStreamJob(spark: SparkSession, val dag: PhysicalDag) {

  /** The UDFs: every chain, the source's timestamps and what enters each window, all with their time and
    * the control rows (`controlled`) beside the items.
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
      case v @ Vertex(_, Source(_, Some(policy @ TimestampPolicy.FromItems(ts, _))), _, _, _)
          if !(EpochSources.isDataFrame(v) && EpochSources.dataFrameTimeInJvm(policy)) =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, None, Nil, Some(ts), timedInput = false, None,
          deadLetter = false), sequenced = false, controlled = true)
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) if stage != AggregationStage.Combine =>
        val slots = PythonAggregations.extractors(op).map(PythonExtraction.OperationSlot(_, op))
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, key, slots, None, timedInput = true, None,
          deadLetter = false), sequenced = false, controlled = true)
      case _ =>
    }
    val sources = work.putArray("dataframe_sources")
    dag.vertices.filter(v => v.description.isInstanceOf[Source] && EpochSources.isDataFrame(v)).foreach { v =>
      val Source(source, _) = v.description: @unchecked
      val node = sources.addObject().put("vertex", v.name)
        .put("schema", source.parameters("dataframe").asInstanceOf[DataFrame].schema.json)
      val passed = node.putArray("passed")
      EpochSources.PassedColumns.foreach(f => passed.addObject().put("name", f.name).put("type", f.dataType.sql))
    }
    Seq("stateful", "joins", "custom_aggregations", "typed_results").foreach(work.putArray)
    mapper.writeValueAsString(work)
  }

  /** Starts the job with the UDFs Python built (`udfs(i)` named `names(i)`): its state and offsets live
    * under `checkpointDir`; a micro-batch starts every `triggerIntervalMs` (0: as soon as the last ends).
    */
  def start(names: java.util.List[String], udfs: java.util.List[Column], name: String, checkpointDir: String,
      triggerIntervalMs: Long, idleTimeoutMs: Long): StreamingJob = {
    val engine = new EpochEngine(spark, dag, names.asScala.map(PythonUdfName.parse).zip(udfs.asScala).toMap,
      s"$checkpointDir/state", idleTimeoutMs)
    val (stream, release) = EpochSources.stream(spark, engine.source)
    new StreamingJob(engine, stream, checkpointDir, triggerIntervalMs, name, release)
  }
}
