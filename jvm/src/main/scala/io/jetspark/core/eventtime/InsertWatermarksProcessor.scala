package io.jetspark.core.eventtime

import io.jetspark.core.{AbstractProcessor, Emission, Inbox, Watermark}
import io.jetspark.core.snapshot.SnapshotEntry

/** An item of a source, tagged with the substream (source partition) it came from. */
final case class SubstreamItem(substream: Int, item: Any)

/** The processor of a source vertex that assigns event time: it takes [[SubstreamItem]]s, emits the bare
  * items and inserts watermarks and [[io.jetspark.core.IdleMessage]] as decided by an [[EventTimeMapper]]
  * (see there for the rules, and for `idleTimersSurviveRestore`). `tryProcess` checks idleness when no
  * item arrives, so the engine must call it while the source is quiet.
  *
  * A source has no upstream watermarks: one given to `tryProcessWatermark` is a planning error.
  *
  * Snapshot: one entry, key [[InsertWatermarksProcessor.StateKey]] of this instance's global index, value
  * the mapper's [[EventTimeMapperState]]. The substream assignment of a source is fixed for the life of
  * a checkpoint, so every instance restores exactly its own entry.
  */
final class InsertWatermarksProcessor[T](
    policy: EventTimePolicy[T],
    substreamCount: Int,
    clock: () => Long = () => System.currentTimeMillis(),
    idleTimersSurviveRestore: Boolean = false,
) extends AbstractProcessor {
  private var mapper: EventTimeMapper[T] = _
  private var emission = Emission.Done
  private var restored = false

  override protected def initState(): Unit = mapper = new EventTimeMapper(policy, substreamCount, clock, idleTimersSurviveRestore)

  override def process(ordinal: Int, inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      if (emission.isDone) inbox.peek() match {
        case SubstreamItem(substream, item) => emission = Emission(mapper.flatMapEvent(substream, item.asInstanceOf[T]))
        case other =>
          throw new IllegalArgumentException(s"${getClass.getSimpleName} expects SubstreamItem, got $other")
      }
      if (!emission.emitTo(outbox)) return
      inbox.remove()
    }

  override def tryProcess(): Boolean = {
    if (emission.isDone) emission = Emission(mapper.flatMapIdle())
    emission.emitTo(outbox)
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean =
    throw new IllegalStateException(
      s"${getClass.getSimpleName} inserts the watermarks of a source and cannot receive one ($watermark): " +
        "timestamps were assigned twice on one stream")

  override def saveToSnapshot(): Boolean =
    outbox.offerToSnapshot(InsertWatermarksProcessor.StateKey(context.globalProcessorIndex), mapper.state)

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) inbox.poll() match {
      case SnapshotEntry(_: InsertWatermarksProcessor.StateKey, saved: EventTimeMapperState) =>
        if (restored) throw new IllegalStateException(s"${getClass.getSimpleName} was given more than one state entry")
        restored = true
        mapper.restore(saved)
      case other => throw new IllegalStateException(s"${getClass.getSimpleName} cannot restore $other")
    }
}

object InsertWatermarksProcessor {
  /** The snapshot key of the instance with global index `processorIndex`. */
  final case class StateKey(processorIndex: Int)
}
