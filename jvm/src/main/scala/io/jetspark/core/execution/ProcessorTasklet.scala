package io.jetspark.core.execution

import io.jetspark.core._
import io.jetspark.core.snapshot.SnapshotEntry

import scala.collection.mutable

/** Drives one processor over finite inputs on the calling thread and yields what it emits, lazily: the
  * processor runs only as far as the consumer pulls (a Spark task's output iterator, a local engine's
  * queue). Jet's tasklet, without threads: the engines supply the concurrency.
  *
  * Inputs are consumed in priority groups: every input of the first group is drained (round-robin
  * between the inputs of a group, `batchSize` items at a time) and completed before the next group
  * starts — a hash join's build side before its streamed side. [[Watermark]]s in an input are given to
  * `tryProcessWatermark` in place (a single input's watermarks are already coalesced; inputs that need
  * coalescing come through the engine's inbound stream first).
  *
  * The outbox holds at most `outboxCapacity` items per bucket; the processor is only called when the
  * consumer has taken what it emitted, so memory stays bounded however much a call emits.
  *
  * An epoch of a stream (the Spark epoch engine) is one run of a tasklet: the processor first restores
  * the `restored` entries of the epoch before; where its inputs end, `atEnd` (asked then: whether the
  * epoch was the last one is known only once its input is read) says whether it completes or saves its
  * state for the next epoch; [[snapshot]] holds the saved entries once the tasklet has nothing more to emit.
  */
final class ProcessorTasklet(
    processor: Processor,
    context: ProcessorContext,
    inputs: IndexedSeq[Iterator[Any]],
    priorityGroups: Seq[Seq[Int]],
    batchSize: Int = 1024,
    outboxCapacity: Int = 1024,
    restored: Seq[SnapshotEntry] = Nil,
    atEnd: () => ProcessorTasklet.AtEnd = () => ProcessorTasklet.Complete,
) extends Iterator[Any] {
  require(priorityGroups.flatten.sorted == inputs.indices.toList,
    s"priority groups $priorityGroups must name each of the ${inputs.size} inputs once")

  private val outbox = new BufferedOutbox(1, outboxCapacity)
  private val inbox = new ArrayDequeInbox
  private val ready = mutable.Queue.empty[Any]
  private var groups = priorityGroups.toList.map(_.toList)
  private var activeInputs: List[Int] = Nil
  private var pendingWatermark: Watermark = null
  private var inboxOrdinal = -1
  private var completingEdge = -1
  private var completing = false
  private var finished = false
  private val saved = mutable.ArrayBuffer.empty[SnapshotEntry]
  private var ending: ProcessorTasklet.AtEnd = ProcessorTasklet.Complete
  private var quietDone = false

  processor.init(outbox, context)
  if (restored.nonEmpty) {
    restored.foreach(inbox.add)
    processor.restoreFromSnapshot(inbox)
    if (!inbox.isEmpty) throw new IllegalStateException(s"${context.vertexName}: the processor left snapshot entries unrestored")
  }
  while (!processor.finishSnapshotRestore()) ready ++= outbox.drainBucket(0)

  /** The state the processor saved at the end of the epoch (after the last item was taken). */
  def snapshot: Seq[SnapshotEntry] = {
    if (!finished) throw new IllegalStateException(s"${context.vertexName}: the snapshot is taken when the epoch's output is")
    saved.toSeq
  }

  override def hasNext: Boolean = {
    while (ready.isEmpty && !finished) step()
    ready.nonEmpty
  }

  override def next(): Any = {
    if (!hasNext) throw new NoSuchElementException("the processor emitted nothing more")
    ready.dequeue()
  }

  /** One call into the processor, then whatever it emitted becomes ready. */
  private def step(): Unit = {
    if (!inbox.isEmpty) processor.process(inboxOrdinal, inbox)
    else if (pendingWatermark != null) { if (processor.tryProcessWatermark(pendingWatermark)) pendingWatermark = null }
    else if (completingEdge >= 0) { if (processor.completeEdge(completingEdge)) completingEdge = -1 }
    else if (completing) ending match {
      case ProcessorTasklet.Complete => if (processor.complete()) { finished = true; processor.close() }
      case ProcessorTasklet.SaveSnapshot =>
        // The stream goes on: first what the processor emits when no input waits (early results).
        if (!quietDone) { quietDone = processor.tryProcess(); ready ++= outbox.drainBucket(0); return }
        val done = processor.saveToSnapshot()
        saved ++= outbox.drainSnapshot().map { case (k, v) => SnapshotEntry(k, v) }
        if (done) { finished = true; processor.close() }
    }
    else fillInbox()
    ready ++= outbox.drainBucket(0)
  }

  /** Takes the next batch from the active inputs (round-robin), or completes exhausted inputs and moves
    * on to the next priority group, or starts completing when there is nothing left.
    */
  private def fillInbox(): Unit = {
    if (activeInputs.isEmpty) {
      groups match {
        case group :: rest => activeInputs = group; groups = rest
        case Nil => completing = true; ending = atEnd()
      }
      return
    }
    val ordinal = activeInputs.head
    val input = inputs(ordinal)
    var taken = 0
    while (taken < batchSize && pendingWatermark == null && input.hasNext) {
      input.next() match {
        case wm: Watermark => pendingWatermark = wm
        case _: ControlItem => () // barriers and idle messages are the inbound stream's business
        case item => inbox.add(item); taken += 1
      }
    }
    inboxOrdinal = ordinal
    if (!input.hasNext && pendingWatermark == null && inbox.isEmpty) {
      completingEdge = ordinal
      activeInputs = activeInputs.tail
    } else activeInputs = activeInputs.tail :+ ordinal
  }
}

object ProcessorTasklet {
  /** What the processor does when its inputs end. */
  sealed trait AtEnd
  /** The inputs are exhausted for good: `complete()`. */
  case object Complete extends AtEnd
  /** An epoch ended, and more will come: `tryProcess()` (as when no input waits), then `saveToSnapshot()`. */
  case object SaveSnapshot extends AtEnd

  /** A processor with one input. */
  def apply(processor: Processor, context: ProcessorContext, input: Iterator[Any]): ProcessorTasklet =
    new ProcessorTasklet(processor, context, IndexedSeq(input), Seq(Seq(0)))
}
