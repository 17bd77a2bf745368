package io.jetspark.pipeline

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, JoinClause, SessionWindowDefinition, SlidingWindowDefinition, TimestampPolicy, WindowDefinition}
import io.jetspark.pipeline.transform._

/** The stage API builds the logical DAG the user wrote: transforms with their inputs, per-input rebalance
  * choices, names, parallelism and order classes (design doc 015's table).
  */
class PipelineApiTest extends AnyFunSuite {

  private object Sum extends AggregateOperation[Any, Array[Long], Long] {
    override def arity = 1
    override def create(): Array[Long] = Array(0L)
    override def accumulate(acc: Array[Long], ordinal: Int, item: Any): Array[Long] = { acc(0) += item.asInstanceOf[Int]; acc }
    override def combineFn: Option[(Array[Long], Array[Long]) => Array[Long]] = Some((l, r) => { l(0) += r(0); l })
    override def deductFn: Option[(Array[Long], Array[Long]) => Array[Long]] = None
    override def exportResult(acc: Array[Long]): Long = acc(0)
    override def finishResult(acc: Array[Long]): Long = acc(0)
  }
  private object InOrder extends AggregateOperation[Any, List[Any], List[Any]] {
    override def arity = 1
    override def isOrderSensitive = true
    override def create(): List[Any] = Nil
    override def accumulate(acc: List[Any], ordinal: Int, item: Any): List[Any] = item :: acc
    override def combineFn: Option[(List[Any], List[Any]) => List[Any]] = None
    override def deductFn: Option[(List[Any], List[Any]) => List[Any]] = None
    override def exportResult(acc: List[Any]): List[Any] = acc.reverse
    override def finishResult(acc: List[Any]): List[Any] = acc.reverse
  }

  test("transforms are recorded in creation order with their upstream links") {
    val p = Pipeline.create()
    val src = p.readFrom(Sources.items(Seq(1, 2, 3)))
    val doubled = src.map((x: Any) => x.asInstanceOf[Int] * 2)
    val sink = doubled.writeTo(Sinks.list("out"))
    assert(p.transforms.size == 3)
    val (s, m, k) = (p.transforms(0), p.transforms(1), p.transforms(2))
    assert(Seq(s.id, m.id, k.id) == Seq(0, 1, 2))
    assert(s eq src.transform)
    assert(m.upstream == Seq(s) && k.upstream == Seq(m))
    assert(k eq sink.transform)
    assert(p.downstream(s) == Seq(m -> 0))
  }

  test("rebalance() adds no transform: it marks the input of the next transform only") {
    val p = Pipeline.create()
    val src = p.readFrom(Sources.items(Seq(1)))
    val rebalanced = src.rebalance(Extractor.FieldName("k")).map((x: Any) => x)
    val plain = src.map((x: Any) => x)
    assert(p.transforms.size == 3)
    assert(rebalanced.transform.rebalance == Seq(Rebalance.ByKey(Extractor.FieldName("k"))))
    assert(plain.transform.rebalance == Seq(Rebalance.None))
  }

  test("merge and hash join record a rebalance choice per input ordinal") {
    val p = Pipeline.create()
    val a = p.readFrom(Sources.items(Seq(1)))
    val b = p.readFrom(Sources.items(Seq(2)))
    val merged = a.merge(b.rebalance())
    assert(merged.transform.upstream == Seq(a.transform, b.transform))
    assert(merged.transform.rebalance == Seq(Rebalance.None, Rebalance.RoundRobin))
    val joined = a.rebalance().hashJoin(b.rebalance(), JoinClause.on("x", "y"))
    assert(joined.transform.rebalance == Seq(Rebalance.RoundRobin, Rebalance.RoundRobin))
    assert(joined.transform.orderRelevantInputs == Seq(0))
  }

  test("a keyed stage carries the pending rebalance and the grouping key into the keyed transform") {
    val p = Pipeline.create()
    val agg = p.readFrom(Sources.items(Seq(1))).rebalance().groupingKey("k").aggregate(Sum)
    val t = agg.transform.asInstanceOf[AggregateTransform]
    assert(t.rebalance == Seq(Rebalance.RoundRobin))
    assert(t.keys == Seq(Extractor.FieldName("k")))
    assert(t.groupingKey(0).contains(Extractor.FieldName("k")))
  }

  test("setName and setLocalParallelism apply to the stage's transform; names default to the operation") {
    val p = Pipeline.create()
    val m = p.readFrom(Sources.items(Seq(1))).map((x: Any) => x)
    assert(m.name == "map" && m.transform.localParallelism == Transform.DefaultParallelism)
    m.setName("double").setLocalParallelism(3)
    assert(m.transform.name == "double" && m.transform.localParallelism == 3)
  }

