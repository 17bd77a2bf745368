package io.jetspark.core.window

import io.jetspark.core.{ArrayDequeInbox, BufferedOutbox, Processor, ProcessorContext, Watermark}
import io.jetspark.core.snapshot.{SnapshotEntry, SnapshotFormat}
import io.jetspark.core.testing.ProcessorVerifier

import scala.util.Random

/** Shared fixtures of the window tests: the event type, output comparison and random inputs. */
object WindowTestSupport {
  final case class Ev(ts: Long, key: String = "a", value: Long = 1)

  def e(ts: Long): Ev = Ev(ts)
  def wm(ts: Long): Watermark = Watermark(ts)

  /** Gives `events` to a fresh `p` in one inbox (for a processor that throws on one of them). */
  def processAll(p: Processor, events: Any*): Unit = {
    p.init(new BufferedOutbox(1, Int.MaxValue), ProcessorContext("window", 0, 1))
    val inbox = new ArrayDequeInbox()
    inbox.addAll(events)
    p.process(0, inbox)
  }

  /** The output cut after each watermark; the last piece holds what follows the last watermark. */
  def segments(items: Seq[Any]): Seq[Seq[Any]] = {
    val (done, rest) = items.foldLeft((Vector.empty[Seq[Any]], Vector.empty[Any])) {
      case ((segs, cur), w: Watermark) => (segs :+ (cur :+ w), Vector.empty)
      case ((segs, cur), item) => (segs, cur :+ item)
    }
    done :+ rest
  }

  def endOf(item: Any): Long = item match {
    case r: WindowResult[_] => r.end
    case r: KeyedWindowResult[_, _] => r.end
    case f: KeyedFrame[_, _] => f.frameEnd
    case other => throw new IllegalArgumentException(s"not a window item: $other")
  }

  /** Equal watermark by watermark: between two watermarks the same items in any order (keys that close a
    * window at the same time come in no fixed order), and the actual ones in non-decreasing end order:
    * windows across keys, a first stage's frames per key (the processor's contract).
    * `normalize` maps every item first (e.g. to sort list results whose order is not specified).
    */
  def sameSegments(normalize: Any => Any)(expected: Seq[Any], actual: Seq[Any]): Boolean = {
    val (es, as) = (segments(expected.map(normalize)), segments(actual.map(normalize)))
    es.size == as.size && es.zip(as).forall { case (e, a) =>
      val inEndOrder = a.filterNot(_.isInstanceOf[Watermark]).groupBy {
        case f: KeyedFrame[_, _] => Some(f.key)
        case _ => None
      }.values.forall { items => val ends = items.map(endOf); ends == ends.sorted }
      ProcessorVerifier.sameMultiset(e, a) && inEndOrder
    }
  }

  val asIs: Any => Any = identity

  /** Sorts list results: their order is not specified where partial frames from several instances or
    * merged sessions are combined.
    */
  val sortListResults: Any => Any = {
    case r: WindowResult[_] => r.copy(result = sortIfList(r.result))
    case r: KeyedWindowResult[_, _] => r.copy(result = sortIfList(r.result))
    case other => other
  }
  private def sortIfList(result: Any): Any = result match {
    case l: List[_] => l.asInstanceOf[List[Ev]].sortBy(e => (e.ts, e.key, e.value))
    case other => other
  }

  /** Random events (timestamps mostly in [-20, 60], a few far ahead in [300, 400] to leave long gaps;
    * roughly in order, some far out of order) with monotone watermarks between them, some jumping far
    * ahead, that make some events late.
    */
  def randomEventsAndWatermarks(rnd: Random, keys: Seq[String]): Seq[Any] = {
    def ts() = if (rnd.nextInt(20) == 0) 300L + rnd.nextInt(101) else rnd.nextInt(81) - 20L
    val events = Vector.fill(rnd.nextInt(40))(Ev(ts(), keys(rnd.nextInt(keys.size)), rnd.nextInt(100).toLong))
    val disordered = events.map(ev => (ev.ts + rnd.nextInt(31) - 15, ev)).sortBy(_._1).map(_._2)
    var w = -25L
    def advance() = w += (if (rnd.nextInt(30) == 0) 100 + rnd.nextInt(300) else rnd.nextInt(11))
    disordered.flatMap { ev =>
      if (rnd.nextInt(10) < 3) { advance(); Seq(Watermark(w), ev) } else Seq(ev)
    } ++ (if (rnd.nextBoolean()) Seq(Watermark(w + rnd.nextInt(30))) else Nil)
  }

  /** Splits the events among `n` upstream instances; each sees every watermark. */
  def partition(rnd: Random, items: Seq[Any], n: Int): Seq[Seq[Any]] = {
    val owner = items.map(_ => rnd.nextInt(n))
    (0 until n).map(p => items.zip(owner).collect { case (w: Watermark, _) => w; case (item, o) if o == p => item })
  }

  /** What a second stage receives from first stages that each forward every watermark: between two
    * watermarks, the frames of every instance, then the (coalesced) watermark.
    */
  def mergeUpstreamOutputs(outputs: Seq[Seq[Any]]): Seq[Any] = {
    val segs = outputs.map(segments)
    require(segs.map(_.size).distinct.size == 1, "upstream instances saw different watermarks")
    segs.head.indices.flatMap { i =>
      val parts = segs.map(_(i))
      parts.flatMap(_.filterNot(_.isInstanceOf[Watermark])) ++ parts.head.lastOption.collect { case w: Watermark => w }
    }
  }

  /** Drives a processor by hand, for what the verifier does not exercise (`tryProcess`, state between
    * calls). `outboxCapacity` 1 refuses every second item of a burst.
    */
  final class Driver[P <: Processor](val processor: P, outboxCapacity: Int = Int.MaxValue, instance: Int = 0) {
    private val outbox = new BufferedOutbox(1, outboxCapacity)
    processor.init(outbox, ProcessorContext("window-under-test", instance, 2))

    /** Processes `items` (which our window processors take without emitting). */
    def process(items: Any*): Unit = {
      val inbox = new ArrayDequeInbox
      inbox.addAll(items)
      processor.process(0, inbox)
      assert(inbox.isEmpty && outbox.drainBucket(0).isEmpty)
    }

    def snapshot(): Seq[SnapshotEntry] = {
      val saved = Seq.newBuilder[SnapshotEntry]
      var done = false
      while (!done) { done = processor.saveToSnapshot(); saved ++= outbox.drainSnapshot().map { case (k, v) => SnapshotEntry(k, v) } }
      SnapshotFormat.decode(SnapshotFormat.encode(saved.result()))
    }

    def restore(entries: Seq[SnapshotEntry]): Unit = {
      val inbox = new ArrayDequeInbox
      inbox.addAll(entries)
      processor.restoreFromSnapshot(inbox)
      assert(inbox.isEmpty && processor.finishSnapshotRestore())
    }

    /** Repeats `step` until it returns true; returns what it emitted. */
    def run(step: P => Boolean): Seq[Any] = {
      val out = Seq.newBuilder[Any]
      var done = false
      while (!done) { done = step(processor); out ++= outbox.drainBucket(0) }
      out.result()
    }
  }
}
