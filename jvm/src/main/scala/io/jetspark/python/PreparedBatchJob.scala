package io.jetspark.python

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.engine.spark.{CarriedTimestamps, PythonUdfName, PythonWork, SparkBatchEngine, TypedPlan}
import io.jetspark.engine.spark.runner.{SequenceRestore, SinkRunner}
import io.jetspark.item.CustomAggregationWork
import io.jetspark.pipeline.PythonRef
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.transform._
import io.jetspark.plan.PhysicalDag
import org.apache.spark.sql.{Column, SparkSession}

import scala.jdk.CollectionConverters._

/** A batch pipeline planned for the Spark engine, between the two calls Python makes to run it: first
  * Python reads which fused chains run in Python (`pythonChainsJson`) and builds one UDF for each, then
  * it runs the job with them (`run`).
  */
final class PreparedBatchJob(spark: SparkSession, val dag: PhysicalDag) {
  // Typed items and Catalyst delegation are decided here, and what Python extracts where, so that a
  // Column on Python items fails now.
  private val typedPlan = TypedPlan(dag)
  private val timestamps = new CarriedTimestamps(dag, typedPlan)
  private val pythonExtractions = PythonWork.pythonExtractions(dag, typedPlan, timestamps)

  /** Every Arrow UDF the job needs from Python, as JSON:
    * {{{
    * {"chains": [{"vertex", "steps": [{"kind", "ref", "stage", "dead_letter"}], "sequenced", "timed"}], // fused steps
    *  "extractions": [{"vertex", "stage", "ordinal", "key": extractor or null, "values": [extractor],  // keys, values
    *                   "timestamp": extractor (where items are stamped), "timed", "sequenced", "dead_letter",
    *                   "rows_schema", "row_fields" (where Columns were evaluated next to a source's rows)}],
    *  "dataframe_sources": [{"vertex", "schema": Spark's schema JSON}],             // rows to items
    *  "stateful": [{"vertex", "stage", "create_ref", "fn_ref", "keyed", "dead_letter", "sequenced", "timed"}], // map_stateful
    *  "joins": [{"vertex", "stage", "mapper_ref", "dead_letter", "sequenced", "timed"}], // hash join mappers
    *  "custom_aggregations": [{"vertex", "stage", "mode", "operations", "keyed", "dead_letter",  // with AggregateOperation.of
    *                          "window" (a window's definition, or null), "sequenced", "timed" (rolling only)}],
    *  "typed_results": [{"vertex", "schema", "shape"}]}                            // Catalyst results to items
    * }}}
    * `ref`s number the Python callables of the pipeline's spec (null: a `peek()` without one). Python
    * answers with `run`, naming each UDF `chain:`, `rows:`, `stateful:`, `join:`, `custom:` or `results:` + the vertex, or
    * `extract:` + the vertex + `:` + the input ordinal. `sequenced`: the items carry sequence ids, which
    * the UDF must keep (`python/jetspark/worker/carried.py`, `SequenceRestore`); `timed`: the items carry their
    * time in a column `ts`, which the UDF must keep ([[CarriedTimestamps]]); both: the time, then the ids.
    */
  def pythonWorkJson(): String = {
    val mapper = new ObjectMapper()
    val work = mapper.createObjectNode()
    val chains = work.putArray("chains")
    PythonWork.pythonChains(dag).foreach { case (vertex, steps) =>
      PythonWorkJson.chain(chains, vertex, steps, sequenced = dag.keepsSequenceIn(vertex), timed = timestamps.emits(vertex.name))
    }
    val extractions = work.putArray("extractions")
    pythonExtractions.foreach { e =>
      // (Beside a source's rows the ids are not carried through Python: the JVM numbers the extraction's
      // outputs as it numbers the source's items.)
      val node = PythonWorkJson.extraction(extractions, e,
        sequenced = SequenceRestore.extractionKeepsSequence(dag, e.vertex, e.ordinal) && e.rowSource.isEmpty)
      // Where Columns were evaluated next to a DataFrame source's rows: the rows' schema (with the Columns'
      // values last) and how many of its fields make the item.
      e.rowSource.foreach { source =>
        val rows = typedPlan.dataframeSources(source)
        if (typedPlan.numberedRowSources.contains(source) && SequenceRestore.extractionKeepsSequence(dag, e.vertex, e.ordinal))
          e.requireRowWise(rows)
        node.put("rows_schema", e.rowsWithColumns(rows).schema.json).put("row_fields", rows.schema.size)
      }
    }
    work.set[JsonNode]("dataframe_sources", mapper.valueToTree[JsonNode](PythonWork.dataframeSources(dag)
        .filter { case (vertex, _) => typedPlan.rowsBecomeItems(vertex.name) }.map {
      case (vertex, schema) => Map[String, AnyRef]("vertex" -> vertex.name, "schema" -> schema.json).asJava
    }.asJava))
    work.set[JsonNode]("stateful", mapper.valueToTree[JsonNode](PythonWork.pythonStateful(dag).map {
      case (vertex, create, fn, keyed, deadLetter) =>
        Map[String, Any]("vertex" -> vertex.name, "stage" -> vertex.fusedChain.head, "create_ref" -> create, "fn_ref" -> fn,
          "keyed" -> keyed, "dead_letter" -> deadLetter, "sequenced" -> dag.keepsSequenceIn(vertex),
          "timed" -> timestamps.emits(vertex.name)).asJava
    }.asJava))
    work.set[JsonNode]("joins", mapper.valueToTree[JsonNode](PythonWork.pythonJoins(dag).map {
      case (vertex, mapperRef, deadLetter) =>
        Map[String, Any]("vertex" -> vertex.name, "stage" -> vertex.fusedChain.head, "mapper_ref" -> mapperRef,
          // Only the streamed (left) side's ids ride on to the outputs (HashJoinRunner).
          "dead_letter" -> deadLetter,
          "sequenced" -> dag.edgesInto(vertex.name).exists(e => e.toOrdinal == 0 && dag.keepsSequence(e)),
          "timed" -> timestamps.emits(vertex.name)).asJava
    }.asJava))
    work.set[JsonNode]("custom_aggregations", mapper.valueToTree[JsonNode](CustomAggregationWork.of(dag).map { w =>
      Map[String, Any]("vertex" -> w.vertex.name, "stage" -> w.vertex.fusedChain.head, "mode" -> w.mode,
        "operations" -> w.operations.asJava, "keyed" -> w.keyed, "dead_letter" -> w.deadLetter,
        "window" -> w.window.orNull,
        // Only a rolling aggregation gives its outputs what their items carry (one output per item); other
        // vertices that would have to carry ids are refused by name when the job runs (SequenceRestore).
        "sequenced" -> (w.mode == "rolling" && dag.keepsSequenceIn(w.vertex)),
        "timed" -> (w.mode == "rolling" && timestamps.emits(w.vertex.name))).asJava
    }.asJava))
    work.set[JsonNode]("typed_results", mapper.valueToTree[JsonNode](typedPlan.pythonResults.map {
      case (vertex, schema, shape) =>
      Map[String, AnyRef]("vertex" -> vertex, "schema" -> schema.json, "shape" -> shape).asJava
    }.asJava))
    mapper.writeValueAsString(work)
  }

