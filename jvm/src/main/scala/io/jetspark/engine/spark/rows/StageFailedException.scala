package io.jetspark.engine.spark.rows

import org.apache.spark.TaskKilledException

import scala.util.control.NonFatal

/** A stage failed for a reason other than a user function failing on a record (that is Python's
  * `StepFailedError`): a source that cannot be read, a sink that cannot be written, a sink's function
  * that raised, a processor that failed (values it cannot compare). The message starts with the stage's
  * name, as job errors do (python/jetspark/_failures.py).
  */
final class StageFailedException(val stage: String, reason: String, cause: Throwable = null)
    extends RuntimeException(s"stage '$stage' failed: $reason", cause)

object StageFailedException {

  /** `rows`, whose reading failures name `stage`; a cancelled task stays cancelled. */
  def namingReadErrors[T](stage: String, what: String, rows: Iterator[T]): Iterator[T] = new Iterator[T] {
    private def named[A](body: => A): A =
      try body
      catch {
        case e: TaskKilledException => throw e
        case e: InterruptedException => throw e
        case NonFatal(e) => throw new StageFailedException(stage, s"$what: ${firstLine(e)}", e)
      }
    override def hasNext: Boolean = named(rows.hasNext)
    override def next(): T = named(rows.next())
  }

  /** What `run` makes of `input`, where a failure of `run`'s own (not one that came up through `input`,
    * which names its own stage or none) names `stage` and keeps the cause's type and message.
    */
  def namingOwnErrors[A, B](stage: String, input: Iterator[A])(run: Iterator[A] => Iterator[B]): Iterator[B] = {
    var inputFailed = false
    def watched[T](body: => T): T =
      try body
      catch { case NonFatal(e) => inputFailed = true; throw e }
    val output = run(new Iterator[A] {
      override def hasNext: Boolean = watched(input.hasNext)
      override def next(): A = watched(input.next())
    })
    def named[T](body: => T): T =
      try body
      catch {
        case e: TaskKilledException => throw e
        case NonFatal(e) if inputFailed || namesAStage(e) => throw e
        case NonFatal(e) => throw new StageFailedException(stage, described(e), e)
      }
    new Iterator[B] {
      override def hasNext: Boolean = named(output.hasNext)
      override def next(): B = named(output.next())
    }
  }

  /** `e`'s type and the first line of its message. */
  def described(e: Throwable): String =
    Option(e.getMessage).flatMap(_.linesIterator.nextOption()).fold(e.getClass.getSimpleName)(m => s"${e.getClass.getSimpleName}: $m")

  /** Whether `e` (or a cause) is a failure that names its stage: this one, or Python's `StepFailedError`
    * of a record that failed in a Spark task.
    */
  def namesAStage(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20).exists { t =>
      t.isInstanceOf[StageFailedException] || Option(t.getMessage).exists(_.contains("StepFailedError: stage '"))
    }

  /** An error's message without what Python tracebacks and Spark plans add after the first line. */
  def firstLine(e: Throwable): String = Option(e.getMessage).map(_.linesIterator.next()).getOrElse(e.getClass.getName)
}
