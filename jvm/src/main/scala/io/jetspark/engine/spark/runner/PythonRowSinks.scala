package io.jetspark.engine.spark.runner

import org.apache.spark.sql.DataFrame

import java.util.concurrent.ConcurrentHashMap

/** The Python side of the sinks that need the items as rows of a schema (`files`, `foreachBatch`, `kafka`),
  * implemented by python/jetspark/_row_sinks.py and called back through py4j on the driver.
  */
trait PythonRowSinks {

  /** `items` (opaque: one binary column `item` of pickles) as a DataFrame of columns `item`, `failure`,
    * `row`: `row` holds an item's row where it fits `schema` (DDL or Spark's JSON; null: inferred from
    * the items as `spark.createDataFrame` infers it); a record that does not fit fails the job naming
    * `stage`, or, with `deadLetter`, comes out as a pickled dead letter in `item` with `failure` = `stage`.
    */
  def rows(stage: String, schema: String, deadLetter: Boolean, items: DataFrame): DataFrame

  /** `items` as [[rows]] gives them for a Kafka sink: each row a record's `key` and `value` (binary), made
    * of the item by the Python functions numbered `keyRef` (-1: no key) and `valueRef` (-1: the item itself,
    * as bytes, UTF-8 text or JSON).
    */
  def kafkaRecords(stage: String, keyRef: Int, valueRef: Int, deadLetter: Boolean, items: DataFrame): DataFrame

  /** Calls the sink's Python function number `fnRef` with `rows` and `batchId`. */
  def foreachBatch(stage: String, fnRef: Int, rows: DataFrame, batchId: Long): Unit
}

/** Where a job's [[PythonRowSinks]] waits for the engine: Python registers it under the job's id before
  * the job runs and removes it afterwards.
  */
object PythonRowSinks {
  private val byJob = new ConcurrentHashMap[String, PythonRowSinks]()
  def register(jobId: String, sinks: PythonRowSinks): Unit = byJob.put(jobId, sinks)
  def unregister(jobId: String): Unit = byJob.remove(jobId)
  private[spark] def of(jobId: String): Option[PythonRowSinks] = Option(byJob.get(jobId))
}
