package io.jetspark.engine.spark

import com.fasterxml.jackson.databind.ObjectMapper
import io.jetspark.pipeline.PythonAggregateSpec
import io.jetspark.plan.VertexDescription.{Aggregate, RollingAggregate}
import io.jetspark.plan.{AggregationStage, PhysicalDag, Vertex}

/** User-defined aggregate operations (`AggregateOperation.of(create, accumulate, ...)` in Python) on the
  * Spark batch engine. Their functions are Python's, so each of their vertices is one Arrow UDF
  * (python/jetspark/_custom_ops.py, named `custom:<vertex>`) over the items that the vertex's input
  * extraction gave their key; the JVM only moves rows between them, as for built-in operations:
  *
  * {{{
  *   two stages:   accumulate (per partition, pickled accumulators per key) ──partitioned by key──▶ combine ──▶ results
  *   one stage:    ──items partitioned by key (or all to one)──▶ single (accumulate, then finish)  ──▶ results
  *   rolling:      ──items partitioned by key (or all to one)──▶ rolling (export after each item)  ──▶ results
  * }}}
  *
  * A record whose `accumulate` fails goes to the stage's dead-letter sink where it has one, leaving the
  * accumulator as it was; a failing `create`, `combine`, `export` or `finish` fails the job, naming the
  * stage and the group.
  */
object CustomAggregations {

  /** What one vertex runs: `mode` is `accumulate`, `combine`, `single` or `rolling`; `functionsRef` numbers
    * the operation's functions among the pipeline's Python objects.
    */
  final case class Work(vertex: Vertex, mode: String, functionsRef: Int, keyed: Boolean, deadLetter: Boolean)

  private val mapper = new ObjectMapper()

  def work(dag: PhysicalDag): Seq[Work] = dag.vertices.flatMap { v =>
    def of(mode: String, op: PythonAggregateSpec, keyed: Boolean) =
      Work(v, mode, mapper.readTree(op.json).get("ref").asInt, keyed, dag.edgesFrom(v.name).exists(_.errorsOf.isDefined))
    v.description match {
      case Aggregate(stage, Seq(op: PythonAggregateSpec), keys) if PythonAggregations.isCustom(op) =>
        val mode = stage match {
          case AggregationStage.Accumulate => "accumulate"
          case AggregationStage.Combine => "combine"
          case AggregationStage.SingleStage => "single"
        }
        Seq(of(mode, op, keys.nonEmpty))
      case RollingAggregate(key, op: PythonAggregateSpec) if PythonAggregations.isCustom(op) => Seq(of("rolling", op, key.isDefined))
      case _ => Nil
    }
  }

  def runsCustom(v: Vertex): Boolean = v.description match {
    case Aggregate(_, Seq(op: PythonAggregateSpec), _) => PythonAggregations.isCustom(op)
    case RollingAggregate(_, op: PythonAggregateSpec) => PythonAggregations.isCustom(op)
    case _ => false
  }
}
