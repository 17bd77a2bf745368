package io.jetspark.core.inbound

import io.jetspark.core._
import io.jetspark.core.eventtime.WatermarkCoalescerState
import io.jetspark.core.inbound.InboundProgress._
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer
import scala.util.Random
import io.jetspark.core.testing.TestSeed

class InboundEdgeStreamTest extends AnyFunSuite {
  import InboundEdgeStreamTest._

  /** Calls `drainTo` until the stream has nothing more to give. Returns what reached the processor, in
    * order (data items, coalesced [[Watermark]]s, [[IdleMessage]], [[Barrier]] for a snapshot), and the
    * report that ended it.
    */
  private def drainAll(stream: InboundEdgeStream, maxItems: Int = 16): (Seq[Any], InboundProgress) = {
    val out = ArrayBuffer.empty[Any]
    while (true) {
      val inbox = new ArrayDequeInbox
      stream.drainTo(inbox, maxItems) match {
        case Items(n) =>
          assert(inbox.size == n && n <= maxItems)
          while (!inbox.isEmpty) out += inbox.poll()
        case CoalescedWatermark(wm) => out += wm
        case Idle => out += IdleMessage
        case SnapshotBarrier(id) => out += Barrier(id)
        case stop => return (out.toList, stop)
      }
    }
    throw new AssertionError("unreachable")
  }

  private def stream(queues: Int, guarantee: ProcessingGuarantee = ProcessingGuarantee.None) =
    new InboundEdgeStream(queues, guarantee)

  test("exactly-once: a queue that delivered the barrier is not drained until every queue delivered it") {
    //   q1: barrier ........ item2
    //   q2: ........ item1 ........ barrier
    //   processor: item1 | (blocked) | snapshot, item2
    val s = stream(2, ProcessingGuarantee.ExactlyOnce)
    s.offer(0, Barrier(1)); s.offer(1, "item1")
    assert(drainAll(s) == ((Seq("item1"), NothingAvailable)))
    s.offer(0, "item2")
    assert(drainAll(s) == ((Seq(), Blocked)))
    s.offer(1, Barrier(1))
    assert(drainAll(s) == ((Seq(Barrier(1), "item2"), NothingAvailable)))
  }

  test("at-least-once: queues keep flowing after their barrier; the barrier comes once all delivered it") {
    //   q1: barrier ........ item2
    //   q2: ........ item1 ........ barrier
    //   processor: item1 | item2, snapshot
    val s = stream(2, ProcessingGuarantee.AtLeastOnce)
    s.offer(0, Barrier(1)); s.offer(1, "item1")
    assert(drainAll(s) == ((Seq("item1"), NothingAvailable)))
    s.offer(0, "item2"); s.offer(1, Barrier(1))
    assert(drainAll(s) == ((Seq("item2", Barrier(1)), NothingAvailable)))
  }

  test("at-least-once: a queue that reaches the next barrier first waits there") {
    val s = stream(2, ProcessingGuarantee.AtLeastOnce)
    s.offer(0, Barrier(1)); s.offer(0, "a"); s.offer(0, Barrier(2)); s.offer(0, "b")
    assert(drainAll(s) == ((Seq("a"), Blocked)))
    s.offer(1, Barrier(1)); s.offer(1, Barrier(2))
    assert(drainAll(s) == ((Seq(Barrier(1), Barrier(2), "b"), NothingAvailable)))
  }

  test("a done queue counts as having delivered the barrier") {
    val s = stream(2, ProcessingGuarantee.ExactlyOnce)
    s.offer(0, Barrier(3)); s.offer(0, "after")
    assert(drainAll(s) == ((Seq(), Blocked)))
    s.offer(1, "last"); s.offer(1, DoneItem)
    assert(drainAll(s) == ((Seq("last", Barrier(3), "after"), NothingAvailable)))
  }

  test("a barrier without a processing guarantee, or out of sequence, is an error") {
    val none = stream(1)
    none.offer(0, Barrier(1))
    intercept[IllegalStateException](drainAll(none))
    val mixed = stream(2, ProcessingGuarantee.ExactlyOnce)
    mixed.offer(0, Barrier(1)); mixed.offer(1, Barrier(2))
    intercept[IllegalStateException](drainAll(mixed))
  }

