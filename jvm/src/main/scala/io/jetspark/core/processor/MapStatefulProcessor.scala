package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}
import io.jetspark.core.snapshot.{BroadcastKey, SnapshotEntry}

import scala.collection.mutable

/** API.md `map_stateful`: for each item, `fn(state, key, item)` returns the new state and an optional
  * output (None emits nothing). The state of a key is created with `createFn` when its first item
  * arrives. Items of one key are handled in encounter order; watermarks pass through unchanged, after
  * the outputs of the items before them (this processor holds no watermark of its own). Jet's
  * time-to-live and eviction callback are not part of our API and are left out.
  *
  * Build it with [[MapStatefulProcessor.keyed]] (a keyed stage, behind an edge partitioned by the same
  * key) or [[MapStatefulProcessor.global]] (one state for the whole stream; the vertex runs as a
  * single instance).
  *
  * Snapshot: keyed, one entry per key, `key -> KeyState(state)`, so that a restore may hand a key to any
  * instance; global, one entry `GlobalStateKey -> KeyState(state)`. A global state is broadcast to every
  * instance on restore and there must be exactly one: several would mean it was saved by several
  * instances, whose states cannot be merged into one.
  */
final class MapStatefulProcessor private (
    keyFn: Option[Any => Any],
    createFn: () => Any,
    fn: (Any, Any, Any) => (Any, Option[Any]),
) extends AbstractProcessor {
  import MapStatefulProcessor._

  private val states = mutable.HashMap.empty[Any, Any]
  private val emitter = new ItemByItemEmitter
  private val saver = new SnapshotSaver
  private var globalStatesRestored = 0

  override def process(ordinal: Int, inbox: Inbox): Unit = emitter.drain(inbox, outbox)(applyFn)

  private def applyFn(item: Any): Option[Any] = {
    val key = keyFn.fold[Any](GlobalStateKey)(_(item))
    val state = states.getOrElseUpdate(key, createFn())
    val (newState, output) = fn(state, key, item)
    states.update(key, newState)
    output
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)

  override def saveToSnapshot(): Boolean =
    saver.save(outbox)(states.iterator.map { case (key, state) => (key, KeyState(state)) })

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty) {
      val SnapshotEntry(key, KeyState(state)) = inbox.poll(): @unchecked
      if (keyFn.isEmpty) {
        globalStatesRestored += 1
        if (globalStatesRestored > 1)
          throw new IllegalStateException(
            s"${context.vertexName}: the snapshot holds $globalStatesRestored or more global map_stateful states; " +
              "a global map_stateful runs as one instance with one state, and several states cannot be merged")
      }
      states.update(key, state)
    }

  /** Number of keys with a state (for tests and metrics). */
  def keyCount: Int = states.size
}

object MapStatefulProcessor {
  /** The snapshot value of one key's state. */
  final case class KeyState(state: Any)

  /** The snapshot key of the global state. */
  val GlobalStateKey: BroadcastKey = BroadcastKey("map-stateful/global-state")

  /** Keyed stage `map_stateful(create_fn, fn)` with `fn(state, key, item) -> (new_state, output)`. */
  def keyed(keyFn: Any => Any, createFn: () => Any, fn: (Any, Any, Any) => (Any, Option[Any])): MapStatefulProcessor =
    new MapStatefulProcessor(Some(keyFn), createFn, fn)

  /** Stage `map_stateful(create_fn, fn)` with `fn(state, item) -> (new_state, output)`: one state. */
  def global(createFn: () => Any, fn: (Any, Any) => (Any, Option[Any])): MapStatefulProcessor =
    new MapStatefulProcessor(None, createFn, (state, _, item) => fn(state, item))
}
