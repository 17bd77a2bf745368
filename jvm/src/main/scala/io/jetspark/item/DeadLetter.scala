package io.jetspark.item

/** A record that a stage the JVM runs failed on, or dropped as late, as Python's `jetspark.errors.DeadLetter`
  * ([[PythonValues.dumps]] writes it as one): the record as it entered the stage (a Python item's
  * [[PickledItem]], or a [[RowItem]]), the stage's name, and the error, `"Type: message"`.
  */
final case class DeadLetter(record: AnyRef, stage: String, error: String)
