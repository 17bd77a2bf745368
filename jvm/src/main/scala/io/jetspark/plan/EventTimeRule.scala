package io.jetspark.plan

import io.jetspark.pipeline.{Extractor, PipelineDefinitionError, TimestampPolicy}
import io.jetspark.pipeline.transform._

/** How a window reads the timestamp of each item it receives.
  *
  * Items carry no timestamp of their own on the engines: the window applies the extractor that gave the
  * items their event time (`addTimestamps`, or a stream source's `withTimestamps`) to each item it
  * receives. That is the item the extractor was meant for as long as only stages that pass items on
  * unchanged (filter, peek; a merge of inputs timestamped the same way) stand in between. A window's own
  * results have their window's end as timestamp (Jet's rule), read as their `end` field.
  *
  * {{{
  *   items --> addTimestamps("ts") --> filter --> window      the window reads field 'ts'
  *   items --> addTimestamps("ts") --> map -----> window      definition error: map changes the items
  * }}}
  * Stream sources with native or ingestion timestamps stamp items at the source, so their windows have
  * no extractor to read with; that is for a streaming engine to carry.
  */
private[plan] object EventTimeRule {

  /** The extractor the window applies to its items, when the items it receives are those stamped. */
  def timestamp(w: WindowAggregateTransform): Option[Extractor] = readAt(w.upstream.head).toOption

  /** A window fed by `addTimestamps` must be able to read its items' timestamps. */
  def requireReadable(t: Transform): Unit = t match {
    case w: WindowAggregateTransform if stampedBy(w.upstream.head).nonEmpty =>
      readAt(w.upstream.head).left.foreach { changer =>
        throw new PipelineDefinitionError(w.name, PipelineDefinitionError.WindowTimestampsFromItems,
          s"the window reads each item's timestamp with the extractor given to addTimestamps, but '${changer.name}' " +
            s"(${changer.describe}) stands in between and changes the items; add the timestamps after it")
      }
    case _ =>
  }

  /** The extractor that reads the timestamp of `t`'s output items, or the stage that prevents it. */
  private def readAt(t: Transform): Either[Transform, Extractor] = t match {
    case a: AddTimestampsTransform => Right(a.timestamp)
    case s: StreamSourceTransform => s.timestamps match {
      case Some(TimestampPolicy.FromItems(ts, _)) => Right(ts)
      case _ => Left(s)
    }
    case _: WindowAggregateTransform => Right(Extractor.FieldName("end"))
    case _: FilterTransform | _: PeekTransform => readAt(t.upstream.head)
    case m: MergeTransform =>
      val each = m.upstream.map(readAt)
      each.collectFirst { case Left(changer) => changer }.map(Left(_)).getOrElse {
        val extractors = each.collect { case Right(e) => e }.distinct
        if (extractors.size == 1) Right(extractors.head) else Left(m)
      }
    case other => Left(other)
  }

  /** The `addTimestamps` transforms whose items reach `t` (up to the nearest window). */
  private def stampedBy(t: Transform): Seq[AddTimestampsTransform] = t match {
    case a: AddTimestampsTransform => Seq(a)
    case _: WindowAggregateTransform => Nil
    case other => other.upstream.flatMap(stampedBy)
  }
}
