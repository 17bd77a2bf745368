package io.jetspark.core.processor

import io.jetspark.core.{AbstractProcessor, ArrayDequeInbox, ControlItem, Inbox, Outbox, Processor, ProcessorContext, Watermark}
import io.jetspark.core.snapshot.SnapshotEntry

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/** Where an item entered the job: `offset` is its position in source substream (partition)
  * `substream`. A source numbers each substream's items with increasing offsets (design doc 015's
  * sequence id; DESIGN.md "Order").
  *
  * `path` tells apart the items one source item became, where an engine numbers them: the j-th output
  * of a flat_map step (or of a hash join for one streamed item) appends j (map and filter append
  * nothing). It is the brute-force reference's id below the offset, and what an ordered merge compares
  * (`tests/reference.py`: a merge sorts by id, stably).
  *
  * `ties` is empty until the item passes an ordered merge, and from then on says where the merge put it
  * ([[tiedBy]]). Ids are compared ([[SequenceId.withinSubstream]]) by offset, then by `ties ++ path`
  * element by element, a prefix first: the order of the stream the item is in (the reference's list
  * order), which a restore point gives back. Before any merge that is the path's order. After one, the
  * ties of the merge's outputs are prefix-free and in merged order, so `ties ++ path` orders first by
  * where the merge put each item and only then by what flat_maps since made of it: the outputs of one
  * merged item stay together. (Were the merge's order kept in the path instead, what a flat_map after it
  * makes of one merged item would interleave with what it makes of another whose path is a prefix.)
  *
  * Progress marks ([[SequencePassed]]) concern whole offsets; their path and ties are ignored.
  */
final case class SequenceId(substream: Int, offset: Long, path: Vector[Int] = Vector.empty, ties: Vector[Int] = Vector.empty) {

  /** This id with `extra` appended to its path (the j-th output of a flat_map appends j). */
  def below(extra: Seq[Int]): SequenceId = if (extra.isEmpty) this else copy(path = path ++ extra)

  /** This id as the output of an ordered merge that took it from branch `lane`: its ties become
    * [[SequenceId.mergedTies]], its path stays.
    */
  def tiedBy(lane: Int): SequenceId = copy(ties = SequenceId.mergedTies(path, ties, lane))
}

object SequenceId {

  def of(substream: Int, offset: Long, path: IterableOnce[Int] = Nil, ties: IterableOnce[Int] = Nil): SequenceId =
    SequenceId(substream, offset, Vector.from(path), Vector.from(ties))

  /** The ties of an item with `path` and `ties` that an ordered merge took from branch `lane`: the path's
    * elements shifted up by one and a 0 to end them, then `lane`, then the ties it came with. The one
    * encoding of a merge's order, which both engines use (the Spark engine writes these into its rows'
    * ties column itself).
    *
    * In `ties ++ path` order, the merge's outputs so come by path (a prefix first: where it ends with 0
    * the longer one goes on with at least 1), then by branch (copies of one record that took several
    * branches, as the reference's stable sort puts them), then by the order they had on their branch
    * (their earlier ties). And they are prefix-free, paths being of elements >= 0: two outputs differ
    * within the shorter one's ties unless their path, branch and earlier ties are all equal (the earlier
    * ties of one branch's items are prefix-free themselves, all coming from the one merge before, or all
    * empty); so whatever a later flat_map appends to the path never reorders two merged items.
    */
  def mergedTies(path: Seq[Int], ties: Seq[Int], lane: Int): Vector[Int] = {
    require(lane >= 0, s"branch $lane")
    val out = Vector.newBuilder[Int]
    out.sizeHint(path.size + 2 + ties.size)
    path.foreach { element => require(element >= 0, s"fan-out path $path"); out += element + 1 }
    out += 0
    out += lane
    out ++= ties
    out.result()
  }

  /** Offset first, then `ties ++ path` element by element (a prefix before its extensions). */
  val withinSubstream: Ordering[SequenceId] = (a, b) => {
    val byOffset = java.lang.Long.compare(a.offset, b.offset)
    if (byOffset != 0) byOffset else compareTiesThenPath(a, b)
  }

  private def compareTiesThenPath(a: SequenceId, b: SequenceId): Int = {
    val (lengthA, lengthB) = (a.ties.length + a.path.length, b.ties.length + b.path.length)
    def at(id: SequenceId, i: Int) = if (i < id.ties.length) id.ties(i) else id.path(i - id.ties.length)
    var i = 0
    while (i < lengthA && i < lengthB) {
      val byElement = Integer.compare(at(a, i), at(b, i))
      if (byElement != 0) return byElement
      i += 1
    }
    Integer.compare(lengthA, lengthB)
  }
}

