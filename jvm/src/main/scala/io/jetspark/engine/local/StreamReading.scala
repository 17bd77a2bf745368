package io.jetspark.engine.local

import io.jetspark.core.{Processor, ProcessorContext}
import io.jetspark.core.eventtime.{EventTimePolicy, InsertWatermarksProcessor, SubstreamItem}
import io.jetspark.pipeline.definition.SourceDefinition

/** A stream source read by `parallelism` processors: what each instance reads, its items tagged with
  * their substream's index on that instance ([[SubstreamItem]]), and [[NothingDue]] while the stream has
  * no item yet.
  */
private[local] sealed trait StreamReading {
  def substreamCount(instance: Int): Int
  def read(instance: Int): Iterator[Any]

  /** The processors that give the instances' [[Timestamped]] items their substreams' watermarks. */
  def watermarks(allowedLagMs: Long): ProcessorContext => Processor = {
    val policy = EventTimePolicy[Any](_.asInstanceOf[Timestamped].timestamp, allowedLagMs)
    c => new InsertWatermarksProcessor(policy, math.max(1, substreamCount(c.globalProcessorIndex)))
  }
}

private[local] object StreamReading {
  /** How `source` is read, if it is a stream the local engine reads; a rate stream's items are due from `now`. */
  def of(source: SourceDefinition, parallelism: Int, now: Long): Option[StreamReading] = source.name match {
    case "itemsStream" => Some(ItemsStreamReading(source.parameters, parallelism))
    case "rateStream" => Some(RateStreamReading(source.parameters("itemsPerSecond").asInstanceOf[Long],
      source.parameters("partitions").asInstanceOf[Int], parallelism, now))
    case _ => None
  }
}

/** What a stream source's iterator gives when its next item is not due yet: the tasklet lets its processor
  * take its timed steps and asks again later.
  */
private[local] case object NothingDue

/** `Sources.itemsStream`: instance i reads substreams i, i + p, ..., so that each substream stays in order
  * on one instance, `itemsPerBatch` items of each in turn (as the Spark engine's micro-batches cut them).
  */
private[local] final case class ItemsStreamReading(parameters: Map[String, Any], parallelism: Int) extends StreamReading {
  private val partitions = parameters("partitions").asInstanceOf[Seq[Seq[Any]]]
  private val perTurn = parameters("itemsPerBatch").asInstanceOf[Int]

  private def substreamsOf(instance: Int): Seq[Seq[Any]] = partitions.indices.filter(_ % parallelism == instance).map(partitions)

  override def substreamCount(instance: Int): Int = substreamsOf(instance).size

  override def read(instance: Int): Iterator[SubstreamItem] = {
    val substreams = substreamsOf(instance)
    val longest = substreams.map(_.size).maxOption.getOrElse(0)
    Iterator.range(0, longest, perTurn).flatMap { start =>
      substreams.indices.iterator.flatMap(sub => substreams(sub).slice(start, start + perTurn).map(SubstreamItem(sub, _)))
    }
  }
}

/** `Sources.rate_stream`, as the Spark engine's source numbers it (`connector.RateStreamSource`): item g of
  * the stream is due at `start + floor(g * 1000 / itemsPerSecond)` ms, its timestamp, and is
  * `SimpleEvent(timestamp, g div partitions)` of substream `g mod partitions`; instance i reads substreams
  * i, i + p, ... Unbounded: it ends only when the job is cancelled.
  */
private[local] final case class RateStreamReading(itemsPerSecond: Long, partitions: Int, parallelism: Int, start: Long)
    extends StreamReading {
  private def substreamsOf(instance: Int): IndexedSeq[Int] = (0 until partitions).filter(_ % parallelism == instance)

  override def substreamCount(instance: Int): Int = substreamsOf(instance).size

  override def read(instance: Int): Iterator[Any] = {
    val mine = substreamsOf(instance)
    if (mine.isEmpty) return Iterator.empty
    var g = mine.head.toLong
    def advance(): Unit = { g += 1; while (!mine.contains((g % partitions).toInt)) g += 1 }
    Iterator.continually {
      val due = start + g * 1000 / itemsPerSecond
      if (System.currentTimeMillis() < due) NothingDue
      else {
        val item = SubstreamItem(mine.indexOf((g % partitions).toInt), io.jetspark.item.SimpleEvent(due, g / partitions))
        advance()
        item
      }
    }
  }
}
