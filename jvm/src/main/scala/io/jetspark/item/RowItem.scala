package io.jetspark.item

/** A DataFrame's row as an item the JVM read itself (a `max_by` result of a window that the Spark
  * engine reads as typed rows): its field names and its values as Python holds them; it reaches Python as
  * a PySpark `Row`.
  */
final class RowItem(val fields: Array[String], val values: Array[AnyRef]) extends Serializable {
  override def equals(other: Any): Boolean = other match {
    case r: RowItem => java.util.Arrays.equals(fields.asInstanceOf[Array[AnyRef]], r.fields.asInstanceOf[Array[AnyRef]]) &&
      java.util.Arrays.equals(values, r.values)
    case _ => false
  }
  override def hashCode: Int = java.util.Arrays.hashCode(values)
  override def toString: String = fields.zip(values).map { case (f, v) => s"$f=$v" }.mkString("RowItem(", ", ", ")")
}