/** An item carrying the sequence id of the source item it came from (a flat_map that does not number
  * its outputs gives them all the same id; they then keep their arrival order).
  */
final case class Sequenced(seq: SequenceId, item: Any)

object Sequenced {
  /** The item itself, whether it travels with its id or not. */
  def itemOf(x: Any): Any = x match {
    case Sequenced(_, item) => item
    case item => item
  }

  /** Lifts a branch's stateless chain for a fork that ends in an [[OrderedMergeProcessor]]: each
    * `Sequenced(seq, x)` becomes `Sequenced(seq, y)` for every `y` in `fn(x)`, followed by
    * `SequencePassed(seq)`, also when `fn(x)` is empty (an item the branch filtered out leaves a gap
    * that the merge must know about).
    */
  def liftBranch(fn: Any => IterableOnce[Any]): Any => IterableOnce[Any] = {
    case Sequenced(seq, item) => fn(item).iterator.map(Sequenced(seq, _)) ++ Iterator.single(SequencePassed(seq))
    case other => throw new IllegalArgumentException(s"an ordered branch expects Sequenced items, got $other")
  }
}

/** A progress mark, in band with the items: `sender` will deliver no further item of `seq.substream`
  * with an offset at or below `seq.offset`. [[SequenceRestoreProcessor]] gets items of several senders
  * on one input and tells them apart by `sender`; [[OrderedMergeProcessor]] has one branch per input
  * ordinal and ignores `sender`.
  */
final case class SequencePassed(seq: SequenceId, sender: Int = 0)

/** The snapshot of a sequence-ordering processor (one entry, bound to its instance: the partitions of
  * such a vertex are fixed for the life of a checkpoint). `buffered` are (item, tie lane, arrival
  * number); `ready` are items and watermarks released but not yet accepted by the outbox; `passed` maps
  * (lane, substream) to the highest offset passed; `heldWatermarks` are (arrival barrier, watermark).
  */
final case class SequenceOrderState(
    buffered: Vector[(Sequenced, Int, Long)],
    ready: Vector[Any],
    passed: Map[(Int, Int), Long],
    completedLanes: Set[Int],
    heldWatermarks: Vector[(Long, Watermark)],
    lastWatermark: Option[Watermark],
    nextArrival: Long,
)

/** The ordering rule shared by [[SequenceRestoreProcessor]] and [[OrderedMergeProcessor]].
  *
  * Items arrive on `lanes` lanes (senders or branches); each lane delivers every substream in offset
  * order and says how far it got with [[SequencePassed]] marks, or by completing. The frontier of a
  * substream is the least offset that every lane has passed (a complete lane has passed everything).
  * Items of a substream at or below its frontier can no longer be preceded by anything, so they are
  * released in (offset, tie lane, arrival) order; items above it wait. An item that arrives at or below
  * the frontier broke the lanes' promise and is an error.
  *
  * Watermarks: a watermark is released only after every item that arrived before it, so that no item
  * is emitted after a watermark that preceded it (it would be late downstream); a repeated watermark
  * (the same call retried) is ignored.
  */
