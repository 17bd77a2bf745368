package io.jetspark.engine.spark

import io.jetspark.engine.spark.rows.{InPlaceRows, RowCounting}
import io.jetspark.plan.{PhysicalDag, Vertex}
import org.apache.spark.sql.jetspark.SqlBridge
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.storage.StorageLevel
import org.apache.spark.util.LongAccumulator

import scala.collection.mutable

/** The typed side of a running batch job: the outputs of typed vertices (counted into `counter(vertex)`)
  * and their conversion to opaque items, made once per vertex, with the UDFs Python built.
  */
final class TypedOutputs(plan: TypedPlan, dag: PhysicalDag, pythonUdfs: Map[PythonUdfName, Column], counter: String => LongAccumulator) {
  private val asItems = mutable.Map.empty[String, DataFrame]

  /** The output of `v` when it is typed, or a sink that takes typed rows (`input` gives its single
    * input); None for any other vertex.
    */
  def output(v: Vertex, input: () => DataFrame): Option[DataFrame] = {
    def counted(rows: DataFrame) =
      if (plan.countedByCatalyst(v.name) || plan.countedByWindow(v.name)) rows
      else RowCounting.counted(rows, counter(v.name))
    plan.rowSources.get(v.name).map(df => counted(SourcePartitioning.sourceRows(dag, v, df)))
      .orElse(if (plan.writesTyped(v.name)) Some(counted(input())) else None)
      .orElse(plan.delegations.get(v.name).map { d =>
        // The group sizes add up to the rows the aggregation read: the items out of the pass-through
        // vertex, and of the source when the aggregation is all that reads it (no count per row); the
        // groups are its results, and the items of a noop sink that is all that reads them.
        val passedOn = d.accumulate.toSeq ++ Some(d.rows).filter(plan.countedByCatalyst)
        val results = v.name +: dag.edgesFrom(v.name).map(_.to).filter(plan.countedByCatalyst)
        d.aggregation.run(input(), RowCounting.groups(passedOn.map(counter), results.map(counter)))
      })
      .orElse(plan.rowDelegations.get(v.name).map { d =>
        val read = d.passThrough.toSeq ++ Some(d.rows).filter(plan.countedByCatalyst)
        counted(d.run(input(), read.map(counter)))
      })
      .orElse(if (plan.runsInCatalyst(v.name)) Some(input()) else None)
      .orElse(if (plan.typedStamps(v.name)) Some(counted(input())) else None)
  }

  /** `output` of `vertex` as opaque items (one binary column `item`): converted by Python where typed. */
  def items(vertex: String, output: DataFrame): DataFrame =
    if (!plan.isTyped(vertex)) output
    else asItems.getOrElseUpdate(vertex, {
      val mapped = SqlBridge.mapInArrow(output, pythonUdfs(plan.itemsUdf(vertex)))
      // Like every opaque output, over an RDD made once: the engine's next steps (partition counts,
      // processors) must not plan and run the typed query again.
      val converted = SqlBridge.internalCreateDataFrame(mapped.sparkSession, InPlaceRows.of(mapped), mapped.schema)
      // Read by several edges: converted once.
      if (plan.opaqueReaders(vertex) > 1) converted.persist(StorageLevel.MEMORY_AND_DISK) else converted
    })

  def unpersist(): Unit = asItems.values.foreach(_.unpersist())
}
