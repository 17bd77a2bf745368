package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.JsonNode
import io.jetspark.connector.KafkaConnector
import io.jetspark.item.{PythonAggregations, PythonOps}
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.{PythonAggregateSpec, PythonExtractors, PythonRef}
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.pipeline.transform.StatelessTransform
import io.jetspark.plan.VertexDescription._
import io.jetspark.plan.{AggregationStage, Edge, EdgeKind, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.types.StructType

/** The work a batch job gives Python: the Arrow UDFs Python builds before the job runs (named by
  * [[PythonUdfName]]), and what each of them takes apart or runs.
  */
object PythonWork {
  import Rebalancing.{rebalanceKey, rebalancedByKey}

  /** The inputs (vertex, ordinal) whose items Python must first take apart, with what it extracts from
    * each: at an aggregation where items enter, per input, the grouping key (None: a global aggregation)
    * and that input's operation's values in slot order; at a hash join, each side's key of its clause
    * (the streamed side's other clauses' keys as values); behind a `rebalance(key)` edge, that key,
    * which decides the partition (also where the vertex has no key of its own: a global aggregation, a
    * sort); where items are stamped on entry, their time ([[CarriedTimestamps]]). None for the vertices
    * that Catalyst runs (see [[TypedPlan]]).
    */
  def pythonExtractions(dag: PhysicalDag, typed: TypedPlan, timestamps: CarriedTimestamps): Seq[PythonExtraction] = {
    import PythonExtraction.{KeyBytes, OperationSlot, Plain}
    def extraction(v: Vertex, ordinal: Int, key: Option[Extractor], values: Seq[PythonExtraction.Value]) = {
      val edge = dag.edgesInto(v.name).find(_.toOrdinal == ordinal).get
      PythonExtraction(v, ordinal, key, values, timestamps.stampOn(edge), timestamps.arriveTimed(edge),
        PythonExtraction.rowSourceOf(typed, edge), deadLetter = dag.routesFailures(v))
    }
    def slots(op: PythonAggregateSpec) = PythonAggregations.extractors(op).map(OperationSlot(_, op))
    dag.vertices.filterNot(v => typed.runsInCatalyst(v.name)).flatMap {
      case v @ Vertex(_, Aggregate(stage, PythonOps(ops), keys), _, _, _) =>
        if (stage == AggregationStage.Combine) Nil
        else ops.indices.map(i => extraction(v, i, keys.lift(i).orElse(rebalanceKey(dag, v, i)), slots(ops(i))))
      case v @ Vertex(_, RollingAggregate(key, op: PythonAggregateSpec), _, _, _) => Seq(extraction(v, 0, key, slots(op)))
      case v @ Vertex(_, MapStateful(key, _, _), _, _, _) => Seq(extraction(v, 0, key, Nil))
      case v @ Vertex(_, Sort(SortPhase.LocalSort, key, _), _, _, _) =>
        Seq(extraction(v, 0, rebalanceKey(dag, v, 0), Seq(Plain(key.getOrElse(Extractor.WholeItem)))))
      // A window reads the rows in the JVM where its path says so (WindowPlanner), else Python passes each
      // item's time on.
      case v @ Vertex(_, WindowAggregate(stage, _, op: PythonAggregateSpec, key), _, _, _) =>
        if (stage == AggregationStage.Combine || typed.windows.paths(v.name).rows.isDefined) Nil
        else Seq(extraction(v, 0, key, slots(op)))
      case v @ Vertex(_, HashJoin(clauses, _, _), _, _, _) =>
        // The streamed item's other left keys ride along as values, in the canonical form keys compare in.
        extraction(v, 0, Some(clauses.head.leftKey), clauses.tail.map(c => KeyBytes(c.leftKey))) +:
          clauses.zipWithIndex.map { case (c, i) => extraction(v, i + 1, Some(c.rightKey), Nil) }
      // Elsewhere: the key of a rebalance(key) edge, and the time of items stamped on entry (CarriedTimestamps).
      case v => dag.edgesInto(v.name).collect {
        case e if rebalancedByKey(e) || timestamps.stampOn(e).isDefined => extraction(v, e.toOrdinal, rebalanceKey(dag, v, e.toOrdinal), Nil)
      }
    }
  }

  /** The vertices whose fused steps run in Python, with those steps in order: the Python layer builds
    * one Arrow UDF for each (`python/jetspark/worker/steps.py`).
    */
  def pythonChains(dag: PhysicalDag): Seq[(Vertex, Seq[StatelessTransform])] = dag.vertices.collect {
    case v @ Vertex(_, StatelessChain(steps), _, _, _) if steps.forall(runsInPythonChain) => v -> steps
  }

  /** Python functions run in the chain's Python trip, and so does a plain `peek()`: it prints the item,
    * which only Python can show.
    */
  private[spark] def runsInPythonChain(step: StatelessTransform): Boolean = step match {
    case p: io.jetspark.pipeline.transform.PeekTransform => p.fn == Extractor.WholeItem || p.runsInPython
    case other => other.runsInPython
  }

  /** The `map_stateful` vertices whose functions run in Python: state per key (or one state) kept across
    * the items of a partition by a Python UDF, after a shuffle by key (or to one partition).
    */
  def pythonStateful(dag: PhysicalDag): Seq[(Vertex, Int, Int, Boolean, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, MapStateful(key, Extractor.PythonFn(PythonRef(create), _), Extractor.PythonFn(PythonRef(fn), _)), _, _, _) =>
      (v, create, fn, key.isDefined, dag.routesFailures(v))
  }

  /** The hash joins, with their mapper (the number of its Python callable) and whether its failures go
    * to a dead-letter sink: Python applies the mapper to each tuple `(left, right_1, ..., right_n)`.
    */
  def pythonJoins(dag: PhysicalDag): Seq[(Vertex, Int, Boolean)] = dag.vertices.collect {
    case v @ Vertex(_, HashJoin(_, Some(Extractor.PythonFn(PythonRef(mapper), _)), _), _, _, _) =>
      (v, mapper, dag.routesFailures(v))
  }

  /** The DataFrame sources (Kafka's, a stream's, among them), with their schemas: the Python layer builds,
    * for each, the UDF that turns rows into items.
    */
  def dataframeSources(dag: PhysicalDag): Seq[(Vertex, StructType)] = dag.vertices.collect {
    case v @ Vertex(_, Source(source, _), _, _, _) if source.name == "dataframe" =>
      v -> source.parameters("dataframe").asInstanceOf[DataFrame].schema
    case v @ Vertex(_, Source(source, _), _, _, _) if source.name == "kafka" => v -> KafkaConnector.RecordSchema
  }

  /** How Python makes a Kafka source's rows records: its key's and its value's deserializer, a name or the
    * number of a Python function (as JSON: a string or a number).
    */
  def kafkaDeserializers(v: Vertex): Option[(Any, Any)] = v.description match {
    case Source(source, _) if source.name == "kafka" =>
      def of(part: String): Any = source.parameters(part) match {
        case PythonRef(ref) => ref
        case name => name.toString
      }
      Some((of("keyDeserializer"), of("valueDeserializer")))
    case _ => None
  }
}
