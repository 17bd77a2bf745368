package io.jetspark.engine.local

import io.jetspark.core.eventtime.SubstreamItem
import io.jetspark.core.processor.Sequenced
import io.jetspark.item.Extracted
import io.jetspark.pipeline.definition.TimestampPolicy
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}
import io.jetspark.plan.VertexDescription._

/** The rules for what a Python light job's items carry beside their payload: which vertices' outputs
  * carry their item's event time ([[Timestamped]]), which inputs take such items as they are, and how
  * an output made from an item keeps that item's sequence id ([[Sequenced]]) and time; and how the
  * payload, or what Python extracted from it, is read out of a carried item.
  */
private[local] object CarriedItems {

  /** Which vertices emit items with their event time ([[Timestamped]]): `add_timestamps`, the vertices
    * after it that keep each item's time for its outputs, and the windows that combine (their results are
    * events at `end - 1`, as the Spark engine's are). Every other vertex, and a merge of items with and
    * without their time, emits bare items, and a window behind one fails naming it.
    */
  def timedOutputs(dag: PhysicalDag): Map[String, Boolean] =
    dag.vertices.foldLeft(Map.empty[String, Boolean]) { (timed, v) =>
      val inputs = dag.edgesInto(v.name).filter(_.errorsOf.isEmpty).map(e => timed(e.from)).distinct
      timed + (v.name -> (v.description match {
        case AddTimestamps(_, _) => true
        case Source(_, Some(TimestampPolicy.FromItems(_, _) | TimestampPolicy.Native(_))) => true
        case WindowAggregate(stage, _, _, _) => stage != AggregationStage.Accumulate
        case StatelessChain(_) | Merge(_, _) | MapStateful(_, _, _) | RollingAggregate(_, _) => inputs == Seq(true)
        // A join is a map over its streamed side: its outputs have their left item's time.
        case HashJoin(_, _, _) => dag.edgesInto(v.name).exists(e => e.toOrdinal == 0 && timed(e.from))
        case _ => false
      }))
    }

  /** Whether input `ordinal` of `v` takes items with their event time as they are: the vertices that
    * pass it on to the outputs of each item (stateless ones, `map_stateful`, a rolling aggregation, a
    * join's streamed side) and a window, which reads it; the others take bare items.
    */
  def takesTimedItems(v: Vertex, ordinal: Int): Boolean = v.description match {
    case StatelessChain(_) | Merge(_, _) | WindowAggregate(_, _, _, _) | Sink(_) | MapStateful(_, _, _) | RollingAggregate(_, _) => true
    case HashJoin(_, _, _) => ordinal == 0
    case _ => false
  }

  /** An item without what it carries beside it (its sequence id, its event time). */
  def payloadOf(x: Any): Any = Sequenced.itemOf(x) match {
    case Timestamped(_, payload) => payload
    case payload => payload
  }

  /** What Python extracted from an item, also where the item carries its event time. */
  def extractedOf(x: Any): Extracted = x match {
    case Timestamped(_, e: Extracted) => e
    case e => e.asInstanceOf[Extracted]
  }

  /** `made` in the place of `from`, the item it was made from: with `from`'s sequence id (extended by
    * `path`, the place of `made` among the item's outputs) and event time, where `from` has them.
    */
  def carried(from: Any, made: Any, path: Seq[Int] = Nil, keepTime: Boolean = true): Any = from match {
    case Sequenced(seq, item) => Sequenced(seq.below(path), carried(item, made, Nil, keepTime))
    case Timestamped(ts, _) if keepTime => Timestamped(ts, made)
    case SubstreamItem(substream, _) => SubstreamItem(substream, made)
    case _ => made
  }
}
