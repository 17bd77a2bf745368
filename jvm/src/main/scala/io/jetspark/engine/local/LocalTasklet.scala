package io.jetspark.engine.local

import io.jetspark.core._
import io.jetspark.core.eventtime.WatermarkCoalescer
import io.jetspark.core.inbound.{InboundEdgeStream, InboundProgress}
import io.jetspark.core.processor.{SequenceId, Sequenced}
import io.jetspark.core.window.CountsLateEvents

import java.util.concurrent.ArrayBlockingQueue
import scala.collection.mutable
import scala.util.control.NonFatal

/** The receiving end of one processor input ordinal: one bounded queue per sender instance that can
  * reach this instance (none: the input is empty), merged by the core's [[InboundEdgeStream]].
  */
private[local] final class InputOrdinal(val queues: Array[ArrayBlockingQueue[Any]]) {
  val stream: InboundEdgeStream = if (queues.isEmpty) null else new InboundEdgeStream(queues.length, ProcessingGuarantee.None)

  /** Moves what the senders queued into the stream, keeping at most `limit` items buffered per queue
    * (the stream's own buffer is unbounded).
    */
  def transfer(limit: Int): Unit = {
    var q = 0
    while (q < queues.length) {
      var room = if (limit == Int.MaxValue) Int.MaxValue else limit - stream.queuedCount(q)
      while (room > 0) {
        val item = queues(q).poll()
        if (item == null) room = 0 else { stream.offer(q, item); room -= 1 }
      }
      q += 1
    }
  }
}

/** The sending end of one output edge of a processor instance: `targets(r)` is the queue to receiver
  * instance `r` (null where the routing never sends: an isolated edge). Items that travel with their
  * sequence id ([[Sequenced]]) keep it only on an edge that `carriesSequence`.
  */
private[local] final class OutputEdge(val targets: Array[ArrayBlockingQueue[Any]], val routing: Routing, val errorsOf: Option[String],
    carriesSequence: Boolean) {
  private val reachable = targets.indices.filter(targets(_) != null).toArray
  private var nextRoundRobin = 0

  /** Which of a data item's two forms this edge sends: with its sequence id, or without. */
  def sent(withId: Any, withoutId: Any): Any = if (carriesSequence) withId else withoutId

  /** The queues a data item goes to, or null when one of them is full (nothing is sent then). */
  def queuesFor(item: Any): Seq[ArrayBlockingQueue[Any]] = routing match {
    case Routing.RoundRobin =>
      var k = 0
      while (k < reachable.length) {
        val q = targets(reachable((nextRoundRobin + k) % reachable.length))
        if (q.remainingCapacity() > 0) { nextRoundRobin = (nextRoundRobin + k + 1) % reachable.length; return Seq(q) }
        k += 1
      }
      null
    case Routing.Partitioned(keyOf) => withRoom(Seq(targets(Math.floorMod(keyOf(Sequenced.itemOf(item)).hashCode, targets.length))))
    case Routing.Broadcast => withRoom(reachable.toSeq.map(targets(_)))
    case Routing.Isolated | Routing.AllToOne => withRoom(reachable.toSeq.map(targets(_)))
  }

  /** Every queue of the edge (control items go everywhere), or null when one is full. */
  def allQueues: Seq[ArrayBlockingQueue[Any]] = withRoom(reachable.toSeq.map(targets(_)))

  // One sender per queue: room seen here cannot be taken by anyone else before we add.
  private def withRoom(queues: Seq[ArrayBlockingQueue[Any]]): Seq[ArrayBlockingQueue[Any]] =
    if (queues.forall(_.remainingCapacity() > 0)) queues else null
}

/** The outbox of a processor instance: an offer goes straight into the receivers' bounded queues, all
  * or nothing, and is refused when a queue it needs is full (back-pressure). `-1` offers to every data
  * output; a [[FailedRecord]] goes only to the outputs that carry its stage's errors. `convert` turns
  * a data item into the form the next vertices take (the item of a [[Sequenced]] one). With a
  * `substream`, the instance assigns sequence ids: each data item it sends gets the next offset of it.
  */
