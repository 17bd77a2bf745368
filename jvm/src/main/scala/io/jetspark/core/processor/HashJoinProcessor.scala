package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}

import scala.collection.mutable

/** How one enriching (build) side joins the streamed side: a left item matches the build items whose
  * `rightKeyFn` equals its `leftKeyFn` (compared by value).
  */
final case class JoinClause(leftKeyFn: Any => Any, rightKeyFn: Any => Any)

/** API.md `hash_join` / `inner_hash_join` with one or more enriching sides.
  *
  * Ordinal 0 is the streamed (left) side; ordinal `i >= 1` is build side `i`, joined by `clauses(i - 1)`.
  * Every build side is collected whole into a table (key -> its items in arrival order) and must be
  * complete (`completeEdge`) before the first left item arrives; the planner gives the build edges
  * priority over ordinal 0, and a left item that comes earlier is an error.
  *
  * For each left item the processor looks up its matches on every side and emits
  * `mapper(left, rights)`, `rights(i)` being the match on side `i + 1`, once per combination of matches
  * (several build items with the key give several outputs; the last side varies fastest, Jet's order).
  * A side without a match gives `None` when `outer` (every left item is emitted: API.md `hash_join`),
  * and drops the left item when not (`inner_hash_join`: all sides must match). Watermarks from the left
  * side pass through after the outputs before them.
  *
  * Snapshot: nothing. The tables are not saved because the build sides are batch inputs that the engine
  * delivers again, in full, to every instance that starts (a broadcast variable on Spark; Jet likewise
  * re-reads the batch source instead of saving the table): saving them would copy the whole build side
  * into every snapshot of every instance. The left side is stateless.
  */
final class HashJoinProcessor(clauses: Seq[JoinClause], mapper: (Any, Seq[Option[Any]]) => Any, outer: Boolean)
    extends AbstractProcessor {
  require(clauses.nonEmpty, "a hash join needs at least one enriching side")

  private val tables = Vector.fill(clauses.size)(mutable.HashMap.empty[Any, mutable.ArrayBuffer[Any]])
  private val buildComplete = Array.fill(clauses.size)(false)
  private val leftKeyFns = clauses.map(_.leftKeyFn).toVector
  private val emitter = new ItemByItemEmitter

  override def process(ordinal: Int, inbox: Inbox): Unit =
    if (ordinal == 0) {
      val incomplete = buildComplete.indices.filterNot(buildComplete).map(_ + 1)
      if (incomplete.nonEmpty)
        throw new IllegalStateException(
          s"${context.vertexName}: streamed items arrived before enriching side(s) ${incomplete.mkString(", ")} were complete; " +
            "the build edges must have priority over ordinal 0")
      emitter.drain(inbox, outbox)(joined)
    } else {
      val side = ordinal - 1
      val keyFn = clauses(side).rightKeyFn
      while (!inbox.isEmpty) {
        val item = inbox.poll()
        tables(side).getOrElseUpdate(keyFn(item), mutable.ArrayBuffer.empty) += item
      }
    }

  /** The outputs for one left item, produced lazily combination by combination. */
  private def joined(left: Any): Iterator[Any] = {
    val matchesPerSide = tables.indices.map { side =>
      tables(side).get(leftKeyFns(side)(left)) match {
        case Some(rights) => rights.view.map(Some(_))
        case None => if (outer) Seq(None) else Seq.empty
      }
    }
    val combinations = matchesPerSide.foldLeft(Iterator.single(Vector.empty[Option[Any]])) { (prefixes, matches) =>
      prefixes.flatMap(prefix => matches.iterator.map(prefix :+ _))
    }
    combinations.map(rights => mapper(left, rights))
  }

  override def completeEdge(ordinal: Int): Boolean = {
    if (ordinal > 0) buildComplete(ordinal - 1) = true
    true
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)
}