private[processor] final class SequenceReorderer(lanes: Int, describe: => String) {
  require(lanes >= 1, "at least one lane")

  /** substream -> ((id, tie lane, arrival) -> item). */
  private val buffered = mutable.HashMap.empty[Int, mutable.TreeMap[(SequenceId, Int, Long), Sequenced]]
  /** Arrival numbers of the buffered items: the least one holds back the watermarks after it. */
  private val bufferedArrivals = new java.util.TreeSet[java.lang.Long]()
  private val passed = mutable.HashMap.empty[(Int, Int), Long]
  private val completedLanes = mutable.Set.empty[Int]
  private val heldWatermarks = mutable.Queue.empty[(Long, Watermark)]
  private var lastWatermark: Option[Watermark] = None
  private var nextArrival = 0L
  private val ready = new java.util.ArrayDeque[Any]()

  /** Offers released items and watermarks; true when none is left. */
  def flush(outbox: Outbox): Boolean = {
    while (!ready.isEmpty) {
      if (!outbox.offer(ready.peekFirst())) return false
      ready.removeFirst()
    }
    true
  }

  def add(item: Sequenced, tieLane: Int): Unit = {
    val substream = item.seq.substream
    val frontier = frontierOf(substream)
    if (item.seq.offset <= frontier)
      throw new IllegalStateException(
        s"$describe: $item arrived after every lane had passed offset $frontier of substream $substream")
    buffered.getOrElseUpdate(substream, newBuffer) += ((item.seq, tieLane, nextArrival) -> item)
    bufferedArrivals.add(nextArrival)
    nextArrival += 1
  }

  def pass(lane: Int, seq: SequenceId): Unit = {
    require(lane >= 0 && lane < lanes, s"$describe: progress mark from lane $lane, expected 0 until $lanes")
    val key = (lane, seq.substream)
    if (passed.get(key).forall(_ < seq.offset)) {
      passed(key) = seq.offset
      release(seq.substream)
    }
  }

  def completeLane(lane: Int): Unit = {
    completedLanes += lane
    buffered.keys.toList.sorted.foreach(release)
    releaseWatermarks()
  }

  def completeAllLanes(): Unit = (0 until lanes).foreach(completeLane)

  def addWatermark(watermark: Watermark): Unit =
    if (lastWatermark.forall(_.timestamp < watermark.timestamp)) {
      lastWatermark = Some(watermark)
      heldWatermarks.enqueue((nextArrival, watermark))
      releaseWatermarks()
    }

  private def newBuffer = mutable.TreeMap.empty[(SequenceId, Int, Long), Sequenced](
    Ordering.Tuple3(SequenceId.withinSubstream, Ordering.Int, Ordering.Long))

  private def frontierOf(substream: Int): Long = {
    var frontier = Long.MaxValue
    var lane = 0
    while (lane < lanes) {
      if (!completedLanes(lane)) frontier = math.min(frontier, passed.getOrElse((lane, substream), Long.MinValue))
      lane += 1
    }
    frontier
  }

  private def release(substream: Int): Unit = {
    buffered.get(substream).foreach { items =>
      val frontier = frontierOf(substream)
      while (items.nonEmpty && items.head._1._1.offset <= frontier) {
        val (position @ (_, _, arrival), item) = items.head
        items -= position
        bufferedArrivals.remove(arrival)
        ready.addLast(item)
      }
      if (items.isEmpty) buffered -= substream
    }
    releaseWatermarks()
  }

  private def releaseWatermarks(): Unit = {
    val leastBuffered = if (bufferedArrivals.isEmpty) Long.MaxValue else bufferedArrivals.first().longValue
    while (heldWatermarks.nonEmpty && heldWatermarks.head._1 <= leastBuffered) ready.addLast(heldWatermarks.dequeue()._2)
  }

  def state: SequenceOrderState = SequenceOrderState(
    buffered = buffered.valuesIterator.flatMap(_.iterator.map { case ((_, lane, arrival), item) => (item, lane, arrival) }).toVector,
    ready = Vector.from(ready.iterator().asScala),
    passed = passed.toMap,
    completedLanes = completedLanes.toSet,
    heldWatermarks = heldWatermarks.toVector,
    lastWatermark = lastWatermark,
    nextArrival = nextArrival,
  )

  def restore(saved: SequenceOrderState): Unit = {
    saved.buffered.foreach { case (item, lane, arrival) =>
      buffered.getOrElseUpdate(item.seq.substream, newBuffer) += ((item.seq, lane, arrival) -> item)
      bufferedArrivals.add(arrival)
    }
    saved.ready.foreach(ready.addLast)
    passed ++= saved.passed
    completedLanes ++= saved.completedLanes
    heldWatermarks ++= saved.heldWatermarks
    lastWatermark = saved.lastWatermark
    nextArrival = saved.nextArrival
  }
}

/** Shared shape of the two sequence-ordering processors: the reorderer's state saved as one entry bound
  * to the instance, released items flushed before more input is taken.
  */
private[processor] abstract class SequenceOrderingProcessor(lanes: Int, stateName: String) extends AbstractProcessor {
  protected val reorderer = new SequenceReorderer(lanes, s"${context.vertexName} ($stateName)")
  private val saver = new SnapshotSaver

  /** Handles one input item of `ordinal`. */
  protected def accept(ordinal: Int, item: Any): Unit

  override def process(ordinal: Int, inbox: Inbox): Unit = {
    while (!inbox.isEmpty && reorderer.flush(outbox)) accept(ordinal, inbox.poll())
    reorderer.flush(outbox)
    ()
  }

  override def tryProcessWatermark(watermark: Watermark): Boolean = {
    reorderer.addWatermark(watermark)
    reorderer.flush(outbox)
  }

  override def complete(): Boolean = reorderer.flush(outbox)

  override def saveToSnapshot(): Boolean =
    saver.save(outbox)(Iterator(InstanceState.key(stateName, context) -> reorderer.state))

  override def restoreFromSnapshot(inbox: Inbox): Unit =
    while (!inbox.isEmpty)
      InstanceState.ownValue[SequenceOrderState](stateName, context, inbox.poll().asInstanceOf[SnapshotEntry]).foreach(reorderer.restore)

  protected def unexpected(item: Any): Nothing =
    throw new IllegalArgumentException(s"${context.vertexName}: expected Sequenced or SequencePassed, got $item")
}

