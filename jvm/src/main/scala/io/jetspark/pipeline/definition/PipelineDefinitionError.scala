package io.jetspark.pipeline.definition

/** A pipeline that breaks a definition rule. The message names the stage and the rule; `rule` is one of
  * the identifiers in the companion, so callers (and the Python mirror) can tell the rules apart.
  */
final class PipelineDefinitionError(val stage: String, val rule: String, val detail: String)
    extends RuntimeException(s"stage '$stage' breaks rule '$rule': $detail")

object PipelineDefinitionError {
  /** Two stages have the same name (names identify stages in errors, metrics and dead letters). */
  val UniqueStageNames = "unique-stage-names"
  /** A stage that is not a sink has nothing attached downstream. */
  val UnattachedStage = "unattached-stage"
  /** A stream source was read without choosing timestamps (withTimestamps, withNativeTimestamps, ...). */
  val StreamSourceTimestamps = "stream-source-timestamps"
  /** Timestamps of a stream source were chosen twice. */
  val TimestampsAlreadyChosen = "timestamps-already-chosen"
  /** A sliding window's size is not a multiple of its slide. */
  val SlidingSizeMultipleOfSlide = "sliding-size-multiple-of-slide"
  /** A window size, slide, session timeout or early-results period is not positive. */
  val PositiveWindowValues = "positive-window-values"
  /** `window()` on items without event timestamps (a batch stage, or a stream read `withoutTimestamps`). */
  val WindowNeedsTimestamps = "window-needs-timestamps"
  /** A window reads the timestamp each item carries from `addTimestamps`, so only stages that carry it
    * (map, filter, flatMap, peek, merge, rebalance) may stand between `addTimestamps` and the window.
    */
  val WindowTimestampsFromItems = "window-timestamps-from-items"
  /** A sliding window longer than its slide, or a session window, over an operation that cannot combine
    * partial accumulators: frames combine into windows, and an event that bridges two sessions merges
    * them (Jet's rule; a tumbling window is one frame and needs no combine).
    */
  val WindowNeedsCombine = "window-needs-combine"
  /** `rebalance()` directly before a non-keyed stateful transform (mapStateful, rollingAggregate). */
  val RebalanceBeforeStateful = "rebalance-before-stateful"
  /** `rebalance()` without a key upstream of an order-sensitive stage while preserve order is on. */
  val UnkeyedRebalanceBreaksOrder = "unkeyed-rebalance-breaks-order"
  /** Stages of different pipelines were combined. */
  val SamePipeline = "same-pipeline"
  /** A local parallelism that is neither positive nor -1 (the default). */
  val LocalParallelism = "local-parallelism"
  /** An aggregate operation of the wrong arity for the call. */
  val AggregateArity = "aggregate-arity"
  /** `onError` needs a dead-letter sink. */
  val OnErrorSink = "on-error-sink"
  /** A pipeline with no source. */
  val EmptyPipeline = "empty-pipeline"
  /** A stream job under EXACTLY_ONCE writes to a sink that writes a replayed epoch again (the console). */
  val ExactlyOnceSink = "exactly-once-sink"
}
