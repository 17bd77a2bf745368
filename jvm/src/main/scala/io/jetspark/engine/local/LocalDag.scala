package io.jetspark.engine.local

import io.jetspark.core.{Processor, ProcessorContext}

/** What the local engine runs: vertices of processor instances and the edges between them, with every
  * function already bound (JVM functions, or calls back to the driver's Python). Built from a planned
  * [[io.jetspark.plan.PhysicalDag]] by [[JvmVertices]] or [[PythonVertices]]; the engine itself knows
  * nothing about where the functions come from.
  */
final case class LocalDag(vertices: Seq[LocalVertex], edges: Seq[LocalEdge]) {
  private val byName = vertices.map(v => v.name -> v).toMap
  require(byName.size == vertices.size, s"duplicate vertex names in ${vertices.map(_.name).mkString(", ")}")
  edges.foreach { e =>
    require(byName.contains(e.from) && byName.contains(e.to), s"edge ${e.from} -> ${e.to} names a missing vertex")
  }

  def vertex(name: String): LocalVertex = byName(name)
  def edgesInto(name: String): Seq[LocalEdge] = edges.filter(_.to == name).sortBy(_.toOrdinal)
  def edgesFrom(name: String): Seq[LocalEdge] = edges.filter(_.from == name).sortBy(_.fromOrdinal)

  /** The processor input ordinals of `name`, in priority groups (lowest priority value first). An edge
    * with `sendersApart` takes one ordinal per sender, from its `toOrdinal` on.
    */
  def inputOrdinals(name: String): Seq[(LocalEdge, Int, Int)] = {
    var next = 0
    edgesInto(name).map { e =>
      val count = if (e.sendersApart) vertex(e.from).parallelism else 1
      val first = next
      next += count
      (e, first, count)
    }
  }
}

/** `parallelism` instances of a processor. A vertex without inbound edges is a source: instance `i`
  * processes the items of `source(i)` as its input 0. `output` converts every data item the processor
  * emits before it is sent (to the engine's item form of the next vertex). A vertex that is not
  * `cooperative` (its functions block: a call to Python) runs on a thread of its own, as in Jet. A
  * vertex with a `firstSubstream` assigns sequence ids: instance `i` numbers what it sends as substream
  * `firstSubstream + i` (see [[io.jetspark.plan.PhysicalDag.firstSubstream]]).
  */
final case class LocalVertex(
    name: String,
    parallelism: Int,
    newProcessor: ProcessorContext => Processor,
    source: Option[Int => Iterator[Any]] = None,
    output: Any => Any = identity,
    cooperative: Boolean = true,
    firstSubstream: Option[Int] = None,
) {
  require(parallelism >= 1, s"vertex '$name': parallelism must be positive, was $parallelism")
}

/** An edge from output `fromOrdinal` of `from` to input `toOrdinal` of `to`. Inputs with a lower
  * `priority` are consumed (to completion) before inputs with a higher one: a hash join's build sides
  * first. `sendersApart`: every sender instance is an input ordinal of its own (a merge of sorted runs
  * needs to know each run). `errorsOf`: the edge carries the records that stage failed on (dead
  * letters): the processor emits them as [[FailedRecord]]s, which go there and nowhere else.
  * `carriesSequence`: items keep their sequence ids on this edge (as
  * [[io.jetspark.core.processor.Sequenced]]); elsewhere they leave without them.
  */
final case class LocalEdge(
    from: String,
    fromOrdinal: Int,
    to: String,
    toOrdinal: Int,
    routing: Routing,
    priority: Int = 0,
    sendersApart: Boolean = false,
    errorsOf: Option[String] = None,
    carriesSequence: Boolean = false,
)

/** A record that `stage`'s user function failed on, as a processor emits it: the engine sends `record`
  * (the dead letter) over the edge that carries that stage's errors.
  */
final case class FailedRecord(stage: String, record: Any)

/** Which receiving instance(s) get an item (DESIGN.md "Edges", realised in one JVM). Control items
  * (watermarks, done) always go to every receiving instance.
  */
sealed trait Routing
object Routing {
  /** Sender `i` to receiver `i` (modulo the receiver's parallelism). */
  case object Isolated extends Routing
  /** The next receiver in turn that has room (a local and a distributed round-robin edge are the same in one JVM). */
  case object RoundRobin extends Routing
  /** Every item of a key to one receiver: `keyOf(item).hashCode` modulo the receiver's parallelism. */
  final case class Partitioned(keyOf: Any => Any) extends Routing
  /** Every item to every receiver. */
  case object Broadcast extends Routing
  /** Every item to receiver 0 (a vertex of parallelism one). */
  case object AllToOne extends Routing
}
