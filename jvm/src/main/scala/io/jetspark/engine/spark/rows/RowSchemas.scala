package io.jetspark.engine.spark.rows

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.types.{ArrayType, BinaryType, IntegerType, LongType, StructField, StructType}

/** The columns and schemas of the rows that cross between the Spark engine's stages. A leaf: it names
  * columns, and reads nothing else of the engine, so every runner can share it.
  */
object RowSchemas {
  val Item = "item"
  val Failure = "failure"
  val Key = "key"
  val ItemSchema: StructType = StructType(Seq(StructField(Item, BinaryType, nullable = false)))
  /** What an extraction UDF gives per item: the key's pickle, the values' pickles, the item's pickle. */
  val ExtractedSchema: StructType = StructType(Seq(StructField(Key, BinaryType), StructField("values", ArrayType(BinaryType)),
    StructField(Item, BinaryType)))
  /** A partial accumulator on its way to the combining stage. */
  val PartialSchema: StructType = StructType(Seq(StructField(Key, BinaryType), StructField("acc", BinaryType)))
  /** A sorted run's row: its run, its position in the run, then the extraction (key, values, item). */
  val RunSchema: StructType = StructType(Seq(StructField("run", IntegerType), StructField("position", LongType)) ++
    ExtractedSchema.fields)

  /** The time an item carries beside it, in ms ([[CarriedTimestamps]]). */
  val Ts = "ts"
  /** An extraction at a window's input: key, values, item, then the item's timestamp in ms. */
  val TimedSchema: StructType = StructType(ExtractedSchema.fields :+ StructField(Ts, LongType, nullable = false))
  /** One key's partial frames on their way from stage 1 to stage 2: the key (empty for a global window),
    * the frames' ends, and their accumulators as one array serialized by [[PartialCodec]] (once per key and
    * partition, not per frame).
    */
  val FramesSchema: StructType = StructType(Seq(StructField(Key, BinaryType),
    StructField("frame_ends", ArrayType(LongType, containsNull = false)), StructField("accs", BinaryType)))

  /** The four columns of an item's sequence id under preserve_order ([[runner.SequenceRestore]]). */
  val Substream = "seq_substream"
  val Offset = "seq_offset"
  val FanOut = "seq_fan_out"
  val Ties = "seq_ties"
  val SequenceColumns: Seq[String] = Seq(Substream, Offset, FanOut, Ties)

  /** What the rows of `df` carry beside their items, in the order every vertex keeps them in: the items'
    * time ([[CarriedTimestamps]]), then their sequence ids ([[runner.SequenceRestore]]).
    */
  def carriedColumns(df: DataFrame): Seq[String] = (Ts +: SequenceColumns).filter(df.columns.contains)
}