private[local] final class LocalOutbox(outputs: IndexedSeq[OutputEdge], convert: Any => Any, substream: Option[Int]) extends Outbox {
  private val dataOrdinals = outputs.indices.filter(outputs(_).errorsOf.isEmpty)
  private var nextOffset = 0L
  /** Items accepted so far: the tasklet's measure of progress. */
  var accepted = 0L

  override def bucketCount: Int = outputs.size

  override def offer(ordinal: Int, item: Any): Boolean = item match {
    case null => throw new IllegalArgumentException("null item offered to the outbox")
    case c: ControlItem => send(if (ordinal == -1) dataOrdinals else Seq(ordinal), c)
    case FailedRecord(stage, record) =>
      val ordinals = outputs.indices.filter(outputs(_).errorsOf.contains(stage))
      if (ordinals.isEmpty) throw new IllegalStateException(s"a record failed in stage '$stage', which has no dead-letter edge")
      send(ordinals, record)
    case data =>
      val converted = data match {
        case Sequenced(seq, payload) => Sequenced(seq, convert(payload))
        case payload => convert(payload)
      }
      substream match {
        case Some(s) =>
          val sent = send(if (ordinal == -1) dataOrdinals else Seq(ordinal), Sequenced(SequenceId.of(s, nextOffset), converted))
          if (sent) nextOffset += 1
          sent
        case None => send(if (ordinal == -1) dataOrdinals else Seq(ordinal), converted)
      }
  }

  /** Offers a control item to every output, error outputs included ([[DoneItem]] at the end). */
  def offerToAll(control: ControlItem): Boolean = send(outputs.indices, control)

  override def offerToSnapshot(key: Any, value: Any): Boolean =
    throw new IllegalStateException("a light job takes no snapshots")

  private def send(ordinals: Seq[Int], payload: Any): Boolean = {
    val chosen = new Array[Seq[ArrayBlockingQueue[Any]]](ordinals.size)
    val withoutId = Sequenced.itemOf(payload)
    var i = 0
    while (i < ordinals.size) {
      val edge = outputs(ordinals(i))
      chosen(i) = payload match {
        case _: ControlItem => edge.allQueues
        case _ => edge.queuesFor(edge.sent(payload, withoutId))
      }
      if (chosen(i) == null) return false
      i += 1
    }
    i = 0
    while (i < ordinals.size) { val sent = outputs(ordinals(i)).sent(payload, withoutId); chosen(i).foreach(_.add(sent)); i += 1 }
    accepted += 1
    true
  }
}

/** One processor instance of a light job, driven by calls to [[call]] from a worker thread: each call
  * does one step of the processor contract (process an inbox, a coalesced watermark, complete an edge,
  * complete) or moves input from the queues, and never blocks (unless the processor's own functions do;
  * see [[LocalVertex.cooperative]]).
  *
  * Inputs are read in priority groups: every ordinal of a group is drained and completed before the next
  * group starts. The watermarks of the ordinals are coalesced once more, across ordinals (each ordinal's
  * stream already coalesced its senders), so the processor sees the minimum over all its inputs, as in
  * Jet. A source instance reads its items from its own iterator. When the processor has completed,
  * [[DoneItem]] goes to every output queue and the tasklet is done.
  *
  * A failure of the processor fails the whole execution (naming the vertex and instance); when the
  * execution terminates (failure elsewhere, cancel) the tasklet closes its processor and is done.
  */
