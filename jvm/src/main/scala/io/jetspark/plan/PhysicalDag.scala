package io.jetspark.plan

/** A physical vertex: `localParallelism` processors of the family `description` says. `fusedChain` names
  * the logical stages it runs (several when stateless stages were fused). `assignsSequence`: items leaving
  * it carry a sequence id that a restore point or an ordered merge downstream needs: `(substream, offset)`
  * at a source, `(processor index, offset)` at an order-producing vertex (its output order is the order).
  */
final case class Vertex(
    name: String,
    description: VertexDescription,
    localParallelism: Int,
    fusedChain: Seq[String],
    assignsSequence: Boolean = false,
)

/** A physical edge from output `fromOrdinal` of `from` to input `toOrdinal` of `to`.
  * `restoresSequence`: the receiver restores the encounter order (per key on a partitioned edge) by the
  * items' sequence ids, which a shuffle from several senders mixes. `carriesSequence`: items on this edge
  * carry their sequence id. `errorsOf`: the edge carries the failed records of that stage (dead letters).
  */
final case class Edge(
    from: String,
    fromOrdinal: Int,
    to: String,
    toOrdinal: Int,
    kind: EdgeKind,
    restoresSequence: Boolean = false,
    carriesSequence: Boolean = false,
    errorsOf: Option[String] = None,
)

object PhysicalDag {
  /** How many substreams (processors) one vertex's sequence ids may have: the bits below a vertex's first one. */
  val SubstreamBits = 20

  private def isOrderedMerge(v: Vertex): Boolean = v.description match {
    case VertexDescription.Merge(_, ordered) => ordered
    case _ => false
  }
}

