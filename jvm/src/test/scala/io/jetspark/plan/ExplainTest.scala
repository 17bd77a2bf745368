package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.PlanTestSupport._

/** explain() and toDot() show every vertex, every edge and its kind, the aggregation stages and the order
  * machinery.
  */
class ExplainTest extends AnyFunSuite {

  //  diamond: A ~~isolated~~> fused(neg, B) / fused(pos, C) ~~isolated~~> merge(ordered) ~~partitioned by key~~> D [restore] ==isolated==> out
  //  items ==round-robin==> aggregate-accumulate --all-to-one--> aggregate-combine ==isolated==> total
  //  src0 --local--> m --local--> hashJoin(<==broadcast== side) --> sort-local ==all-to-one==> sort-merge ==isolated==> sorted
  private def everything(): Pipeline = {
    val p = Pipeline.create(true)
    val a = wideSource(p, "A")
    val b = a.filter((_: Any) => true).setName("neg").map(py("b")).setName("B")
    val c = a.filter((_: Any) => true).setName("pos").map(identity).setName("C")
    b.merge(c).groupingKey("key").mapStateful(() => 0, (s: Any, _: Any, i: Any) => (s, i)).setName("D").writeTo(list()).setName("out")
    p.readFrom(Sources.items(Seq(1, 2))).setName("items").rebalance().aggregate(Counting).writeTo(list("t")).setName("total")
    wideSource(p, "src0").map(identity).setName("m").hashJoin(wideSource(p, "side"), JoinClause.on("id", "id"))
      .sort(name).writeTo(list("s")).setName("sorted")
    p
  }

  private val allKinds: Seq[EdgeKind] = Seq(EdgeKind.Isolated, EdgeKind.Local, EdgeKind.RoundRobin,
    EdgeKind.Partitioned(Extractor.FieldName("key")), EdgeKind.Broadcast, EdgeKind.AllToOne)

  test("the test pipeline has every edge kind (so the text tests below cover them all)") {
    val kinds = everything().plan(4).edges.map(_.kind).toSet
    assert(allKinds.forall(kinds.contains), kinds)
  }

  test("explain() lists every vertex with its parallelism, every edge with its kind, aggregation stages and order points") {
    val dag = everything().plan(4)
    val text = everything().explain(4)
    dag.vertices.foreach(v => assert(text.contains(s"${v.name}  [parallelism ${v.localParallelism}]"), v.name))
    dag.edges.foreach(e => assert(text.contains(s"${e.from}:${e.fromOrdinal} -> ${e.to}:${e.toOrdinal}  ${e.kind.describe}"), e))
    allKinds.foreach(k => assert(text.contains(k.describe), k))
    assert(text.contains("fused: neg -> B"))
    assert(text.contains("python round trips: [B]"))
    assert(text.contains("aggregate-accumulate: stage 1 of 2: accumulate"))
    assert(text.contains("aggregate-combine: stage 2 of 2: combine"))
    assert(text.contains("sequence ids assigned at A"))
    assert(text.contains("sequence-restore point: D input 0"))
    assert(text.contains("ordered merge by sequence: merge"))
  }

  test("toDot() draws every vertex and every edge with its kind") {
    val dag = everything().plan(4)
    val dot = everything().toDot(4)
    assert(dot.startsWith("digraph jetspark {") && dot.trim.endsWith("}"))
    dag.vertices.foreach(v => assert(dot.contains(s"""  "${v.name}" [label="${v.name}\\nparallelism ${v.localParallelism}"""), v.name))
    dag.edges.foreach { e =>
      assert(dot.contains(s""""${e.from}" -> "${e.to}" [label="${e.fromOrdinal}->${e.toOrdinal} ${e.kind.describe}"""), e)
    }
    assert(dot.contains("sequence restore at receiver"))
  }
}
