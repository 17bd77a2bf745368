package io.jetspark.python

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.jetspark.core.aggregate.AggregateOperation
import io.jetspark.item.PythonValues
import io.jetspark.pipeline._
import io.jetspark.pipeline.definition._

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/** Rebuilds a [[Pipeline]] from the JSON that the Python layer records (`Pipeline.to_json()` in
  * python/jetspark/pipeline.py), by calling the Scala Pipeline API: Python never plans, and every
  * definition rule is applied here, in one place, as for Scala users.
  *
  * Values that are not JSON (Python callables, Columns, DataFrames, items) are numbered `ref`s into
  * `objects`. When `objects` is null (`explain()`: nothing is run), placeholders that keep each value's
  * name stand in for them.
  */
final class PipelineSpecReader private (objects: java.util.List[AnyRef]) {
  private val stages = mutable.Map.empty[Int, AnyRef]

  private def ref(spec: JsonNode): AnyRef =
    if (objects == null) null else objects.get(spec.get("ref").asInt)

  private def extractor(spec: JsonNode): Extractor = spec.get("kind").asText match {
    case "field" => Extractor.FieldName(spec.get("name").asText)
    case "column" => Extractor.ColumnExpr(Option(ref(spec)).getOrElse(spec.get("name").asText))
    case "python" => Extractor.PythonFn(PythonRef(spec.get("ref").asInt), spec.get("name").asText)
    case other => throw new IllegalArgumentException(s"unknown extractor kind '$other'")
  }

  private def optional(spec: JsonNode): Option[JsonNode] = Option(spec).filterNot(_.isNull)

  private def stringMap(spec: JsonNode): Map[String, String] =
    optional(spec).fold(Map.empty[String, String])(_.properties().asScala.map(e => e.getKey -> e.getValue.asText).toMap)

  private def source(spec: JsonNode): SourceDefinition = {
    val params = spec.get("params")
    val refs = spec.get("refs")
    def byRef(name: String): AnyRef = if (objects == null || !refs.has(name)) null else objects.get(refs.get(name).asInt)
    spec.get("kind").asText match {
      case "items" =>
        // Python sends the items' pickles packed in one byte array (see jetspark._items.pack_frames).
        val items = Option(byRef("items")).map(packed => PythonValues.unpackFrames(packed.asInstanceOf[Array[Byte]]))
        Sources.items(items.getOrElse(Seq.fill(params.get("count").asInt)(null)))
      case "dataframe" if spec.get("stream").asBoolean =>
        Sources.streamingDataframe(byRef("df"), optional(params.get("substream")).map(_.asText))
      case "dataframe" => Sources.dataframe(byRef("df"))
      case "files" => Sources.files(params.get("path").asText, params.get("format").asText, stringMap(params.get("options")))
      case "items_stream" =>
        // Each substream's pickles packed in one byte array, as for `items`.
        val partitions = Option(byRef("partitions")).map(_.asInstanceOf[java.util.List[_]].asScala.toSeq
          .map(packed => PythonValues.unpackFrames(packed.asInstanceOf[Array[Byte]]))).getOrElse(Seq.fill(params.get("partitions").asInt)(Seq.empty))
        Sources.itemsStream(partitions, params.get("items_per_batch").asInt)
      case "rate_stream" => Sources.rateStream(params.get("items_per_second").asLong, params.get("partitions").asInt)
      case "kafka" =>
        // A deserializer by name, or a Python function the engine hands back by its number.
        def deserializer(part: String): Any = optional(params.get(part)).map(_.asText).getOrElse(PythonRef(refs.get(part).asInt))
        Sources.kafka(params.get("bootstrap_servers").asText, params.get("topic").asText, params.get("subscription").asText,
          stringMap(params.get("options")), deserializer("key_deserializer"), deserializer("value_deserializer"))
      case other => throw new IllegalArgumentException(s"unknown source kind '$other'")
    }
  }

  private def sink(spec: JsonNode): SinkDefinition = {
    val params = spec.get("params")
    spec.get("kind").asText match {
      case "list" => Sinks.list(params.get("name").asText)
      case "console" => Sinks.console()
      case "noop" => Sinks.noop()
      case "files" => Sinks.files(params.get("path").asText, params.get("format").asText, params.get("mode").asText,
        stringMap(params.get("options")), optional(params.get("schema")).map(_.asText))
      case "kafka" =>
        val refs = spec.get("refs")
        def function(part: String): Option[AnyRef] = Option.when(refs.has(part))(PythonRef(refs.get(part).asInt))
        Sinks.kafka(params.get("bootstrap_servers").asText, params.get("topic").asText, stringMap(params.get("options")),
          function("key"), function("value"))
      // The function stays in Python: the engine hands its number back when the sink runs.
      case "foreach_batch" => Sinks.foreachBatch(if (objects == null) "python function" else PythonRef(spec.get("refs").get("fn").asInt),
        optional(params.get("schema")).map(_.asText))
      case "dead_letter" => Sinks.deadLetter(params.get("name").asText)
      case other => throw new IllegalArgumentException(s"unknown sink kind '$other'")
    }
  }

