package io.jetspark.engine.spark

import io.jetspark.pipeline.definition.Extractor
import io.jetspark.plan.{Edge, EdgeKind, PhysicalDag, Vertex}

/** The edges that `rebalance(key)` partitions by a key their items do not carry yet: the key is extracted
  * on the way in ([[PythonExtraction]]), also where the receiver has no key of its own.
  */
object Rebalancing {
  /** An edge partitioned by a key that its items do not carry yet. */
  def rebalancedByKey(e: Edge): Boolean = e.kind match {
    case EdgeKind.Partitioned(_, preExtracted) => !preExtracted && !e.errorsOf.isDefined
    case _ => false
  }

  /** The key of a `rebalance(key)` into input `ordinal` of `v`: where `v` has no key of its own there, the
    * extraction gives it this one, so that the edge spreads the items by it (not all into one partition).
    */
  def rebalanceKey(dag: PhysicalDag, v: Vertex, ordinal: Int): Option[Extractor] =
    dag.edgesInto(v.name).find(e => e.toOrdinal == ordinal && rebalancedByKey(e)).map(_.kind.asInstanceOf[EdgeKind.Partitioned].key)
}
