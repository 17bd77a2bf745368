package io.jetspark.python

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.engine.spark.SparkBatchEngine
import io.jetspark.pipeline.{Extractor, PythonRef}
import io.jetspark.pipeline.transform._
import io.jetspark.plan.PhysicalDag
import org.apache.spark.sql.{Column, SparkSession}

import scala.jdk.CollectionConverters._

/** A batch pipeline planned for the Spark engine, between the two calls Python makes to run it: first
  * Python reads which fused chains run in Python (`pythonChainsJson`) and builds one UDF for each, then
  * it runs the job with them (`run`).
  */
final class PreparedBatchJob(spark: SparkSession, val dag: PhysicalDag) {

  /** `[{"vertex": name, "steps": [{"kind", "ref", "stage", "dead_letter"}, ...]}, ...]`: `ref` numbers the
    * Python callable of the step (null for a `peek()` without one).
    */
  def pythonChainsJson(): String = {
    val chains = SparkBatchEngine.pythonChains(dag).map { case (vertex, steps) =>
      Map[String, AnyRef]("vertex" -> vertex.name, "steps" -> steps.map(stepSpec).asJava).asJava
    }
    new ObjectMapper().writeValueAsString(chains.asJava)
  }

  /** `[{"vertex": name, "key": extractor or null, "values": [extractor, ...]}, ...]`: what Python extracts
    * from each item entering a vertex that needs keys or values (see `SparkBatchEngine.pythonExtractions`).
    */
  def pythonExtractionsJson(): String = {
    val mapper = new ObjectMapper()
    val extractions = SparkBatchEngine.pythonExtractions(dag).map { case (vertex, key, values) =>
      val node = mapper.createObjectNode()
      node.put("vertex", vertex.name)
      node.set[JsonNode]("key", key.getOrElse(mapper.nullNode()))
      node.set[JsonNode]("values", mapper.valueToTree[JsonNode](values.asJava))
      node
    }
    mapper.writeValueAsString(extractions.asJava)
  }

  /** `[{"vertex": name, "columns": [...]}, ...]`: the DataFrame sources whose rows Python turns into items. */
  def dataframeSourcesJson(): String = new ObjectMapper().writeValueAsString(SparkBatchEngine.dataframeSources(dag).map {
    case (vertex, columns) => Map[String, AnyRef]("vertex" -> vertex.name, "columns" -> columns.asJava).asJava
  }.asJava)

  private def stepSpec(t: StatelessTransform): java.util.Map[String, Any] = {
    val kind = t match {
      case _: MapTransform => "map"
      case _: FilterTransform => "filter"
      case _: FlatMapTransform => "flat_map"
      case _: PeekTransform => "peek"
    }
    val ref = t.fn match {
      case Extractor.PythonFn(PythonRef(r), _) => Integer.valueOf(r)
      case _ => null
    }
    Map[String, Any]("kind" -> kind, "ref" -> ref, "stage" -> t.name, "dead_letter" -> t.errorSink.isDefined).asJava
  }

  /** Runs the job; `chainUdfs(i)` is the fused chain of vertex `chains(i)`, `extractionUdfs(i)` the
    * extraction of vertex `extractions(i)`, `rowsToItemsUdfs(i)` the row conversion of DataFrame source
    * `dataframeSources(i)`. Returns the metrics as JSON:
    * `{"vertices": {name: {"items_in", "items_out", "dead_letters"}}}`.
    */
  def run(chains: java.util.List[String], chainUdfs: java.util.List[Column],
          extractions: java.util.List[String], extractionUdfs: java.util.List[Column],
          dataframeSources: java.util.List[String], rowsToItemsUdfs: java.util.List[Column]): String = {
    def byVertex(names: java.util.List[String], udfs: java.util.List[Column]) = names.asScala.zip(udfs.asScala).toMap
    val out = new SparkBatchEngine(spark, dag, byVertex(chains, chainUdfs), byVertex(extractions, extractionUdfs),
      byVertex(dataframeSources, rowsToItemsUdfs)).run().withDefaultValue(0L)
    val perVertex = dag.vertices.map { v =>
      val in = dag.edgesInto(v.name).map(e => out(e.errorsOf.fold(e.from)(_ => s"${e.from}.errors"))).sum
      v.name -> Map[String, Any]("items_in" -> in, "items_out" -> out(v.name), "dead_letters" -> out(s"${v.name}.errors")).asJava
    }
    new ObjectMapper().writeValueAsString(Map("vertices" -> perVertex.toMap.asJava).asJava)
  }
}