private[local] final class LocalTasklet(
    execution: LocalExecution,
    vertex: LocalVertex,
    context: ProcessorContext,
    inputs: IndexedSeq[InputOrdinal],
    priorityGroups: List[List[Int]],
    outputs: IndexedSeq[OutputEdge],
    source: Option[Iterator[Any]],
    batchSize: Int,
) {
  private val processor = vertex.newProcessor(context)

  /** The late events its processor dropped, where it is a window. */
  def lateEventsDropped: Long = processor match {
    case window: CountsLateEvents => window.lateEventsDropped
    case _ => 0L
  }
  private val outbox = new LocalOutbox(outputs, vertex.output, vertex.firstSubstream.map(_ + context.globalProcessorIndex))
  private val inbox = new ArrayDequeInbox
  private val coalescer = if (inputs.isEmpty) null else new WatermarkCoalescer(inputs.size)
  private val pendingControls = mutable.Queue.empty[ControlItem]
  private var groups = priorityGroups
  private var active: List[Int] = Nil
  private var inboxOrdinal = 0
  private var completingEdge = -1
  private var completing = false
  private var sendingDone = false
  private var initialized = false
  @volatile private var finished = false

  def cooperative: Boolean = vertex.cooperative
  def isDone: Boolean = finished

  /** One step; true when it made progress (the worker backs off after a round without any). */
  def call(): Boolean = {
    if (finished) return false
    if (execution.isTerminating) { finish(); return true }
    try {
      if (!initialized) { processor.init(outbox, context); initialized = true }
      val before = outbox.accepted
      val progressed = step()
      progressed || outbox.accepted != before
    } catch {
      case NonFatal(e) =>
        execution.fail(new LightJobFailedException(
          s"vertex '${vertex.name}' (instance ${context.globalProcessorIndex} of ${context.totalParallelism}) failed: $e", e))
        finish()
        true
    }
  }

  private def step(): Boolean = {
    if (!inbox.isEmpty) {
      val size = inbox.size
      processor.process(inboxOrdinal, inbox)
      inbox.size != size
    } else if (pendingControls.nonEmpty) {
      val done = pendingControls.head match {
        case wm: Watermark => processor.tryProcessWatermark(wm)
        case other => outbox.offerToAll(other)
      }
      if (done) pendingControls.dequeue()
      done
    } else if (completingEdge >= 0) {
      if (processor.completeEdge(completingEdge)) { completingEdge = -1; true } else false
    } else if (completing) {
      if (processor.complete()) { completing = false; sendingDone = true; true } else false
    } else if (sendingDone) {
      if (outbox.offerToAll(DoneItem)) { finish(); true } else false
    } else if (source.isDefined) readSource(source.get)
    else readInputs()
  }

  private def readSource(items: Iterator[Any]): Boolean = {
    var (taken, due) = (0, true)
    while (taken < batchSize && due && items.hasNext) items.next() match {
      case NothingDue => due = false
      case item => inbox.add(item); taken += 1
    }
    inboxOrdinal = 0
    if (taken > 0) true
    else if (due) { completingEdge = 0; completing = true; true }
    else { processor.tryProcess(); false } // a stream with no item due yet: the processor's timed steps
  }

  /** Takes the next batch (or control item) from the active ordinals; moves to the next priority group
    * when the active one is exhausted, and to completion after the last.
    */
  private def readInputs(): Boolean = {
    if (active.isEmpty) {
      groups match {
        case group :: rest => active = group; groups = rest
        case Nil => completing = true
      }
      return true
    }
    // Inputs that wait for a higher-priority group are taken off their queues without bound: when one
    // sender feeds both (a join of a stream with what it derives from it), a full queue to the waiting
    // input would block the sender, and so the input being read, for ever.
    groups.foreach(_.foreach(o => if (inputs(o).stream != null) inputs(o).transfer(Int.MaxValue)))
    var tried = 0
    val count = active.size
    while (tried < count) {
      val ordinal = active.head
      active = active.tail :+ ordinal
      tried += 1
      val input = inputs(ordinal)
      if (input.stream == null) { edgeDone(ordinal); return true }
      input.transfer(batchSize)
      input.stream.drainTo(inbox, batchSize) match {
        case InboundProgress.Items(_) =>
          coalescer.observeItem(ordinal)
          inboxOrdinal = ordinal
          return true
        case InboundProgress.CoalescedWatermark(wm) =>
          pendingControls ++= coalescer.observeWatermark(ordinal, wm.timestamp)
          return true
        case InboundProgress.Idle =>
          pendingControls ++= coalescer.observeIdle(ordinal)
          return true
        case InboundProgress.Done =>
          edgeDone(ordinal)
          return true
        case InboundProgress.SnapshotBarrier(id) =>
          throw new IllegalStateException(s"barrier $id reached a light job, which takes no snapshots")
        case InboundProgress.NothingAvailable | InboundProgress.Blocked => ()
      }
    }
    processor.tryProcess()
    false
  }

  private def edgeDone(ordinal: Int): Unit = {
    pendingControls ++= coalescer.observeDone(ordinal)
    completingEdge = ordinal
    active = active.filterNot(_ == ordinal)
  }

  private def finish(): Unit = if (!finished) {
    finished = true
    try processor.close()
    catch { case NonFatal(e) => execution.fail(new LightJobFailedException(s"vertex '${vertex.name}' failed to close: $e", e)) }
    execution.taskletDone()
  }
}
