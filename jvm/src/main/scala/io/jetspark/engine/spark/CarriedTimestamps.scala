package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.RowSchemas
import io.jetspark.pipeline.definition.Extractor
import io.jetspark.plan.VertexDescription.{AddTimestamps, HashJoin, MapStateful, Merge, RollingAggregate, StatelessChain, WindowAggregate}
import io.jetspark.plan.{AggregationStage, Edge, PhysicalDag, Vertex}
import org.apache.spark.sql.DataFrame

import scala.collection.mutable

/** Event time on the Spark batch engine, as Jet's `JetEvent` carries it (see `plan.EventTimeRule`): an
  * item's timestamp (ms) is read once, where the item is stamped, and rides beside the item in a column
  * [[rows.RowSchemas.Ts]] to the windows that read it.
  *
  *  - Stamping: Python's extraction where items enter an `addTimestamps` vertex reads the timestamp with
  *    its extractor (a Column on a DataFrame source's rows is evaluated by Catalyst next to the row, see
  *    [[PythonExtraction]]). It always does, read or not, so that a timestamp that is no time fails the
  *    `addTimestamps` stage, as in Jet. A window's results are stamped with `end - 1`
  *    ([[Extractor.WindowResultTime]]) where they enter a vertex that reads their time.
  *  - Carrying: a fused Python chain gives each output the time of the record it ran on
  *    (`python/jetspark/worker/steps.py`); so does `map_stateful`'s Python UDF, a rolling aggregation
  *    (one output per item: [[rows.ProcessorStage.runCarrying]], or the Python UDF of one with a user-defined
  *    part, `python/jetspark/worker/custom_aggregations.py`) and a hash join, whose outputs for a streamed
  *    item get that item's time ([[runner.HashJoinRunner]]; the enriching sides arrive without theirs); a merge
  *    unions its inputs' rows, time and all; edges move the time with the item. Dead letters leave
  *    without it (their sink takes the items only). Under preserve_order the same vertices carry each
  *    item's sequence id too ([[runner.SequenceRestore]]): both ride together, time first
  *    ([[rows.RowSchemas.carriedColumns]]), so a restore point between `addTimestamps` and a window
  *    orders the items, times and all, that the window then reads.
  *  - Reading: the extraction at a window's input passes the time on beside the key and values
  *    ([[rows.RowSchemas.TimedSchema]]).
  * Only the vertices on the way to a window that reads Python items ([[readers]]) take the time in; edges
  * to any other vertex drop the column. A window that reads a DataFrame source's rows in the JVM takes the
  * time from the rows ([[window.TypedWindow]]).
  */
final class CarriedTimestamps(dag: PhysicalDag, typed: TypedPlan) {
  private val reading = mutable.Map.empty[String, Boolean]

  /** Whether `vertex` takes each input item's time in: a window where Python items enter it, or a stage
    * that carries the time on the way to one.
    */
  def reads(vertex: String): Boolean = reading.getOrElseUpdate(vertex, {
    val v = dag.vertex(vertex)
    v.description match {
      case WindowAggregate(stage, _, _, _) => stage != AggregationStage.Combine && !typed.typedWindows.contains(vertex)
      case _ if carries(v) => dag.edgesFrom(vertex).exists(carriesInto)
      case _ => false
    }
  })

  /** Whether the rows `vertex` emits hold each item's time: it stamps them, or carries them to a reader. */
  def emits(vertex: String): Boolean = dag.vertex(vertex).description match {
    case AddTimestamps(_, _) => !typed.typedStamps(vertex)
    case _ if carries(dag.vertex(vertex)) => reads(vertex)
    case _ => false
  }

  /** Whether the rows that `edge` delivers hold their items' time, to be taken in by the receiver. */
  def arriveTimed(edge: Edge): Boolean = carriesInto(edge) && emits(edge.from)

  /** Whether the receiver of `edge` takes the time of the items that `edge` delivers: it reads times, and
    * the edge is not an error edge nor an enriching side of a hash join (only streamed items' times count).
    */
  private def carriesInto(edge: Edge): Boolean = edge.errorsOf.isEmpty && reads(edge.to) &&
    (edge.toOrdinal == 0 || !dag.vertex(edge.to).description.isInstanceOf[HashJoin])

  /** How the items entering on `edge` get their time there, where they are stamped on entry: into an
    * `addTimestamps` vertex, or from a window (its results) into a vertex that reads their time.
    */
  def stampOn(edge: Edge): Option[Extractor] = dag.vertex(edge.to).description match {
    case AddTimestamps(ts, _) if emits(edge.to) => Some(ts)
    case _ if carriesInto(edge) && emitsWindowResults(dag.vertex(edge.from)) => Some(Extractor.WindowResultTime)
    case _ => None
  }

  /** What the sender gives `edge`: `df` without the time column where the receiver does not read it. */
  def forEdge(edge: Edge, df: DataFrame): DataFrame =
    if (arriveTimed(edge) || !df.columns.contains(RowSchemas.Ts)) df else df.drop(RowSchemas.Ts)

  /** Fails, naming the vertex, where a reader gets items without a time. */
  def requireSupported(): Unit = dag.vertices.filter(v => reads(v.name)).foreach { v =>
    dag.edgesInto(v.name).find(e => carriesInto(e) && !arriveTimed(e) && stampOn(e).isEmpty).foreach { e =>
      throw new UnsupportedOperationException(s"vertex '${v.name}' (${v.description.describe}): the items from " +
        s"'${e.from}' (${dag.vertex(e.from).description.describe}) carry no timestamp the Spark batch engine can read: " +
        "it does not carry one through that stage yet; give them timestamps after it with add_timestamps(ts)")
    }
  }

  /** Whether `v` gives what it emits for an item that item's time. */
  private def carries(v: Vertex): Boolean = v.description match {
    case StatelessChain(_) | Merge(_, _) | MapStateful(_, _, _) | HashJoin(_, _, _) | RollingAggregate(_, _) => true
    case _ => false
  }

  private def emitsWindowResults(v: Vertex): Boolean = v.description match {
    case WindowAggregate(stage, _, _, _) => stage != AggregationStage.Accumulate
    case _ => false
  }
}
