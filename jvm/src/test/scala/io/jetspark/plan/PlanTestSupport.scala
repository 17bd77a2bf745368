package io.jetspark.plan

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._

/** Small fixtures for planner tests: aggregate operations of known capabilities and short plan queries. */
object PlanTestSupport {

  /** Counts items; combinable. */
  object Counting extends AggregateOperation[Any, Array[Long], Long] {
    override def arity = 1
    override def create(): Array[Long] = Array(0L)
    override def accumulate(acc: Array[Long], ordinal: Int, item: Any): Array[Long] = { acc(0) += 1; acc }
    override def combineFn: Option[(Array[Long], Array[Long]) => Array[Long]] = Some((l, r) => { l(0) += r(0); l })
    override def deductFn: Option[(Array[Long], Array[Long]) => Array[Long]] = None
    override def exportResult(acc: Array[Long]): Long = acc(0)
    override def finishResult(acc: Array[Long]): Long = acc(0)
  }

  /** The last item seen; cannot combine partial results. */
  object Last extends AggregateOperation[Any, Array[Any], Any] {
    override def arity = 1
    override def create(): Array[Any] = Array[Any](null)
    override def accumulate(acc: Array[Any], ordinal: Int, item: Any): Array[Any] = { acc(0) = item; acc }
    override def combineFn: Option[(Array[Any], Array[Any]) => Array[Any]] = None
    override def deductFn: Option[(Array[Any], Array[Any]) => Array[Any]] = None
    override def exportResult(acc: Array[Any]): Any = acc(0)
    override def finishResult(acc: Array[Any]): Any = acc(0)
  }

  /** Items in arrival order; combinable (concatenation) but order-sensitive. */
  object ToList extends AggregateOperation[Any, scala.collection.mutable.ArrayBuffer[Any], Seq[Any]] {
    type Acc = scala.collection.mutable.ArrayBuffer[Any]
    override def arity = 1
    override def isOrderSensitive = true
    override def create(): Acc = scala.collection.mutable.ArrayBuffer.empty[Any]
    override def accumulate(acc: Acc, ordinal: Int, item: Any): Acc = acc += item
    override def combineFn: Option[(Acc, Acc) => Acc] = Some((l, r) => l ++= r)
    override def deductFn: Option[(Acc, Acc) => Acc] = None
    override def exportResult(acc: Acc): Seq[Any] = acc.toSeq
    override def finishResult(acc: Acc): Seq[Any] = acc.toSeq
  }

  /** Counting of `arity` inputs that cannot combine partial counts (no `combineFn`). */
  class CountingWithoutCombine(override val arity: Int) extends AggregateOperation[Any, Array[Long], Long] {
    override def create(): Array[Long] = Array(0L)
    override def accumulate(acc: Array[Long], ordinal: Int, item: Any): Array[Long] = { acc(0) += 1; acc }
    override def combineFn: Option[(Array[Long], Array[Long]) => Array[Long]] = None
    override def deductFn: Option[(Array[Long], Array[Long]) => Array[Long]] = None
    override def exportResult(acc: Array[Long]): Long = acc(0)
    override def finishResult(acc: Array[Long]): Long = acc(0)
  }

  /** An operation of arity 2, wrong for `aggregate(op)`. */
  object CountingBoth extends CountingWithoutCombine(2)

  val identity: Any => Any = x => x
  val name: Extractor = Extractor.FieldName("name")
  val age: Extractor = Extractor.FieldName("age")
  def py(id: String): Extractor = Extractor.PythonFn(new Object, id)

  /** A source of several substreams: a batch DataFrame whose parallelism the planner chooses. */
  def wideSource(p: Pipeline, label: String = "df"): BatchStage = p.readFrom(Sources.dataframe(label)).setName(label)

  def list(name: String = "out"): SinkDefinition = Sinks.list(name)

  /** `(kind, restoresSequence)` of every edge, by `from -> to`. */
  implicit final class DagQueries(private val dag: PhysicalDag) extends AnyVal {
    def kind(from: String, to: String): EdgeKind = dag.edge(from, to).kind
    def lp(vertex: String): Int = dag.vertex(vertex).localParallelism
    def names: Seq[String] = dag.vertices.map(_.name)
  }
}
