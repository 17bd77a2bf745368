package io.jetspark.engine.spark.window

/** The one way a window vertex runs, for both its stages, as [[WindowPlanner]] decides it. */
sealed trait WindowPath {
  /** The typed reading of a DataFrame source's rows that the window's first stage takes, if any. */
  def rows: Option[TypedWindow] = None
}

object WindowPath {
  /** The core's window processors on Python items: Python extracts each item's key, values and time on
    * the way in ([[PythonWork.pythonExtractions]]).
    */
  case object CoreOnItems extends WindowPath

  /** The core's window processors on the rows of a DataFrame source, read in the JVM ([[TypedWindow]]). */
  final case class CoreOnRows(typed: TypedWindow) extends WindowPath {
    override def rows: Option[TypedWindow] = Some(typed)
  }

  /** The frames as columns of numbers and rows ([[ColumnarFrames]]), over a DataFrame source's rows read
    * in the JVM (`typed`).
    */
  final case class Columnar(typed: TypedWindow, frames: ColumnarFrames) extends WindowPath {
    override def rows: Option[TypedWindow] = Some(typed)
  }

  /** The operation has a user-defined part: Python runs it, window and all ([[runner.CustomAggregations]]). */
  case object UserDefined extends WindowPath
}
