package io.jetspark.plan

import io.jetspark.pipeline.definition.{PipelineDefinitionError, SessionWindowDefinition, SlidingWindowDefinition, TimestampPolicy}
import io.jetspark.pipeline.definition.PipelineDefinitionError._
import io.jetspark.pipeline.transform._

/** The definition rules checked when a pipeline is planned (those a single call cannot check, since the
  * rest of the pipeline may not exist yet). Each failure names the stage and the rule. The order rule
  * (`rebalance()` upstream of an order-sensitive stage) lives with the order planning, in [[OrderPlanner]].
  */
private[plan] object Validation {

  def validate(graph: LogicalGraph): Unit = {
    val transforms = graph.transforms
    if (!transforms.exists(_.isInstanceOf[SourceTransform]))
      throw new PipelineDefinitionError("pipeline", EmptyPipeline, "the pipeline reads no source")
    transforms.foreach(requireTimestampChoice)
    transforms.foreach(t => requireAttached(graph, t))
    transforms.foreach(requireNoRebalanceBeforeStateful)
    transforms.foreach(requireTimestampsForWindow)
    transforms.foreach(requireCombineForWindow)
    transforms.foreach(EventTimeRule.requireCarried)
    transforms.foreach(requireUnaryOperations)
    transforms.foreach(requireDeadLetterSink)
    requireUniqueNames(transforms)
  }

  private def requireUniqueNames(transforms: Seq[Transform]): Unit =
    transforms.groupBy(_.name).collectFirst { case (_, Seq(first, second, _*)) => (first, second) }.foreach {
      case (first, second) => fail(second, UniqueStageNames,
        s"stages #${first.id} and #${second.id} are both named '${second.name}'; names identify stages in errors, metrics and dead letters")
    }

  private def fail(t: Transform, rule: String, detail: String): Nothing = throw new PipelineDefinitionError(t.name, rule, detail)

  private def requireTimestampChoice(t: Transform): Unit = t match {
    case s: StreamSourceTransform if s.timestamps.isEmpty =>
      fail(t, StreamSourceTimestamps,
        "a stream source must choose its timestamps: withTimestamps, withNativeTimestamps, withIngestionTimestamps or withoutTimestamps")
    case _ =>
  }

  private def requireAttached(graph: LogicalGraph, t: Transform): Unit = t match {
    case _: SinkTransform =>
    case _ if graph.downstream(t).isEmpty =>
      fail(t, UnattachedStage, "nothing is attached to this stage; write it to a sink or remove it")
    case _ =>
  }

  // Design doc 008: a non-keyed stateful transform runs as one processor, so rebalancing its input does
  // nothing but add a network hop; the user most likely meant something else.
  private def requireNoRebalanceBeforeStateful(t: Transform): Unit = t match {
    case s: StatefulTransform if s.key.isEmpty && s.isRebalanced(0) =>
      fail(t, RebalanceBeforeStateful,
        s"${s.name} keeps one state and runs as a single processor; rebalancing its input (from '${s.upstream.head.name}') has no effect")
    case _ =>
  }

  private def requireTimestampsForWindow(t: Transform): Unit = t match {
    case w: WindowAggregateTransform =>
      sourcesFeeding(w.upstream.head).find(_.timestamps.contains(TimestampPolicy.NoTimestamps)).foreach { s =>
        fail(t, WindowNeedsTimestamps, s"window ${w.window.describe} needs event timestamps, but source '${s.name}' was read withoutTimestamps")
      }
    case _ =>
  }

  // Jet's rule, and the window processors': a window made of several frames combines them, and an event
  // that bridges two sessions merges their accumulators. Refused here, before a job starts, not when a
  // processor (or a Python worker) first meets such a window.
  private def requireCombineForWindow(t: Transform): Unit = t match {
    case w: WindowAggregateTransform if !w.canCombine =>
      val needs = w.window match {
        case s: SlidingWindowDefinition if !s.isTumbling => Some("a sliding window combines the frames (slides) it spans")
        case _: SessionWindowDefinition => Some("an event that bridges two sessions merges their accumulators")
        case _ => None
      }
      needs.foreach(why => fail(t, WindowNeedsCombine,
        s"${w.window.describe} needs an aggregate operation that combines partial accumulators ($why); " +
          "give the operation a combine function, or use a tumbling window"))
    case _ =>
  }

  /** The stream sources whose items reach `t` with their timestamps, up to the nearest window (its
    * results carry the window's last instant, end - 1, as their timestamp).
    */
  private def sourcesFeeding(t: Transform): Seq[StreamSourceTransform] = t match {
    case s: StreamSourceTransform => Seq(s)
    case _: WindowAggregateTransform => Nil
    case j: HashJoinTransform => sourcesFeeding(j.upstream.head)
    case other => other.upstream.flatMap(sourcesFeeding)
  }

  private def requireUnaryOperations(t: Transform): Unit = {
    val ops = t match {
      case a: AggregatingTransform => a.ops
      case r: RollingAggregateTransform => Seq(r.op)
      case _ => Nil
    }
    ops.find(_.arity != 1).foreach { op =>
      fail(t, AggregateArity, s"each input takes an operation of arity 1, got one of arity ${op.arity}")
    }
  }

  private def requireDeadLetterSink(t: Transform): Unit = t.errorSink.filterNot(_.isDeadLetter).foreach { sink =>
    fail(t, OnErrorSink, s"onError takes Sinks.deadLetter(name), got ${sink.describe}")
  }
}