/** The planned job: vertices in topological order and the edges between them. */
final case class PhysicalDag(vertices: Seq[Vertex], edges: Seq[Edge], preserveOrder: Boolean) {

  def vertex(name: String): Vertex =
    vertices.find(_.name == name).getOrElse(throw new NoSuchElementException(s"no vertex '$name' in ${vertices.map(_.name).mkString(", ")}"))
  def edgesInto(name: String): Seq[Edge] = edges.filter(_.to == name).sortBy(_.toOrdinal)
  def edgesFrom(name: String): Seq[Edge] = edges.filter(_.from == name).sortBy(_.fromOrdinal)
  /** Whether the records that vertex `v`'s own stage fails on go to a dead-letter edge (a vertex that
    * runs one stage: an aggregation, a join, `mapStateful`, a sink; a fused chain names each of its stages).
    */
  def routesFailures(v: Vertex): Boolean = failureEdges(v).nonEmpty
  /** Whether noop sinks are all that read `vertex`'s output (its dead letters included): what it emits
    * is counted and dropped, so it need not be made into items.
    */
  def onlyNoopSinksRead(vertex: String): Boolean = {
    val readers = edgesFrom(vertex)
    readers.nonEmpty && readers.forall(e => e.errorsOf.isEmpty && isNoopSink(e.to))
  }
  def isNoopSink(vertex: String): Boolean = this.vertex(vertex).description match {
    case VertexDescription.Sink(sink) => sink.name == "noop"
    case _ => false
  }
  /** The dead-letter edges of the records that vertex `v`'s own stage fails on (see [[routesFailures]]). */
  def failureEdges(v: Vertex): Seq[Edge] = edgesFrom(v.name).filter(_.errorsOf.contains(ownStage(v)))
  /** The stage of vertex `v` (the first of a fused chain), whose name its dead letters carry. */
  def ownStage(v: Vertex): String = v.fusedChain.headOption.getOrElse(v.name)
  /** Whether `edge`'s receiver takes the items with their sequence ids: it carries them on, or it merges
    * by them (an ordered merge).
    */
  def keepsSequence(edge: Edge): Boolean = {
    val receiver = vertex(edge.to)
    edge.carriesSequence && (carriesSequenceOut(receiver) || PhysicalDag.isOrderedMerge(receiver))
  }

  /** Whether items leave `v` with their sequence ids on some edge. */
  def carriesSequenceOut(v: Vertex): Boolean = edgesFrom(v.name).exists(_.carriesSequence)

  /** Whether `v` must carry the ids of items it did not number itself on to its outputs. */
  def carriesSequenceThrough(v: Vertex): Boolean = carriesSequenceOut(v) && !v.assignsSequence

  /** Whether `v` takes its items with their ids and gives each output the id of its item. */
  def keepsSequenceIn(v: Vertex): Boolean = edgesInto(v.name).exists(keepsSequence)

  /** The first substream of the ids that `v` assigns (its processor `i` numbers substream `first + i`):
    * above those of the vertices that assign ids before it, so that two ordered streams never share a
    * substream, and, merged, the earlier vertex's items come first (as the brute-force reference orders
    * unrelated streams by origin).
    */
  def firstSubstream(v: Vertex): Int = {
    require(v.assignsSequence, s"vertex '${v.name}' assigns no sequence ids")
    vertices.filter(_.assignsSequence).indexWhere(_.name == v.name) << PhysicalDag.SubstreamBits
  }

  /** The single edge from `from` to `to`. */
  def edge(from: String, to: String): Edge = edges.filter(e => e.from == from && e.to == to) match {
    case Seq(e) => e
    case found => throw new NoSuchElementException(s"${found.size} edges from '$from' to '$to'")
  }

  /** Text: every vertex with its parallelism and fused chain, every edge with its kind, then the
    * aggregation stages and the order-preserving machinery.
    */
  def explain(): String = {
    val out = new StringBuilder
    out ++= s"Physical plan (preserve order: ${if (preserveOrder) "on" else "off"}): ${vertices.size} vertices, ${edges.size} edges\n"
    out ++= "Vertices:\n"
    vertices.foreach { v =>
      out ++= s"  ${v.name}  [parallelism ${v.localParallelism}]  ${v.description.describe}\n"
      if (v.fusedChain.size > 1) out ++= s"      fused: ${v.fusedChain.mkString(" -> ")}\n"
      if (v.assignsSequence) out ++= s"      assigns sequence ids ${sequenceForm(v)}\n"
    }
    out ++= "Edges:\n"
    edges.foreach(e => out ++= s"  ${edgeText(e)}\n")

    val aggregations = vertices.flatMap(v => aggregationStage(v.description).map(v -> _))
    if (aggregations.nonEmpty) {
      out ++= "Aggregation stages:\n"
      aggregations.foreach { case (v, stage) => out ++= s"  ${v.name}: ${stage.describe}\n" }
    }
    val restores = edges.filter(_.restoresSequence)
    val merges = vertices.filter(PhysicalDag.isOrderedMerge)
    if (restores.nonEmpty || merges.nonEmpty) {
      out ++= "Order:\n"
      vertices.filter(_.assignsSequence).foreach(v => out ++= s"  sequence ids assigned at ${v.name}\n")
      restores.foreach(e => out ++= s"  sequence-restore point: ${e.to} input ${e.toOrdinal} (${e.kind.describe} from ${e.from})\n")
      merges.foreach(v => out ++= s"  ordered merge by sequence: ${v.name}\n")
    }
    out.result()
  }

  /** Graphviz DOT of the same plan. */
  def toDot(): String = {
    def quote(s: String) = "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\""
    val out = new StringBuilder("digraph jetspark {\n  rankdir=TB;\n  node [shape=box];\n")
    vertices.foreach { v =>
      val lines = vertexLines(v)
      val style = if (v.assignsSequence) ", style=bold" else ""
      out ++= s"  ${quote(v.name)} [label=${quote(lines.mkString("\n"))}$style];\n"
    }
    edges.foreach { e =>
      val style = if (e.kind.isDistributed) "" else ", style=dashed"
      out ++= s"  ${quote(e.from)} -> ${quote(e.to)} [label=${quote(edgeLabel(e))}$style];\n"
    }
    out ++= "}\n"
    out.result()
  }

  /** The same plan as a Mermaid flowchart (rendered inline by GitHub and most Markdown viewers):
    * distributed edges solid, local and isolated edges dotted.
    */
  def toMermaid(): String = {
    // Mermaid labels are HTML: entities for what HTML would take as markup, <br/> between lines.
    def text(s: String) = s.replace("\"", "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    def quote(lines: Seq[String]) = "\"" + lines.map(text).mkString("<br/>") + "\""
    val ids = vertices.map(_.name).zipWithIndex.map { case (name, i) => name -> s"v$i" }.toMap
    val out = new StringBuilder("flowchart TB\n")
    vertices.foreach(v => out ++= s"  ${ids(v.name)}[${quote(vertexLines(v))}]\n")
    edges.foreach { e =>
      val arrow = if (e.kind.isDistributed) s"-- ${quote(Seq(edgeLabel(e)))} -->" else s"-. ${quote(Seq(edgeLabel(e)))} .->"
      out ++= s"  ${ids(e.from)} $arrow ${ids(e.to)}\n"
    }
    out.result()
  }

  private def vertexLines(v: Vertex): Seq[String] =
    Seq(v.name, s"parallelism ${v.localParallelism}", v.description.describe) ++
      (if (v.fusedChain.size > 1) Seq(s"fused: ${v.fusedChain.mkString(" -> ")}") else Nil) ++
      (if (v.assignsSequence) Seq("assigns sequence ids") else Nil)

  private def edgeLabel(e: Edge): String =
    Seq(s"${e.fromOrdinal}->${e.toOrdinal} ${e.kind.describe}") ++
      e.errorsOf.map(s => s"errors of $s") ++
      (if (e.carriesSequence) Seq("with sequence ids") else Nil) ++
      (if (e.restoresSequence) Seq("sequence restore at receiver") else Nil) mkString ", "

  private def edgeText(e: Edge): String = s"${e.from}:${e.fromOrdinal} -> ${e.to}:${e.toOrdinal}  ${edgeLabel(e).dropWhile(_ != ' ').trim}"

  /** A source numbers items per substream; an order producer per processor. */
  private def sequenceForm(v: Vertex): String = v.description match {
    case _: VertexDescription.Source => "(substream, offset)"
    case _ => "(processor, offset)"
  }

  private def aggregationStage(d: VertexDescription): Option[AggregationStage] = d match {
    case VertexDescription.Aggregate(stage, _, _) => Some(stage)
    case VertexDescription.WindowAggregate(stage, _, _, _) => Some(stage)
    case _ => None
  }
}
