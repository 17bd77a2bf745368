package io.jetspark.plan

import org.scalatest.funsuite.AnyFunSuite

import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._
import io.jetspark.plan.PlanTestSupport._

/** Fusion of consecutive stateless transforms. Default parallelism 4. */
class FusionRuleTest extends AnyFunSuite {

  //  df(4) --local--> fused(m1, f1, s1, fm1, pk)(4) --local--> out(4)
  //                   python round trips: [m1, f1]  [fm1]
  test("consecutive stateless transforms, JVM and Python, fuse into one vertex; consecutive Python steps share a round trip") {
    val p = Pipeline.create()
    wideSource(p)
      .map(py("a")).setName("m1")
      .filter(py("b")).setName("f1")
      .map(identity).setName("s1")
      .flatMap(py("c")).setName("fm1")
      .peek().setName("pk")
      .writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "fused(m1, f1, s1, fm1, pk)", "out"))
    val fused = dag.vertex("fused(m1, f1, s1, fm1, pk)")
    assert(fused.fusedChain == Seq("m1", "f1", "s1", "fm1", "pk"))
    assert(fused.localParallelism == 4)
    val chain = fused.description.asInstanceOf[VertexDescription.StatelessChain]
    assert(chain.pythonRoundTrips == Seq(Seq("m1", "f1"), Seq("fm1")))
    assert(dag.edges.map(e => (e.from, e.to, e.kind)) ==
      Seq(("df", "fused(m1, f1, s1, fm1, pk)", EdgeKind.Local), ("fused(m1, f1, s1, fm1, pk)", "out", EdgeKind.Local)))
  }

  //                 /--local--> fa(4) --> a(4)
  //  df(4) --> m(4)
  //                 \--local--> fb(4) --> b(4)
  test("a fan-out ends the chain: each branch is its own vertex") {
    val p = Pipeline.create()
    val m = wideSource(p).map(identity).setName("m")
    m.filter((_: Any) => true).setName("fa").writeTo(list("a")).setName("a")
    m.filter((_: Any) => true).setName("fb").writeTo(list("b")).setName("b")
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "m", "fa", "a", "fb", "b"))
    assert(dag.edgesFrom("m").map(e => (e.fromOrdinal, e.to, e.kind)) == Seq((0, "fa", EdgeKind.Local), (1, "fb", EdgeKind.Local)))
  }

  //  df(4) --> m(2) --local--> f(4) --> out(4)
  test("a change of parallelism ends the chain") {
    val p = Pipeline.create()
    wideSource(p).map(identity).setName("m").setLocalParallelism(2).filter((_: Any) => true).setName("f").writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "m", "f", "out"))
    assert(dag.lp("m") == 2 && dag.lp("f") == 4)
    assert(dag.kind("m", "f") == EdgeKind.Local)
  }

  //  df(4) --> m(4) ==all-to-one==> mapStateful(1) --> f(1) --> out
  test("a stateful transform between stateless ones separates them, and is never fused") {
    val p = Pipeline.create()
    wideSource(p).map(identity).setName("m").mapStateful(() => 0, (s: Any, i: Any) => (s, i))
      .filter((_: Any) => true).setName("f").writeTo(list()).setName("out")
    val dag = p.plan(4)
    assert(dag.names == Seq("df", "m", "mapStateful", "f", "out"))
    assert(dag.lp("f") == 4)
  }

  test("the source is its own vertex, not fused with the stateless steps after it") {
    val p = Pipeline.create()
    p.readFrom(Sources.items(Seq(1, 2))).setName("src").map(identity).setName("m").writeTo(list()).setName("out")
    val dag = p.plan(1)
    assert(dag.names == Seq("src", "m", "out"))
  }
}
