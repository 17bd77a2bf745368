package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.{Extractor, SinkDefinition}

/** How the user asked to rebalance one input of a transform (design doc 008). */
sealed trait Rebalance extends Serializable
object Rebalance {
  case object None extends Rebalance
  /** `rebalance()`: a distributed round-robin edge. */
  case object RoundRobin extends Rebalance
  /** `rebalance(key)`: a distributed edge partitioned by `key`. */
  final case class ByKey(key: Extractor) extends Rebalance
}

/** How a transform relates to the encounter order of its input (design doc 015). */
sealed trait OrderClass
object OrderClass {
  /** Result independent of input order; its input needs order only where its output does. */
  case object Insensitive extends OrderClass
  /** Result depends on input order (stateful mapping, rolling aggregation, to-list, timestamps, sinks). */
  case object Sensitive extends OrderClass
  /** Defines its own output order (sort, aggregations, windows); its input needs no order. */
  case object Producing extends OrderClass
}

/** One node of the logical DAG: an operation and its inputs, as the user wrote them.
  *
  * Inputs are numbered by ordinal (the position in `upstream`); per ordinal the transform knows whether
  * the user rebalanced it and by which key. The pipeline assigns `id` in creation order, which is a
  * topological order, since a transform's upstreams always exist before it. Name and local parallelism
  * are set by the stage API after creation (`setName`, `setLocalParallelism`).
  */
abstract class Transform(val upstream: Seq[Transform], val rebalance: Seq[Rebalance]) {
  require(upstream.size == rebalance.size, "one rebalance choice per input")

  private[pipeline] var idValue: Int = -1
  private var nameValue: Option[String] = scala.None
  private var lpValue: Int = Transform.DefaultParallelism
  private var errorSinkValue: Option[SinkDefinition] = scala.None

  def id: Int = idValue
  def name: String = nameValue.getOrElse(defaultName)
  /** -1 when the planner decides. */
  def localParallelism: Int = lpValue
  /** The dead-letter sink failing records of this transform's user function go to. */
  def errorSink: Option[SinkDefinition] = errorSinkValue

  private[pipeline] def name_=(n: String): Unit = nameValue = Some(n)
  private[pipeline] def localParallelism_=(lp: Int): Unit = lpValue = lp
  private[pipeline] def errorSink_=(sink: Option[SinkDefinition]): Unit = errorSinkValue = sink

  protected def defaultName: String
  def orderClass: OrderClass

  /** The inputs whose order matters to this transform's result (a hash join's enriching sides do not). */
  def orderRelevantInputs: Seq[Int] = upstream.indices

  def isRebalanced(ordinal: Int): Boolean = rebalance(ordinal) != Rebalance.None

  /** The grouping key of input `ordinal` for keyed transforms: the state lives per key, so the input
    * must be partitioned by it.
    */
  def groupingKey(ordinal: Int): Option[Extractor] = scala.None

  /** Text for plans: the operation and its parameters. */
  def describe: String

  override def toString: String = s"$name#$id"
}

object Transform {
  val DefaultParallelism: Int = -1
}

