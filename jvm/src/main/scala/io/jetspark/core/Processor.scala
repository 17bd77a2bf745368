package io.jetspark.core

/** Facts about where a processor instance runs. */
final case class ProcessorContext(
    vertexName: String,
    globalProcessorIndex: Int,
    totalParallelism: Int,
    processingGuarantee: ProcessingGuarantee = ProcessingGuarantee.None,
)

sealed trait ProcessingGuarantee extends Serializable
object ProcessingGuarantee {
  case object None extends ProcessingGuarantee
  case object AtLeastOnce extends ProcessingGuarantee
  case object ExactlyOnce extends ProcessingGuarantee
}

/** Jet's processor contract.
  *
  * Call order: `init` once; then any sequence of `process` (only with a non-empty inbox),
  * `tryProcessWatermark`, `tryProcess`, `saveToSnapshot` (only between inbox batches, with the outbox
  * drained), `completeEdge` (once an input is exhausted, until it returns true) and finally `complete`
  * (until it returns true). After a restart: `init`, then `restoreFromSnapshot` with batches of the saved
  * entries, then `finishSnapshotRestore` (until true), then as above.
  *
  * Progress: every call either removes an item from the inbox, emits to the outbox, or returns true
  * (`complete`, `completeEdge`, `tryProcessWatermark`, `saveToSnapshot`, `finishSnapshotRestore`).
  * A call that does none of these is a bug; the harness fails on it. Calls that return `false` are
  * repeated with the same arguments once the outbox has room.
  *
  * Watermarks given to `tryProcessWatermark` are already coalesced over the inputs (see
  * [[eventtime.WatermarkCoalescer]]); barriers and idle messages are handled by the inbound stream and never
  * reach the processor.
  */
trait Processor {
  def init(outbox: Outbox, context: ProcessorContext): Unit

  /** Processes items of input `ordinal`, removing each one it has fully handled. */
  def process(ordinal: Int, inbox: Inbox): Unit

  /** Handles the coalesced watermark; typically emits what it closes, then the watermark itself.
    * Returns false to be called again with the same watermark.
    */
  def tryProcessWatermark(watermark: Watermark): Boolean

  /** Called when there is no input; a place for background emission. */
  def tryProcess(): Boolean = true

  /** Input `ordinal` is exhausted. */
  def completeEdge(ordinal: Int): Boolean = true

  /** Every input is exhausted; emit what remains. Returns true when done. */
  def complete(): Boolean = true

  /** Offers this processor's whole state to `outbox.offerToSnapshot`; returns true when all is offered. */
  def saveToSnapshot(): Boolean = true

  /** Receives a batch of [[snapshot.SnapshotEntry]] items saved by some instance of the same vertex
    * (with a partitioned edge, the entries of the keys that this instance now owns).
    */
  def restoreFromSnapshot(inbox: Inbox): Unit =
    if (!inbox.isEmpty) throw new IllegalStateException(s"${getClass.getSimpleName} keeps no state but was given a snapshot")

  def finishSnapshotRestore(): Boolean = true

  def close(): Unit = ()
}

/** Base class that holds the outbox and the context. */
abstract class AbstractProcessor extends Processor {
  protected var outbox: Outbox = _
  protected var context: ProcessorContext = _

  override def init(outbox: Outbox, context: ProcessorContext): Unit = {
    this.outbox = outbox
    this.context = context
    initState()
  }

  /** Hook for subclasses that need the context before processing. */
  protected def initState(): Unit = ()
}

/** Items to emit that survive refusals (Jet's traverser pattern): `emitTo` offers items until the outbox
  * refuses, keeps the refused one, and offers it first on the next call. `isDone` only when every item,
  * the refused one included, was accepted.
  *
  * {{{
  * private var emission = Emission.Done
  * override def tryProcessWatermark(wm: Watermark): Boolean = {
  *   if (emission.isDone) emission = Emission(closedWindows(wm) :+ wm)
  *   emission.emitTo(outbox)
  * }
  * }}}
  * (Test `isDone` before creating a new emission, and create it only once per logical step.)
  */
final class Emission private (items: Iterator[Any], ordinal: Int, toSnapshot: Boolean) {
  private var refused: Any = null

  def isDone: Boolean = refused == null && !items.hasNext

  /** Offers what is left; true when everything has been accepted. */
  def emitTo(outbox: Outbox): Boolean = {
    if (refused != null) {
      if (!offer(outbox, refused)) return false
      refused = null
    }
    while (items.hasNext) {
      val item = items.next()
      if (!offer(outbox, item)) { refused = item; return false }
    }
    true
  }

  private def offer(outbox: Outbox, item: Any): Boolean =
    if (toSnapshot) { val (k, v) = item.asInstanceOf[(Any, Any)]; outbox.offerToSnapshot(k, v) }
    else outbox.offer(ordinal, item)
}

object Emission {
  val Done: Emission = new Emission(Iterator.empty, -1, false)
  /** Items for output `ordinal` (-1: every output). */
  def apply(items: IterableOnce[Any], ordinal: Int = -1): Emission = new Emission(items.iterator, ordinal, false)
  /** `(key, value)` pairs for the snapshot. */
  def toSnapshot(entries: IterableOnce[(Any, Any)]): Emission = new Emission(entries.iterator, -1, true)
}
