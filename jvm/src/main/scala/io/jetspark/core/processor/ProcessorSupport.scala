package io.jetspark.core.processor

import io.jetspark.core.{Emission, Inbox, Outbox, ProcessorContext}
import io.jetspark.core.snapshot.{BroadcastKey, SnapshotEntry}

import scala.reflect.ClassTag

/** Takes items from an inbox one at a time and emits, for each, what `outputsOf` returns. `outputsOf` runs
  * exactly once per item even when the outbox refuses (state updates and side effects happen once), and
  * the item leaves the inbox only after all its outputs were accepted, so a snapshot never falls between
  * an item's state update and its output.
  */
private[processor] final class ItemByItemEmitter {
  private var emission = Emission.Done

  def drain(inbox: Inbox, outbox: Outbox)(outputsOf: Any => IterableOnce[Any]): Unit =
    while (!inbox.isEmpty) {
      if (emission.isDone) emission = Emission(outputsOf(inbox.peek()))
      if (!emission.emitTo(outbox)) return
      inbox.remove()
    }
}

/** Offers snapshot entries across repeated `saveToSnapshot` calls: the entries are taken once, when a
  * save starts, and offered until all are accepted.
  */
private[processor] final class SnapshotSaver {
  private var saving: Emission = null

  def save(outbox: Outbox)(entries: => IterableOnce[(Any, Any)]): Boolean = {
    if (saving == null) saving = Emission.toSnapshot(entries)
    val done = saving.emitTo(outbox)
    if (done) saving = null
    done
  }
}

/** State bound to one processor instance rather than to keys: it is saved under a [[BroadcastKey]] that
  * names the instance, every instance receives every such entry on restore and keeps its own. This fits
  * vertices whose partitions are fixed for the life of a checkpoint (isolated edges, all-to-one merges).
  * An entry saved by an instance that no longer exists (the parallelism shrank) cannot be placed, and
  * restoring fails rather than losing it.
  */
private[processor] object InstanceState {
  def key(name: String, context: ProcessorContext): BroadcastKey = BroadcastKey(s"$name/${context.globalProcessorIndex}")

  /** The value of `entry` when it is this instance's state; None for another instance's entry. */
  def ownValue[S](name: String, context: ProcessorContext, entry: SnapshotEntry)(implicit stateType: ClassTag[S]): Option[S] =
    Option.when(savedByThisInstance(name, context, entry.key))(entry.value match {
      case state: S => state
      case other => throw new IllegalStateException(s"${context.vertexName}: $name state expected, snapshot holds $other")
    })

  private def savedByThisInstance(name: String, context: ProcessorContext, key: Any): Boolean = key match {
    case BroadcastKey(n) if n.startsWith(name + "/") =>
      val savedBy = n.substring(name.length + 1).toInt
      if (savedBy >= context.totalParallelism)
        throw new IllegalStateException(
          s"${context.vertexName}: snapshot holds the state of instance $savedBy, but the vertex now has " +
            s"${context.totalParallelism} instances; $name state is bound to its instance and cannot move")
      savedBy == context.globalProcessorIndex
    case other => throw new IllegalStateException(s"${context.vertexName}: unexpected snapshot key $other for $name")
  }
}
