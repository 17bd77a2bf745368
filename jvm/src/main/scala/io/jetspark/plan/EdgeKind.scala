package io.jetspark.plan

import io.jetspark.pipeline.definition.Extractor

/** How items travel from one vertex's processors to the next vertex's (DESIGN.md, "Edges on Spark"). */
sealed trait EdgeKind {
  def describe: String
  /** Whether the edge sends items across partitions (a Spark shuffle or broadcast). */
  def isDistributed: Boolean
}

object EdgeKind {
  /** Processor i feeds processor i only: narrow, order kept; the receiver has the sender's parallelism
    * (a merge may have wider inputs: senders are numbered from 0).
    */
  case object Isolated extends EdgeKind {
    override def describe = "isolated"
    override def isDistributed = false
  }

  /** Round-robin among the processors of the same member; on Spark, the same task where parallelism allows. */
  case object Local extends EdgeKind {
    override def describe = "local"
    override def isDistributed = false
  }

  /** Round-robin over every processor of the job (`rebalance()`). */
  case object RoundRobin extends EdgeKind {
    override def describe = "round-robin"
    override def isDistributed = true
  }

  /** Every item of a key goes to the same processor. With `preExtracted`, the items are already
    * `(key, value)` pairs whose key was computed upstream by `key` (the edge after an accumulate stage).
    */
  final case class Partitioned(key: Extractor, preExtracted: Boolean = false) extends EdgeKind {
    override def describe: String = s"partitioned by ${key.describe}${if (preExtracted) " (key extracted upstream)" else ""}"
    override def isDistributed = true
  }

  /** Every item to every processor (a hash join's enriching side). */
  case object Broadcast extends EdgeKind {
    override def describe = "broadcast"
    override def isDistributed = true
  }

  /** Every item to one processor (global aggregation, non-keyed state, the ordered merge of a sort). */
  case object AllToOne extends EdgeKind {
    override def describe = "all-to-one"
    override def isDistributed = true
  }
}
