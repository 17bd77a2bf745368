package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, Inbox, Watermark}

/** The fused stateless chain (map, filter, flat_map and peek steps that the planner joined into one
  * vertex). For each input item it emits `fn(item)`'s results in order; watermarks pass through
  * unchanged, after every output of the items before them. It keeps no state, so a snapshot holds
  * nothing (and `saveToSnapshot` is only called between inbox batches, when no item is half emitted).
  *
  * `fn` runs once per item, also when the outbox refuses part of its output. When `fn` is a
  * [[FusedSteps]] chain without a flat_map, each item takes a path that builds no collection: the step
  * chain returns the one output (or "dropped") and it is offered directly.
  */
final class TransformProcessor(fn: Any => IterableOnce[Any]) extends AbstractProcessor {
  private val oneToOne: Any => Any = fn match {
    case fused: FusedSteps => fused.oneToOne.orNull
    case _ => null
  }
  private val emitter = new ItemByItemEmitter
  /** The head item's result in the one-to-one path while the outbox refuses it. */
  private var pending: Any = TransformProcessor.NotComputed

  override def process(ordinal: Int, inbox: Inbox): Unit =
    if (oneToOne == null) emitter.drain(inbox, outbox)(fn)
    else
      while (!inbox.isEmpty) {
        if (isMarker(pending, TransformProcessor.NotComputed)) pending = oneToOne(inbox.peek())
        if (!isMarker(pending, FusedSteps.Dropped) && !outbox.offer(pending)) return
        pending = TransformProcessor.NotComputed
        inbox.remove()
      }

  override def tryProcessWatermark(watermark: Watermark): Boolean = outbox.offer(watermark)

  private def isMarker(value: Any, marker: AnyRef): Boolean = value.asInstanceOf[AnyRef] eq marker
}

object TransformProcessor {
  private case object NotComputed
}

/** One stateless step of a transform chain; see [[Step.fuse]]. */
sealed trait Step

object Step {
  final case class Map(fn: Any => Any) extends Step
  final case class Filter(predicate: Any => Boolean) extends Step
  final case class FlatMap(fn: Any => IterableOnce[Any]) extends Step
  /** Calls `fn` for its side effect and passes the item on (API.md `peek`). */
  final case class Peek(fn: Any => Unit) extends Step

  def map(fn: Any => Any): Step = Map(fn)
  def filter(predicate: Any => Boolean): Step = Filter(predicate)
  def flatMap(fn: Any => IterableOnce[Any]): Step = FlatMap(fn)
  def peek(fn: Any => Unit): Step = Peek(fn)

  /** One function for the whole chain, steps applied left to right (an empty chain is the identity). */
  def fuse(steps: Seq[Step]): FusedSteps = new FusedSteps(steps.toVector)
}

/** A step chain as one function. The chain is cut at each flat_map into runs of one-to-one steps
  * (map, filter, peek); a run is evaluated by a loop over its steps that allocates nothing and returns
  * either the output or [[FusedSteps.Dropped]]. Outputs of a chain with flat_maps are produced lazily,
  * so user functions run as the outbox takes the outputs, each exactly once.
  */
final class FusedSteps private[processor] (steps: Vector[Step]) extends (Any => IterableOnce[Any]) with Serializable {
  private val (runs, expansions) = FusedSteps.split(steps)

  /** The chain as a function returning its single output or [[FusedSteps.Dropped]]; None when a
    * flat_map makes it one-to-many.
    */
  def oneToOne: Option[Any => Any] = if (expansions.isEmpty) Some(item => applyRun(runs(0), item)) else None

  override def apply(item: Any): IterableOnce[Any] = {
    var outputs = runOutput(0, item)
    var i = 0
    while (i < expansions.length) {
      val expand = expansions(i)
      val nextRun = i + 1
      outputs = outputs.flatMap(x => expand(x).iterator.flatMap(runOutput(nextRun, _)))
      i += 1
    }
    outputs
  }

  private def runOutput(run: Int, item: Any): Iterator[Any] = {
    val out = applyRun(runs(run), item)
    if (out.asInstanceOf[AnyRef] eq FusedSteps.Dropped) Iterator.empty else Iterator.single(out)
  }

  private def applyRun(run: Array[Step], item: Any): Any = {
    var value = item
    var i = 0
    while (i < run.length) {
      run(i) match {
        case Step.Map(fn) => value = fn(value)
        case Step.Filter(predicate) => if (!predicate(value)) return FusedSteps.Dropped
        case Step.Peek(fn) => fn(value)
        case Step.FlatMap(_) => throw new IllegalStateException("flat_map inside a one-to-one run")
      }
      i += 1
    }
    value
  }
}

object FusedSteps {
  /** The one-to-one runs between flat_maps (one more run than flat_maps) and the flat_maps. */
  private def split(steps: Vector[Step]): (Array[Array[Step]], Array[Any => IterableOnce[Any]]) = {
    val runs = Vector.newBuilder[Array[Step]]
    val expansions = Vector.newBuilder[Any => IterableOnce[Any]]
    var current = Vector.empty[Step]
    steps.foreach {
      case Step.FlatMap(fn) => runs += current.toArray; expansions += fn; current = Vector.empty
      case oneToOne => current :+= oneToOne
    }
    runs += current.toArray
    (runs.result().toArray, expansions.result().toArray)
  }

  /** What a one-to-one run returns for an item that a filter removed. */
  case object Dropped
}
