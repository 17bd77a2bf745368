package io.jetspark.engine.spark.rows

import io.jetspark.item.{Extracted, PickledItem, PickledKey, PythonValues}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.BinaryType

/** Rows of an extraction ([[RowSchemas.ExtractedSchema]]) as the items the core's processors take. */
object ExtractedRows {
  /** A row of an extraction (key, values, item) as the item a processor takes. */
  val extracted: InternalRow => Extracted = extractedAt(0)

  def extractedAt(at: Int): InternalRow => Extracted = { row =>
    val raw = row.getArray(at + 1).toObjectArray(BinaryType).map(_.asInstanceOf[Array[Byte]])
    new Extracted(new PickledKey(row.getBinary(at)), new PickledItem(row.getBinary(at + 2)), raw.map(PythonValues.loads), raw,
      EncounterPositions.next())
  }
}