  test("a watermark reaches the processor only after the data before it on its queue") {
    //   q0: a b c wm10
    //   q1: wm12 d
    //   processor: a, b, c (and d, in any place) before wm10
    for (maxItems <- 1 to 4) {
      val s = stream(2)
      Seq("a", "b", "c", Watermark(10)).foreach(s.offer(0, _))
      Seq(Watermark(12), "d").foreach(s.offer(1, _))
      val (out, end) = drainAll(s, maxItems)
      assert(end == NothingAvailable)
      assert(out.filter(_ != "d") == Seq("a", "b", "c", Watermark(10)), s"maxItems $maxItems")
      assert(out.count(_ == "d") == 1)
    }
  }

  test("watermarks are coalesced over the queues; idle and done queues are left out") {
    //   q0: wm1 ...... wm3 ........ idle ................. done
    //   q1: ..... wm2 ...... wm4 ........ wm6  done
    //   processor:  1       2      3   4      6  idle (q0 is the only live queue, and idle)
    val s = stream(2)
    s.offer(0, Watermark(1))
    assert(drainAll(s) == ((Seq(), NothingAvailable)))
    s.offer(1, Watermark(2)); s.offer(0, Watermark(3)); s.offer(1, Watermark(4))
    assert(drainAll(s) == ((Seq(Watermark(1), Watermark(2), Watermark(3)), NothingAvailable)))
    s.offer(0, IdleMessage)
    assert(drainAll(s) == ((Seq(Watermark(4)), NothingAvailable)))
    s.offer(1, Watermark(6)); s.offer(1, DoneItem)
    assert(drainAll(s) == ((Seq(Watermark(6), IdleMessage), NothingAvailable)))
    assert(!s.isDone)
    s.offer(0, DoneItem)
    assert(drainAll(s) == ((Seq(), Done)))
    assert(s.isDone)
  }

  test("when every queue is idle the idle message is reported once") {
    val s = stream(2)
    s.offer(0, Watermark(5)); s.offer(0, IdleMessage); s.offer(1, IdleMessage); s.offer(1, IdleMessage)
    assert(drainAll(s) == ((Seq(Watermark(5), IdleMessage), NothingAvailable)))
  }

  test("anything offered after DoneItem is rejected") {
    val s = stream(1)
    s.offer(0, DoneItem)
    intercept[IllegalStateException](s.offer(0, "late"))
  }

  test("after restoring the coalescer the edge never reports a watermark at or below the saved one") {
    val before = stream(1)
    before.offer(0, Watermark(10))
    drainAll(before)
    val after = stream(1)
    after.restoreCoalescer(before.coalescerState)
    assert(after.coalescerState == WatermarkCoalescerState(10))
    after.offer(0, Watermark(7)); after.offer(0, Watermark(10)); after.offer(0, Watermark(11))
    assert(drainAll(after) == ((Seq(Watermark(11)), NothingAvailable)))
  }

  // ---- randomized: random queue contents, random arrival interleavings and batch sizes ----

  /** Each queue: data, increasing watermarks, optional idle messages and barriers 1..n in order, then
    * DoneItem. Some queues end before the last barrier.
    */
  private def randomQueues(random: Random, queueCount: Int, barriers: Int, idles: Boolean): Vector[Vector[Any]] =
    Vector.tabulate(queueCount) { q =>
      val lastBarrier = if (random.nextInt(4) == 0) random.nextInt(barriers + 1) else barriers
      var wm = 0L
      var index = 0
      val items = Vector.newBuilder[Any]
      def segment(): Unit = for (_ <- 0 until random.nextInt(5)) random.nextInt(6) match {
        case 0 => wm += random.nextInt(3); items += Watermark(wm)
        case 1 if idles => items += IdleMessage
        case _ => items += Data(q, index); index += 1
      }
      for (b <- 1 to lastBarrier) { segment(); items += Barrier(b.toLong) }
      segment()
      items += DoneItem
      items.result()
    }

  /** Offers the queues' contents in a random interleaving, draining with random batch sizes in between. */
  private def runRandomly(random: Random, guarantee: ProcessingGuarantee, queues: Vector[Vector[Any]]): Seq[Any] = {
    val s = new InboundEdgeStream(queues.size, guarantee)
    val offered = Array.fill(queues.size)(0)
    val out = ArrayBuffer.empty[Any]
    def drainOnce(): InboundProgress = {
      val inbox = new ArrayDequeInbox
      val progress = s.drainTo(inbox, 1 + random.nextInt(3))
      progress match {
        case Items(_) => while (!inbox.isEmpty) out += inbox.poll()
        case CoalescedWatermark(wm) => out += wm
        case Idle => out += IdleMessage
        case SnapshotBarrier(id) => out += Barrier(id)
        case _ =>
      }
      progress
    }
    while (queues.indices.exists(q => offered(q) < queues(q).size)) {
      if (random.nextBoolean()) drainOnce()
      else {
        val q = Iterator.continually(random.nextInt(queues.size)).find(q => offered(q) < queues(q).size).get
        s.offer(q, queues(q)(offered(q)))
        offered(q) += 1
      }
    }
    var calls = 0
    while (drainOnce() != Done) {
      calls += 1
      assert(calls < 10000, "the stream did not reach Done once everything was offered")
    }
    assert(s.isDone)
    out.toList
  }

