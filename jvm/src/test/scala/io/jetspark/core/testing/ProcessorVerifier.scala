package io.jetspark.core.testing

import io.jetspark.core._
import io.jetspark.core.snapshot.{SnapshotEntry, SnapshotFormat}

import scala.collection.mutable.ArrayBuffer

/** Runs one processor case under every delivery variant and checks that each gives the expected
  * output (Jet's TestSupport, in our terms):
  *  - inbox: one item per `process` call, or every item up to the next watermark at once;
  *  - outbox: roomy, or capacity 1 refusing every other offer (back-pressure at every step);
  *  - snapshots: none, or after every inbox batch save → bytes → fresh instance → restore;
  *    restore entries come one at a time or all at once.
  * Every call must make progress (take from the inbox, offer to the outbox, or return true).
  *
  * Input items that are [[Watermark]]s are given to `tryProcessWatermark` (as if already coalesced).
  * Inputs are fed in `inputOrder`, each completely, then `completeEdge` for it.
  *
  * {{{
  * ProcessorVerifier(() => new MyProcessor(...))
  *   .input(Seq(1, 2, Watermark(3)))
  *   .expectOutput(Seq(3, Watermark(3)))
  *   .verify()
  * }}}
  */
final case class ProcessorVerifier(
    supplier: () => Processor,
    inputs: Seq[Seq[Any]] = Seq(Seq.empty),
    inputOrder: Option[Seq[Int]] = None,
    expectedOutputs: Option[Seq[Seq[Any]]] = None,
    outputChecker: (Seq[Any], Seq[Any]) => Boolean = (e: Seq[Any], a: Seq[Any]) => e == a,
    snapshots: Boolean = true,
    progressAssertion: Boolean = true,
    callComplete: Boolean = true,
    outputOrdinals: Int = 1,
    afterComplete: Processor => Unit = _ => (),
    context: ProcessorContext = ProcessorContext("under-test", 0, 1),
) {
  def input(items: Seq[Any]): ProcessorVerifier = copy(inputs = Seq(items))
  def inputs(items: Seq[Seq[Any]]): ProcessorVerifier = copy(inputs = items)
  def feedInputsInOrder(order: Int*): ProcessorVerifier = copy(inputOrder = Some(order))
  def expectOutput(items: Seq[Any]): ProcessorVerifier = copy(expectedOutputs = Some(Seq(items)), outputOrdinals = 1)
  def expectOutputs(perOrdinal: Seq[Seq[Any]]): ProcessorVerifier =
    copy(expectedOutputs = Some(perOrdinal), outputOrdinals = perOrdinal.size)
  def checkOutputWith(checker: (Seq[Any], Seq[Any]) => Boolean): ProcessorVerifier = copy(outputChecker = checker)
  def anyOrder: ProcessorVerifier = checkOutputWith((e, a) => ProcessorVerifier.sameMultiset(e, a))
  def disableSnapshots: ProcessorVerifier = copy(snapshots = false)
  def disableProgressAssertion: ProcessorVerifier = copy(progressAssertion = false)
  def disableCompleteCall: ProcessorVerifier = copy(callComplete = false)
  def withContext(c: ProcessorContext): ProcessorVerifier = copy(context = c)
  /** Runs after `complete()` in every variant, e.g. to assert that the processor's state is empty. */
  def assertAfterComplete(check: Processor => Unit): ProcessorVerifier = copy(afterComplete = check)

  /** Runs every variant; returns the output of the first (for tests that compare against a reference). */
  def verify(): Seq[Seq[Any]] = {
    val variants = for {
      batched <- Seq(false, true)
      tiny <- Seq(false, true)
      snap <- if (snapshots) Seq(false, true) else Seq(false)
      restoreBatched <- if (snap) Seq(false, true) else Seq(false)
    } yield Variant(batched, tiny, snap, restoreBatched)
    val outputs = variants.map { v =>
      val out = new Run(v).run()
      expectedOutputs.foreach { expected =>
        expected.zip(out).zipWithIndex.foreach { case ((e, a), ordinal) =>
          if (!outputChecker(e, a))
            throw new AssertionError(s"$v, output ordinal $ordinal:\n  expected: ${e.mkString(", ")}\n  actual:   ${a.mkString(", ")}")
        }
      }
      out
    }
    outputs.head
  }

  private case class Variant(batchedInbox: Boolean, tinyOutbox: Boolean, snapshotEveryBatch: Boolean, restoreBatched: Boolean) {
    override def toString: String =
      s"[inbox ${if (batchedInbox) "batched" else "one-by-one"}, outbox ${if (tinyOutbox) "capacity 1, refusing every other offer" else "roomy"}" +
        (if (snapshotEveryBatch) s", snapshot+restore after every batch (restore ${if (restoreBatched) "batched" else "one-by-one"})" else "") + "]"
  }

  private final class TestOutbox(buckets: Int, tiny: Boolean) extends BufferedOutbox(buckets, if (tiny) 1 else Int.MaxValue) {
    var offers = 0
    private var refuseNext = false
    override protected def refuse(): Boolean = {
      offers += 1
      if (!tiny) false else { refuseNext = !refuseNext; !refuseNext }
    }
  }

  private final class Run(v: Variant) {
    private val outputs = Array.fill(outputOrdinals)(ArrayBuffer.empty[Any])
    private var outbox = new TestOutbox(outputOrdinals, v.tinyOutbox)
    private var processor = newInstance()

    private def newInstance(): Processor = {
      val p = supplier()
      p.init(outbox, context)
      p
    }

    private def drain(): Unit = (0 until outputOrdinals).foreach(i => outputs(i) ++= outbox.drainBucket(i))

    /** Calls `step` until it reports done, draining the outbox between calls. A call that neither
      * reports done, nor offers to the outbox, nor takes from `inbox` (when given) made no progress.
      */
    private def repeatUntilDone(what: String, inbox: Inbox = null)(step: => Boolean): Unit = {
      var calls = 0
      var done = false
      while (!done) {
        val offersBefore = outbox.offers
        val sizeBefore = if (inbox == null) 0 else inbox.size
        done = step
        val took = inbox != null && inbox.size < sizeBefore
        if (progressAssertion && !done && !took && outbox.offers == offersBefore)
          throw new AssertionError(s"$v: $what made no progress")
        drain()
        calls += 1
        if (calls > 1000000) throw new AssertionError(s"$v: $what did not finish after $calls calls")
      }
    }

    private def snapshotAndRestore(): Unit = {
      val saved = ArrayBuffer.empty[SnapshotEntry]
      repeatUntilDone("saveToSnapshot") {
        val done = processor.saveToSnapshot()
        saved ++= outbox.drainSnapshot().map { case (k, value) => SnapshotEntry(k, value) }
        done
      }
      if (outbox.buckets.exists(_.nonEmpty)) throw new AssertionError(s"$v: saveToSnapshot emitted items")
      val restored = SnapshotFormat.decode(SnapshotFormat.encode(saved.toSeq))
      processor.close()
      outbox = new TestOutbox(outputOrdinals, v.tinyOutbox)
      processor = newInstance()
      val batches = if (v.restoreBatched) Seq(restored) else restored.map(Seq(_))
      batches.filter(_.nonEmpty).foreach { batch =>
        val inbox = new ArrayDequeInbox
        inbox.addAll(batch)
        repeatUntilDone("restoreFromSnapshot", inbox) { processor.restoreFromSnapshot(inbox); inbox.isEmpty }
      }
      repeatUntilDone("finishSnapshotRestore")(processor.finishSnapshotRestore())
    }

    def run(): Seq[Seq[Any]] = {
      val order = inputOrder.getOrElse(inputs.indices)
      for (ordinal <- order) {
        val items = inputs(ordinal)
        var i = 0
        while (i < items.size) {
          items(i) match {
            case wm: Watermark =>
              repeatUntilDone(s"tryProcessWatermark($wm)")(processor.tryProcessWatermark(wm))
              i += 1
            case _ =>
              var end = i + 1
              if (v.batchedInbox) while (end < items.size && !items(end).isInstanceOf[Watermark]) end += 1
              val inbox = new ArrayDequeInbox
              inbox.addAll(items.slice(i, end))
              repeatUntilDone(s"process($ordinal, ${items.slice(i, end).mkString(", ")})", inbox) {
                processor.process(ordinal, inbox)
                inbox.isEmpty
              }
              i = end
          }
          if (v.snapshotEveryBatch) snapshotAndRestore()
        }
        repeatUntilDone(s"completeEdge($ordinal)")(processor.completeEdge(ordinal))
      }
      if (callComplete) {
        repeatUntilDone("complete")(processor.complete())
        afterComplete(processor)
      }
      processor.close()
      outputs.map(_.toList).toList
    }
  }
}

object ProcessorVerifier {
  def sameMultiset(expected: Seq[Any], actual: Seq[Any]): Boolean =
    expected.groupBy(identity).view.mapValues(_.size).toMap == actual.groupBy(identity).view.mapValues(_.size).toMap
}