/** Restores per-substream (hence per-key) order after an edge that interleaves several upstream
  * instances (`senderCount` senders, all on input ordinal 0, e.g. a keyed shuffle after `rebalance()`
  * with preserve_order).
  *
  * Input: [[Sequenced]] items, and [[SequencePassed]] marks that every sender sends to every receiver
  * when it has delivered all it has of a substream up to an offset (the epoch engine sends them at each
  * epoch end: the source offsets of the epoch's end are known by then). Output: the [[Sequenced]]
  * items, each substream in id order ([[SequenceId.withinSubstream]]; equal ids in arrival order).
  *
  * The rule: an item is held until every sender has passed its offset in its substream, or the input
  * is complete, and then emitted in offset order. Why marks and not the items' offsets alone: a
  * receiver sees only the items of its keys, so the offsets it sees have gaps it cannot tell from items
  * still in flight; and why not the watermark: an item that came after a watermark at the source may
  * overtake it through a faster sender, so a watermark does not bound the offsets still to come.
  * Watermarks are forwarded after every item that arrived before them.
  *
  * Snapshot: held items, released items not yet emitted, senders' progress, held watermarks, in one
  * [[SequenceOrderState]] bound to this instance.
  */
final class SequenceRestoreProcessor(senderCount: Int) extends SequenceOrderingProcessor(senderCount, "sequence-restore") {
  override protected def accept(ordinal: Int, item: Any): Unit = item match {
    case sequenced: Sequenced => reorderer.add(sequenced, tieLane = 0)
    case SequencePassed(seq, sender) => reorderer.pass(sender, seq)
    case other => unexpected(other)
  }

  override def completeEdge(ordinal: Int): Boolean = {
    reorderer.completeAllLanes()
    reorderer.flush(outbox)
  }
}

/** The merge of a diamond: branches on input ordinals `0 until branchCount` fork from one stream and
  * join here, and the output follows the sequence order of the stream (Triceps' "dreaded diamond").
  *
  * Each branch delivers its items in sequence order and, after the outputs for each source item, a
  * [[SequencePassed]] mark for its id ([[Sequenced.liftBranch]] builds such a branch), so that an item
  * a branch filtered out still tells the merge that nothing more will come for it; completing a branch
  * passes everything. The outputs for one sequence id are emitted once every branch has passed it,
  * ordered by (id, branch ordinal, arrival): all outputs of a source item come before those of the
  * next one. Watermarks are forwarded after every item that arrived before them.
  *
  * With `tieByBranch`, an item's id gets the ties of the merge's order ([[SequenceId.tiedBy]]: by path,
  * then branch, then the ties it came with) before it is ordered, and leaves with them: copies of one
  * record that took several branches come in branch order, and the merged order is kept wherever the
  * items go next, also through flat_maps and later merges. (The Spark engine keeps an item's id in
  * columns of its row and writes [[SequenceId.mergedTies]] into those itself before the merge.)
  *
  * Snapshot: as [[SequenceRestoreProcessor]], lanes being branches.
  */
final class OrderedMergeProcessor(branchCount: Int, tieByBranch: Boolean = false)
    extends SequenceOrderingProcessor(branchCount, "ordered-merge") {
  override protected def accept(ordinal: Int, item: Any): Unit = item match {
    case sequenced: Sequenced if tieByBranch => reorderer.add(Sequenced(sequenced.seq.tiedBy(ordinal), sequenced.item), tieLane = ordinal)
    case sequenced: Sequenced => reorderer.add(sequenced, tieLane = ordinal)
    case SequencePassed(seq, _) => reorderer.pass(ordinal, seq)
    case other => unexpected(other)
  }

  override def completeEdge(ordinal: Int): Boolean = {
    reorderer.completeLane(ordinal)
    reorderer.flush(outbox)
  }
}

