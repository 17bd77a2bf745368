package io.jetspark.python

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.connector.ItemsStreamSource
import io.jetspark.engine.spark.epoch.{EpochEngine, SourceExtraction, StreamingJob}
import io.jetspark.engine.spark.{PythonExtraction, PythonUdfName, PythonWork}
import io.jetspark.item.PythonAggregations
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.pipeline.definition.TimestampPolicy
import io.jetspark.plan.VertexDescription.{Source, WindowAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import org.apache.spark.sql.{Column, SparkSession}

import scala.jdk.CollectionConverters._

/** A stream pipeline planned for the Spark epoch engine, between the two calls Python makes: it reads the
  * Arrow UDFs to build (`pythonWorkJson`, in the shape of [[PreparedBatchJob.pythonWorkJson]]), then starts
  * the job with them (`start`), which returns at once.
  */
final class PreparedStreamJob(spark: SparkSession, val dag: PhysicalDag) {
  private lazy val sourceExtraction = new SourceExtraction(dag, EpochEngine.streamSource(dag))

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
    // Where a window reads the source straight, one extraction reads the items' time and its key and values.
    val sourceTime = sourceExtraction.source.description match {
      case Source(_, Some(TimestampPolicy.FromItems(ts, _))) => Some(ts)
      case _ => None
    }
    dag.vertices.foreach {
      case v @ Vertex(_, Source(_, _), _, _, _) if sourceTime.isDefined && sourceExtraction.windowAtSource.isEmpty =>
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, None, Nil, sourceTime, timedInput = false, None,
          deadLetter = false), sequenced = false, controlled = true)
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) if stage != AggregationStage.Combine =>
        val slots = PythonAggregations.extractors(op).map(PythonExtraction.OperationSlot(_, op))
        val atSource = sourceExtraction.extractedAtSource(v)
        PythonWorkJson.extraction(extractions, PythonExtraction(v, 0, key, slots, sourceTime.filter(_ => atSource),
          timedInput = !atSource, None, deadLetter = false), sequenced = false, controlled = true)
      case _ =>
    }
    Seq("dataframe_sources", "stateful", "joins", "custom_aggregations", "typed_results").foreach(work.putArray)
    mapper.writeValueAsString(work)
  }

  /** Starts the job with the UDFs Python built (`udfs(i)` named `names(i)`): its state and offsets live
    * under `checkpointDir`; a micro-batch starts every `triggerIntervalMs` (0: as soon as the last ends).
    */
  def start(names: java.util.List[String], udfs: java.util.List[Column], name: String, checkpointDir: String,
      triggerIntervalMs: Long, idleTimeoutMs: Long): StreamingJob = {
    val engine = new EpochEngine(spark, dag, names.asScala.map(PythonUdfName.parse).zip(udfs.asScala).toMap,
      s"$checkpointDir/state", idleTimeoutMs, sourceExtraction)
    val Source(source, _) = engine.source.description: @unchecked
    val partitions = source.parameters("partitions").asInstanceOf[Seq[Seq[Any]]].map(_.map(_.asInstanceOf[Array[Byte]]))
    val id = ItemsStreamSource.register(partitions, source.parameters("itemsPerBatch").asInstanceOf[Int])
    val stream = spark.readStream.format(ItemsStreamSource.Format).option("id", id).load()
    new StreamingJob(engine, stream, checkpointDir, triggerIntervalMs, name)
  }
}