  /** The checks that hold under every guarantee: each data item once, in its queue's order; each
    * barrier once, in order, after every data item that precedes it on its queue; watermarks rising.
    */
  private def checkCommon(queues: Vector[Vector[Any]], out: Seq[Any]): Unit = {
    val data = out.collect { case d: Data => d }
    assert(data.sorted(Ordering.by((d: Data) => (d.queue, d.index))) == queues.flatten.collect { case d: Data => d })
    for (q <- queues.indices) assert(data.filter(_.queue == q).map(_.index) == data.filter(_.queue == q).map(_.index).sorted)
    val allBarriers = queues.flatten.collect { case b: Barrier => b }.distinct.sortBy(_.snapshotId)
    assert(out.collect { case b: Barrier => b } == allBarriers)
    val wms = out.collect { case Watermark(ts) => ts }
    assert(wms == wms.distinct.sorted)
    for (b <- allBarriers; q <- queues.indices) {
      val at = out.indexOf(b)
      val before = queues(q).takeWhile(_ != b).collect { case d: Data => d }
      assert(before.forall(d => out.indexOf(d) < at), s"data of queue $q before $b must precede it")
    }
  }

  /** Without idle messages, a coalesced watermark W needs every queue to have sent a watermark >= W or
    * to be done, so all data before that point on every queue precedes W.
    */
  private def checkWatermarks(queues: Vector[Vector[Any]], out: Seq[Any]): Unit =
    for ((Watermark(w), at) <- out.zipWithIndex.collect { case (wm: Watermark, i) => (wm, i) }; q <- queues.indices) {
      val releasing = queues(q).indexWhere {
        case Watermark(ts) => ts >= w
        case DoneItem => true
        case _ => false
      }
      val before = queues(q).take(releasing).collect { case d: Data => d }
      assert(before.forall(d => out.indexOf(d) < at), s"data of queue $q before its watermark >= $w must precede it")
    }

  private def randomTrials(name: String)(trial: Random => Unit): Unit = {
    val seed = TestSeed.base
    val random = new Random(seed)
    withClue(s"$name, seed $seed: ") { for (_ <- 1 to 400) trial(random) }
  }

  test("exactly-once, random interleavings: the snapshot sees exactly the data before the barrier on every queue") {
    randomTrials("exactly-once") { random =>
      val queues = randomQueues(random, 1 + random.nextInt(4), random.nextInt(4), idles = random.nextBoolean())
      val out = runRandomly(random, ProcessingGuarantee.ExactlyOnce, queues)
      withClue(s"queues $queues, out $out: ") {
        checkCommon(queues, out)
        for (b <- out.collect { case b: Barrier => b }; q <- queues.indices if queues(q).contains(b)) {
          val after = queues(q).dropWhile(_ != b).collect { case d: Data => d }
          assert(after.forall(d => out.indexOf(d) > out.indexOf(b)), s"data of queue $q after $b must follow it")
        }
        if (!queues.flatten.contains(IdleMessage)) checkWatermarks(queues, out)
      }
    }
  }

  test("at-least-once, random interleavings: nothing is lost or duplicated and barriers follow their data") {
    randomTrials("at-least-once") { random =>
      val queues = randomQueues(random, 1 + random.nextInt(4), random.nextInt(4), idles = random.nextBoolean())
      val out = runRandomly(random, ProcessingGuarantee.AtLeastOnce, queues)
      withClue(s"queues $queues, out $out: ") {
        checkCommon(queues, out)
        if (!queues.flatten.contains(IdleMessage)) checkWatermarks(queues, out)
      }
    }
  }

  test("no guarantee, random interleavings: data and watermarks flow as without barriers") {
    randomTrials("no guarantee") { random =>
      val queues = randomQueues(random, 1 + random.nextInt(4), barriers = 0, idles = false)
      val out = runRandomly(random, ProcessingGuarantee.None, queues)
      withClue(s"queues $queues, out $out: ") {
        checkCommon(queues, out)
        checkWatermarks(queues, out)
      }
    }
  }
}

object InboundEdgeStreamTest {
  /** The `index`-th data item of queue `queue`. */
  final case class Data(queue: Int, index: Int)
}