  test("order classes follow design doc 015") {
    val p = Pipeline.create()
    val batch = p.readFrom(Sources.items(Seq(1)))
    val stream = p.readFrom(Sources.rateStream(10)).withTimestamps("timestamp", 0)
    def cls(stage: StageBase) = stage.transform.orderClass
    import OrderClass._
    val f: Any => Any = x => x
    assert(cls(batch.map(f)) == Insensitive)
    assert(cls(batch.filter((_: Any) => true)) == Insensitive)
    assert(cls(batch.flatMap((x: Any) => Seq(x))) == Insensitive)
    assert(cls(batch.peek()) == Insensitive)
    assert(cls(batch.merge(batch)) == Insensitive)
    assert(cls(batch.hashJoin(batch, JoinClause.on("a", "a"))) == Insensitive)
    assert(cls(batch.mapStateful(() => 0, (s: Any, i: Any) => (s, i))) == Sensitive)
    assert(cls(batch.groupingKey("k").mapStateful(() => 0, (s: Any, _: Any, i: Any) => (s, i))) == Sensitive)
    assert(cls(batch.rollingAggregate(Sum)) == Sensitive)
    assert(cls(batch.aggregate(InOrder)) == Sensitive)
    assert(cls(batch.groupingKey("k").distinct()) == Sensitive)
    assert(cls(batch.writeTo(Sinks.noop())) == Sensitive)
    assert(cls(stream) == Sensitive) // timestamp assignment
    assert(cls(batch.sort()) == Producing)
    assert(cls(batch.aggregate(Sum)) == Producing)
    assert(cls(batch.groupingKey("k").aggregate(Sum)) == Producing)
    assert(cls(batch.distinct()) == Producing)
    assert(cls(stream.window(WindowDefinition.tumbling(10)).aggregate(Sum)) == Producing)
  }

  test("Scala function overloads wrap JVM functions; stateful functions receive (state, item) tuples") {
    val p = Pipeline.create()
    val src = p.readFrom(Sources.items(Seq(1)))
    val m = src.map((x: Any) => x.asInstanceOf[Int] + 1).transform.asInstanceOf[MapTransform]
    assert(m.fn.asInstanceOf[Extractor.ScalaFn].f(41) == 42)
    val s = src.mapStateful(() => 10, (state: Any, item: Any) => (state.asInstanceOf[Int] + 1, item)).transform
      .asInstanceOf[MapStatefulTransform]
    assert(s.createFn.asInstanceOf[Extractor.ScalaFn].f(null) == 10)
    assert(s.fn.asInstanceOf[Extractor.ScalaFn].f((10, "x")) == ((11, "x")))
    val keyed = src.groupingKey("k").mapStateful(() => 0, (state: Any, key: Any, item: Any) => (key, item)).transform
      .asInstanceOf[MapStatefulTransform]
    assert(keyed.fn.asInstanceOf[Extractor.ScalaFn].f((0, "k1", "x")) == (("k1", "x")))
    assert(keyed.key.contains(Extractor.FieldName("k")))
  }

  test("stream source timestamps are recorded on the source transform") {
    val p = Pipeline.create()
    val src = p.readFrom(Sources.kafka("host:1", "t")).withNativeTimestamps(500)
    assert(src.transform.asInstanceOf[StreamSourceTransform].timestamps.contains(TimestampPolicy.Native(500)))
  }

  test("sources fix their substreams where the definition says so") {
    assert(Sources.items(Seq(1, 2)).substreams.contains(1))
    assert(Sources.itemsStream(Seq(Seq(1), Seq(2), Seq(3)), 1).substreams.contains(3))
    assert(Sources.rateStream(10, 2).substreams.contains(2))
    assert(Sources.dataframe("df").substreams.isEmpty)
  }

  test("window definitions: tumbling is sliding with slide = size; early results keep the window") {
    val t = WindowDefinition.tumbling(10)
    assert(t == SlidingWindowDefinition(10, 10) && t.isTumbling)
    assert(!WindowDefinition.sliding(10, 5).isTumbling)
    assert(t.setEarlyResultsPeriod(3) == SlidingWindowDefinition(10, 10, 3))
    assert(WindowDefinition.session(7).setEarlyResultsPeriod(2) == SessionWindowDefinition(7, 2))
  }

  test("hashJoin for Java and py4j callers pairs enriching stages with clauses") {
    val p = Pipeline.create()
    val a = p.readFrom(Sources.items(Seq(1)))
    val b = p.readFrom(Sources.items(Seq(2)))
    val c = p.readFrom(Sources.items(Seq(3)))
    val joined = a.hashJoin(java.util.List.of(b, c), java.util.List.of(JoinClause.on("x", "x"), JoinClause.on("y", "y")), null, true)
      .transform.asInstanceOf[HashJoinTransform]
    assert(joined.upstream == Seq(a.transform, b.transform, c.transform))
    assert(joined.clauses == Seq(JoinClause.on("x", "x"), JoinClause.on("y", "y")))
    assert(joined.mapper.isEmpty && joined.inner)
  }

  test("only Python extractors run in Python; a Java function becomes a JVM extractor") {
    assert(Extractor.python(new Object, "f").runsInPython)
    assert(!Extractor.field("a").runsInPython && !Extractor.column("col").runsInPython && !Extractor.WholeItem.runsInPython)
    val javaFn = Extractor.function(new java.util.function.Function[Any, Any] { def apply(x: Any): Any = s"<$x>" })
    assert(!javaFn.runsInPython)
    assert(javaFn.asInstanceOf[Extractor.ScalaFn].f(1) == "<1>")
  }
}