  private def window(spec: JsonNode): WindowDefinition = {
    val early = optional(spec.get("early_results_period_ms")).fold(0L)(_.asLong)
    spec.get("kind").asText match {
      case "sliding" => WindowDefinition.sliding(spec.get("size_ms").asLong, spec.get("slide_ms").asLong).setEarlyResultsPeriod(early)
      case "session" => WindowDefinition.session(spec.get("timeout_ms").asLong).setEarlyResultsPeriod(early)
      case other => throw new IllegalArgumentException(s"unknown window kind '$other'")
    }
  }

  private def op(spec: JsonNode): AggregateOperation[_, _, _] = PythonAggregateSpec(spec.toString,
    spec.get("can_combine").asBoolean, spec.get("can_deduct").asBoolean, spec.get("order_sensitive").asBoolean,
    columnRefs(spec).flatMap(r => Option(objects).map(o => r -> o.get(r))).toMap)

  /** The refs of the Column extractors anywhere in an operation's spec (all_of parts included). */
  private def columnRefs(spec: JsonNode): Seq[Int] =
    (if (spec.path("kind").asText == "column") Seq(spec.get("ref").asInt) else Nil) ++
      spec.elements().asScala.flatMap(columnRefs)

  /** The stage `node` reads on input `i`, with the rebalance the Python side recorded on that input. */
  private def input(node: JsonNode, i: Int): AnyRef = {
    val upstream = stages(node.get("inputs").get(i).asInt)
    val rebalance = node.get("rebalance").get(i)
    if (rebalance.isNull) upstream
    else {
      def apply[S <: GeneralStage[S]](s: S): S =
        if (rebalance.isTextual) s.rebalance() else s.rebalance(extractor(rebalance.get("key")))
      upstream match {
        case s: BatchStage => apply(s)
        case s: StreamStage => apply(s)
        case other => throw new IllegalArgumentException(s"cannot rebalance $other")
      }
    }
  }

  private def keyed(node: JsonNode, stage: AnyRef, i: Int): AnyRef = {
    val key = extractor(node.get("keys").get(i))
    stage match {
      case s: BatchStage => s.groupingKey(key)
      case s: StreamStage => s.groupingKey(key)
      case other => throw new IllegalArgumentException(s"cannot group $other by key")
    }
  }

  private def hasKey(node: JsonNode): Boolean = node.get("keys").size > 0 && !node.get("keys").get(0).isNull

