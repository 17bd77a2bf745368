package io.jetspark.plan

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.definition.{Extractor, JoinClause, SinkDefinition, SourceDefinition, TimestampPolicy, WindowDefinition}
import io.jetspark.pipeline.transform.StatelessTransform

/** Which processor family a physical vertex runs, with its parameters. The engines turn descriptions into
  * processors; the planner never instantiates one.
  */
sealed trait VertexDescription {
  def describe: String
}

/** Which part of an aggregation a vertex does. Two-stage: `Accumulate` builds partial accumulators next
  * to the data, sends them over one distributed edge, and `Combine` merges them. `SingleStage` receives
  * raw items over the distributed edge and accumulates them itself.
  */
sealed trait AggregationStage { def describe: String }
object AggregationStage {
  case object Accumulate extends AggregationStage { override def describe = "stage 1 of 2: accumulate" }
  case object Combine extends AggregationStage { override def describe = "stage 2 of 2: combine" }
  case object SingleStage extends AggregationStage { override def describe = "single stage" }
}

object VertexDescription {

  final case class Source(source: SourceDefinition, timestamps: Option[TimestampPolicy]) extends VertexDescription {
    override def describe: String = s"source ${source.describe}${timestamps.fold("")(t => s", ${t.describe}")}"
  }

  /** Consecutive stateless steps run one after the other on each item, in one processor. Consecutive
    * Python steps form one Python round trip each.
    */
  final case class StatelessChain(steps: Seq[StatelessTransform]) extends VertexDescription {
    /** The runs of consecutive Python steps, as step names. */
    def pythonRoundTrips: Seq[Seq[String]] =
      steps.foldLeft(List.empty[List[String]] -> false) { case ((runs, inRun), step) =>
        if (!step.runsInPython) (runs, false)
        else if (inRun) ((step.name :: runs.head) :: runs.tail, true)
        else (List(step.name) :: runs, true)
      }._1.reverse.map(_.reverse)

    override def describe: String = {
      val trips = pythonRoundTrips
      val tripText = if (trips.isEmpty) "" else trips.map(_.mkString("[", ", ", "]")).mkString("; python round trips: ", " ", "")
      s"stateless ${steps.map(_.describe).mkString(" -> ")}$tripText"
    }
  }

  /** With `orderedBySequence`, the inputs are branches forked from one ordered stream and the merge emits
    * their items in sequence order (the diamond); otherwise in arrival order.
    */
  final case class Merge(inputs: Int, orderedBySequence: Boolean) extends VertexDescription {
    override def describe: String = s"merge of $inputs inputs${if (orderedBySequence) ", ordered by sequence id" else ""}"
  }

  final case class HashJoin(clauses: Seq[JoinClause], mapper: Option[Extractor], inner: Boolean) extends VertexDescription {
    override def describe: String =
      s"${if (inner) "inner " else ""}hash join on ${clauses.map(_.describe).mkString("; ")} (enriching inputs 1..${clauses.size})"
  }

  final case class MapStateful(key: Option[Extractor], createFn: Extractor, fn: Extractor) extends VertexDescription {
    override def describe: String = s"mapStateful${key.fold(" (one state)")(k => s" by ${k.describe}")}"
  }

  final case class RollingAggregate(key: Option[Extractor], op: AggregateOperation[_, _, _]) extends VertexDescription {
    override def describe: String = s"rollingAggregate${key.fold(" (one state)")(k => s" by ${k.describe}")}"
  }

  /** `keys` empty: one global result. */
  final case class Aggregate(stage: AggregationStage, ops: Seq[AggregateOperation[_, _, _]], keys: Seq[Extractor]) extends VertexDescription {
    override def describe: String =
      s"aggregate of ${ops.size} input${if (ops.size > 1) "s" else ""}${keyText(keys)}, ${stage.describe}"
  }

  /** Each received item's event time is the one it carries from where it was stamped (see [[EventTimeRule]]). */
  final case class WindowAggregate(stage: AggregationStage, window: WindowDefinition, op: AggregateOperation[_, _, _], key: Option[Extractor])
      extends VertexDescription {
    override def describe: String = s"window aggregate ${window.describe}${keyText(key.toSeq)}, ${stage.describe}"
  }

  /** Items get event time from `timestamp`, read once here; they pass on unchanged, their time beside them. */
  final case class AddTimestamps(timestamp: Extractor, allowedLagMs: Long) extends VertexDescription {
    override def describe: String = s"add timestamps from ${timestamp.describe}, lag ${allowedLagMs}ms"
  }

  final case class Distinct(key: Extractor) extends VertexDescription {
    override def describe: String = s"distinct by ${key.describe}"
  }

  /** A sort runs as `LocalSort` per processor, then one `MergeSorted` processor merging the sorted runs. */
  final case class Sort(phase: SortPhase, key: Option[Extractor], reverse: Boolean) extends VertexDescription {
    override def describe: String =
      s"sort ${phase.describe} by ${key.fold("item")(_.describe)}${if (reverse) " descending" else ""}"
  }

  sealed trait SortPhase { def describe: String }
  object SortPhase {
    case object LocalSort extends SortPhase { override def describe = "(local runs)" }
    case object MergeSorted extends SortPhase { override def describe = "(merge of sorted runs)" }
  }

  final case class Sink(sink: SinkDefinition) extends VertexDescription {
    override def describe: String = s"sink ${sink.describe}"
  }

  private def keyText(keys: Seq[Extractor]): String =
    if (keys.isEmpty) " (global)" else s" by ${keys.map(_.describe).distinct.mkString(", ")}"
}
