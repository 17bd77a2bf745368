package io.jetspark.item

import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.pipeline.PythonAggregateSpec

/** The operations of an aggregation when every one is defined in Python. */
object PythonOps {
  def unapply(ops: Seq[AggregateOperation[_, _, _]]): Option[Seq[PythonAggregateSpec]] =
    if (ops.forall(_.isInstanceOf[PythonAggregateSpec])) Some(ops.map(_.asInstanceOf[PythonAggregateSpec])) else None
}
