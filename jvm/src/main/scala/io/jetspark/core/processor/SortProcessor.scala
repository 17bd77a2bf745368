package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, Watermark}
import io.jetspark.core.snapshot.SnapshotEntry

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/** The order a sort establishes: items compare by `keyFn(item)` (the item itself when None) under
  * `ordering`, reversed when `reverse`. Reversing keeps ties in encounter order (as Python's
  * `sorted(..., reverse=True)` does): it reverses the comparison, not the result.
  */
final case class SortDefinition(keyFn: Option[Any => Any], ordering: Ordering[Any], reverse: Boolean) {
  val keyOrdering: Ordering[Any] = if (reverse) ordering.reverse else ordering
  def keyOf(item: Any): Any = keyFn.fold(item)(_(item))
}

/** Batch `sort(key, reverse)`: collects every item and, on `complete`, emits them sorted. The sort is
  * stable: items with equal keys keep their encounter order. Sorting happens before any output, so
  * nothing is emitted before `complete`; a watermark received meanwhile is held and the last one is
  * emitted after the sorted items (forwarding it earlier would make every sorted item late).
  *
  * Snapshot: the collected items in encounter order and the held watermark, in one [[SortState]] bound
  * to this instance (see [[InstanceState]]; a parallel sort is followed by a [[SortedMergeProcessor]] and
  * each instance's items must stay with it).
  */
final class SortProcessor(sort: SortDefinition) extends AbstractProcessor {
  import SortProcessor._

  private val collected = mutable.ArrayBuffer.empty[Any]
  private var heldWatermark: Option[Watermark] = None
  private var output: Emission = null
  private val saver = new SnapshotSaver

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) collected += inbox.poll()

  override def tryProcessWatermark(watermark: Watermark): Boolean = { heldWatermark = Some(watermark); true }

  override def complete(): Boolean = {
    if (output == null) {
      // Keys are computed once; `sortBy` on a Seq is stable.
      val sorted = collected.map(item => (sort.keyOf(item), item)).sortBy(_._1)(sort.keyOrdering).map(_._2)
      collected.clear()
      output = Emission(sorted.iterator ++ heldWatermark)
    }
    output.emitTo(outbox)
  }

  override def saveToSnapshot(): Boolean =
    saver.save(outbox)(Iterator(InstanceState.key(StateName, context) -> SortState(collected.toVector, heldWatermark)))

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      InstanceState.ownValue[SortState](StateName, context, inbox.poll().asInstanceOf[SnapshotEntry]).foreach {
        case SortState(items, watermark) => collected ++= items; heldWatermark = watermark
      }
    }
}

object SortProcessor {
  private val StateName = "sort"
  /** A sort instance's snapshot: items collected so far, in encounter order, and the held watermark. */
  final case class SortState(items: Vector[Any], heldWatermark: Option[Watermark])
}

/** The all-to-one ordered merge after per-partition sorts: input ordinals `0 until inputCount` each
  * deliver items already sorted by `sort`; the output is their merge. Ties between inputs go to the
  * lower input ordinal, so the result is deterministic (within one input, ties keep that input's
  * order).
  *
  * An item is emitted once it is the least head among the inputs and no open input is empty (an empty
  * open input might still deliver a smaller item); `completeEdge` closes an input. The inputs' heads
  * sit in a heap, so an item costs O(log inputCount). The merge buffers what arrives on one input while it waits for
  * another, up to a whole input when inputs arrive one after the other. Watermarks are held and the
  * last one is emitted after the last item, as in [[SortProcessor]].
  *
  * Snapshot: the buffered items of each input, which inputs are complete and the held watermark, in one
  * [[SortedMergeProcessor.MergeState]] bound to this instance.
  */
final class SortedMergeProcessor(inputCount: Int, sort: SortDefinition) extends AbstractProcessor {
  import SortedMergeProcessor._
  require(inputCount >= 1, "a merge needs at least one input")

  /** Per input: (sort key, item) in arrival order. */
  private val buffers = Array.fill(inputCount)(new java.util.ArrayDeque[(Any, Any)]())
  private val completed = Array.fill(inputCount)(false)
  /** The inputs that have buffered items, least head first (ties: lower ordinal). */
  private val heads = new java.util.PriorityQueue[Integer](inputCount, (a: Integer, b: Integer) => {
    val byKey = sort.keyOrdering.compare(buffers(a).peekFirst()._1, buffers(b).peekFirst()._1)
    if (byKey != 0) byKey else Integer.compare(a, b)
  })
  /** Open inputs with nothing buffered: while there is one, the least head is not known yet. */
  private var emptyOpenInputs = inputCount
  private var heldWatermark: Option[Watermark] = None
  private var watermarkEmitted = false
  private val saver = new SnapshotSaver

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    while (!inbox.isEmpty) buffer(ordinal, inbox.poll())
    emitReady()
    ()
  }

  private def buffer(ordinal: Int, item: Any): Unit = {
    val wasEmpty = buffers(ordinal).isEmpty
    buffers(ordinal).addLast((sort.keyOf(item), item))
    if (wasEmpty) {
      heads.add(ordinal)
      if (!completed(ordinal)) emptyOpenInputs -= 1
    }
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = { heldWatermark = Some(watermark); true }

  override def completeEdge(ordinal: Int): Boolean = { close(ordinal); emitReady() }

  private def close(ordinal: Int): Unit = {
    if (!completed(ordinal) && buffers(ordinal).isEmpty) emptyOpenInputs -= 1
    completed(ordinal) = true
  }

  override def complete(): Boolean = {
    (0 until inputCount).foreach(close)
    emitReady() && (watermarkEmitted || heldWatermark.forall(wm => { watermarkEmitted = outbox.offer(wm); watermarkEmitted }))
  }

  /** Emits items while the least head is known; false when the outbox refused. */
  private def emitReady(): Boolean = {
    while (emptyOpenInputs == 0 && !heads.isEmpty) {
      val least: Int = heads.peek()
      if (!outbox.offer(buffers(least).peekFirst()._2)) return false
      heads.poll()
      buffers(least).removeFirst()
      if (!buffers(least).isEmpty) heads.add(least)
      else if (!completed(least)) emptyOpenInputs += 1
    }
    true
  }

  override def saveToSnapshot(): Boolean = saver.save(outbox) {
    val items = buffers.toVector.map(buffer => Vector.from(buffer.iterator().asScala.map(_._2)))
    Iterator(InstanceState.key(StateName, context) -> MergeState(items, completed.toVector, heldWatermark))
  }

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      InstanceState.ownValue[MergeState](StateName, context, inbox.poll().asInstanceOf[SnapshotEntry]).foreach {
        case MergeState(items, done, watermark) =>
          require(items.size == inputCount, s"snapshot of a merge of ${items.size} inputs restored into a merge of $inputCount")
          done.zipWithIndex.foreach { case (d, i) => if (d) close(i) }
          items.zipWithIndex.foreach { case (inputItems, i) => inputItems.foreach(buffer(i, _)) }
          heldWatermark = watermark
      }
    }
}

object SortedMergeProcessor {
  private val StateName = "sorted-merge"
  /** A merge instance's snapshot: per input its buffered items in order, whether it is complete, and
    * the held watermark.
    */
  final case class MergeState(items: Vector[Vector[Any]], completed: Vector[Boolean], heldWatermark: Option[Watermark])
}