  /** The registry lists of this job's console sinks ([[SinkRunner.consoleListsJson]]). */
  def consoleListsJson(jobId: String): String = SinkRunner.consoleListsJson(dag, jobId)

  /** Runs the job with the UDFs Python built for `pythonWorkJson`: `udfs(i)` is named `names(i)`;
    * `jobId` scopes what the job's console sinks collect (`SinkRunner.consoleList`).
    * Returns the metrics as JSON: `{"vertices": {name: {"items_in", "items_out", "dead_letters"}},
    * "catalyst": [vertices Catalyst ran], "typed_windows": [windows that read rows in the JVM],
    * "columnar_windows": [those of them whose frames are columns],
    * "physical_plans": {sink vertex: Spark's physical plan}}`.
    */
  def run(names: java.util.List[String], udfs: java.util.List[Column], jobId: String): String = {
    val engine = new SparkBatchEngine(spark, dag, names.asScala.map(PythonUdfName.parse).zip(udfs.asScala).toMap, jobId, typedPlan)
    val out = engine.run().withDefaultValue(0L)
    val perVertex = dag.vertices.map { v =>
      val in = dag.edgesInto(v.name).map(e => out(e.errorsOf.fold(e.from)(SparkBatchEngine.deadLettersOf(e.from, _)))).sum
      v.name -> Map[String, Any]("items_in" -> in, "items_out" -> out(v.name), "dead_letters" -> out(s"${v.name}.errors")).asJava
    }
    new ObjectMapper().writeValueAsString(Map[String, AnyRef]("vertices" -> perVertex.toMap.asJava, "catalyst" -> engine.catalystVertices.asJava,
      "typed_windows" -> typedPlan.typedWindows.keys.toSeq.sorted.asJava,
      "columnar_windows" -> typedPlan.columnarWindows.toSeq.sorted.asJava,
      "physical_plans" -> engine.sinkPhysicalPlans.asJava).asJava)
  }
}