  private def add(node: JsonNode): AnyRef = {
    val args = node.get("args")
    def fn(name: String): Extractor = extractor(args.get(name))
    def in0 = input(node, 0)
    def general: GeneralStage[_ <: AnyRef] = in0.asInstanceOf[GeneralStage[_ <: AnyRef]]
    val stage: AnyRef = node.get("op").asText match {
      case "source" => null // added by read(); never reached
      case "map" => general.map(fn("fn"))
      case "filter" => general.filter(fn("fn"))
      case "flat_map" => general.flatMap(fn("fn"))
      case "peek" => general.peek(optional(args.get("fn")).fold[Extractor](Extractor.WholeItem)(extractor))
      case "merge" => (in0, input(node, 1)) match {
        case (a: BatchStage, b: BatchStage) => a.merge(b)
        case (a: StreamStage, b: StreamStage) => a.merge(b)
        case (a, b) => throw new IllegalArgumentException(s"cannot merge $a with $b")
      }
      case "map_stateful" if hasKey(node) =>
        keyed(node, in0, 0).asInstanceOf[GeneralStageWithKey[_ <: AnyRef]].mapStateful(fn("create_fn"), fn("fn"))
      case "map_stateful" => general.mapStateful(fn("create_fn"), fn("fn"))
      case "rolling_aggregate" if hasKey(node) =>
        keyed(node, in0, 0).asInstanceOf[GeneralStageWithKey[_ <: AnyRef]].rollingAggregate(op(args.get("op")))
      case "rolling_aggregate" => general.rollingAggregate(op(args.get("op")))
      case "hash_join" | "inner_hash_join" | "hash_join2" | "inner_hash_join2" =>
        // `clause` for one enriching side; `clause1`, `clause2` for hash_join2 (Jet's hashJoin2).
        val clauses = Seq("clause", "clause1", "clause2").flatMap(name => optional(args.get(name)))
        val sides = clauses.zipWithIndex.map { case (clause, i) =>
          input(node, i + 1).asInstanceOf[BatchStage] -> JoinClause(extractor(clause.get("left_key")), extractor(clause.get("right_key")))
        }
        general.hashJoin(sides, Some(fn("mapper")), inner = node.get("op").asText.startsWith("inner_"))
      case "aggregate" if hasKey(node) => keyed(node, in0, 0) match {
        case k: BatchStageWithKey => k.aggregate(op(args.get("op")))
        case other => throw new IllegalArgumentException(s"aggregate of $other")
      }
      case "aggregate" => in0.asInstanceOf[BatchStage].aggregate(op(args.get("op")))
      case "aggregate2" if hasKey(node) =>
        keyed(node, in0, 0).asInstanceOf[BatchStageWithKey]
          .aggregate2(keyed(node, input(node, 1), 1).asInstanceOf[BatchStageWithKey], op(args.get("op0")), op(args.get("op1")))
      case "aggregate2" =>
        in0.asInstanceOf[BatchStage].aggregate2(input(node, 1).asInstanceOf[BatchStage], op(args.get("op0")), op(args.get("op1")))
      case "distinct" if hasKey(node) => keyed(node, in0, 0) match {
        case k: BatchStageWithKey => k.distinct()
        case other => throw new PipelineDefinitionError(node.get("name").asText(s"distinct#${node.get("id").asInt}"),
          "distinct is for batch stages", s"$other has no distinct(); a stream's distinct needs a window")
      }
      case "distinct" => in0.asInstanceOf[BatchStage].distinct()
      case "sort" =>
        val s = in0.asInstanceOf[BatchStage]
        optional(args.get("key")).fold(s.sort(args.get("reverse").asBoolean))(k => s.sort(extractor(k), args.get("reverse").asBoolean))
      case "add_timestamps" => in0 match {
        case s: BatchStage => s.addTimestamps(fn("ts"), args.get("allowed_lag_ms").asLong)
        case other => throw new IllegalArgumentException(s"add_timestamps of $other: a stream has its timestamps from its source")
      }
      case "window_aggregate" if hasKey(node) =>
        keyed(node, in0, 0).asInstanceOf[StreamStageWithKey].window(window(args.get("window"))).aggregate(op(args.get("op")))
      case "window_aggregate" => in0.asInstanceOf[StreamStage].window(window(args.get("window"))).aggregate(op(args.get("op")))
      case "sink" => general.writeTo(sink(args.get("sink")))
      case other => throw new IllegalArgumentException(s"unknown transform '$other'")
    }
    stage
  }

  private def configure(node: JsonNode, stage: AnyRef): AnyRef = {
    val name = optional(node.get("name")).map(_.asText)
    val parallelism = optional(node.get("local_parallelism")).map(_.asInt)
    val onError = optional(node.get("on_error")).map(sink)
    stage match {
      case s: GeneralStage[_] =>
        name.foreach(s.setName); parallelism.foreach(s.setLocalParallelism); onError.foreach(s.onError); s
      case s: SinkStage => name.foreach(s.setName); parallelism.foreach(s.setLocalParallelism); onError.foreach(s.onError); s
      case s: StreamSourceStage => name.foreach(s.setName); parallelism.foreach(s.setLocalParallelism); onError.foreach(s.onError); s
      case other => other
    }
  }

  def read(json: String): Pipeline = {
    val root = new ObjectMapper().readTree(json)
    val pipeline = Pipeline.create(root.get("preserve_order").asBoolean)
    root.get("nodes").elements().asScala.foreach { node =>
      val stage = node.get("op").asText match {
        case "source" =>
          val source = configure(node, this.source(node.get("args").get("source")) match {
            case s: BatchSource => pipeline.readFrom(s)
            case s: StreamSource => pipeline.readFrom(s)
          })
          timestamps(node.get("args"), source)
        case _ => configure(node, add(node))
      }
      stages(node.get("id").asInt) = stage
    }
    pipeline
  }

  private def timestamps(args: JsonNode, source: AnyRef): AnyRef = (source, optional(args.get("timestamps"))) match {
    case (s: StreamSourceStage, Some(ts)) => ts.get("kind").asText match {
      case "with_timestamps" => s.withTimestamps(extractor(ts.get("ts")), ts.get("allowed_lag_ms").asLong)
      case "with_native_timestamps" => s.withNativeTimestamps(ts.get("allowed_lag_ms").asLong)
      case "with_ingestion_timestamps" => s.withIngestionTimestamps()
      case "without_timestamps" => s.withoutTimestamps()
      case other => throw new IllegalArgumentException(s"unknown timestamp choice '$other'")
    }
    case (other, _) => other
  }
}

object PipelineSpecReader {
  /** The pipeline that `json` describes; `objects` holds the values its `ref`s number, or is null. */
  def read(json: String, objects: java.util.List[AnyRef]): Pipeline = new PipelineSpecReader(objects).read(json)
}

