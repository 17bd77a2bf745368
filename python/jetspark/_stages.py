"""The stages of a pipeline (Jet's ``BatchStage``, ``StreamStage`` and their keyed and windowed forms):
each call checks its arguments and records one transform (:mod:`jetspark._transforms`) in the stage's
pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from jetspark._extractors import Extractor, ExtractorLike, extractor, optional_extractor
from jetspark._transforms import Node, checked_callable, checked_dead_letter_sink, checked_operation, checked_window
from jetspark.aggregate import AggregateOperation
from jetspark.errors import PipelineDefinitionError
from jetspark.sinks import Sink
from jetspark.window import WindowDefinition


class Recorder(Protocol):
    """Where a stage records the transforms called on it: its pipeline (:class:`jetspark.Pipeline`)."""

    def _add(self, op: str, is_stream: bool, upstream: list[Stage], keys: list[Extractor | None] | None = None,
             args: dict[str, Any] | None = None) -> Node: ...


@dataclass(frozen=True)
class JoinClause:
    """How a hash join matches: ``left_key`` of the streamed item equals ``right_key`` of the enriching item.

    Examples
    --------
    >>> JoinClause.on("user_id", "id").right_key.value
    'id'
    """

    left_key: Extractor
    right_key: Extractor

    @staticmethod
    def on(left_key: ExtractorLike, right_key: ExtractorLike) -> JoinClause:
        return JoinClause(extractor(left_key, "JoinClause.on(left_key)"), extractor(right_key, "JoinClause.on(right_key)"))


class Stage:
    """What every stage shares: its pipeline, its node, and a pending rebalance for the next transform."""

    def __init__(self, pipeline: Recorder, node: Node, rebalance: Any = None) -> None:
        self._pipeline = pipeline
        self._node = node
        self._rebalance = rebalance

    @property
    def name(self) -> str:
        return self._node.label()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    def set_local_parallelism(self, n: int) -> Any:
        """How many parallel instances run this stage: on Spark, its partitions across the whole cluster
        (Jet's is per member); in a light job, its processors."""
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"set_local_parallelism(n): n must be a positive int, not {n!r}")
        self._node.local_parallelism = n
        return self

    def set_name(self, name: str) -> Any:
        """Names the stage in plans, metrics and errors."""
        if not isinstance(name, str) or not name:
            raise ValueError("set_name(name): name must be a non-empty string")
        self._node.name = name
        return self


class _ComputeStage(Stage):
    """Transforms shared by batch and stream stages (Jet's ``GeneralStage``)."""

    def _next(self, transform: str, upstream: list[Stage] | None = None, keys: list[Extractor | None] | None = None,
              **args: Any) -> Any:
        node = self._pipeline._add(transform, self._node.is_stream, upstream or [self], keys, args)
        return type(self)(self._pipeline, node)

    def map(self, fn: Callable[[Any], Any]) -> Any:
        """Each item becomes ``fn(item)``; ``None`` results are dropped (Jet's ``map``)."""
        return self._next("map", fn=checked_callable(fn, "map(fn)"))

    def filter(self, fn: Callable[[Any], bool]) -> Any:
        """Keeps the items for which ``fn(item)`` is true."""
        return self._next("filter", fn=checked_callable(fn, "filter(fn)"))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Any:
        """Each item becomes the items of the iterable ``fn(item)``."""
        return self._next("flat_map", fn=checked_callable(fn, "flat_map(fn)"))

    def peek(self, fn: Callable[[Any], str] | None = None) -> Any:
        """Passes items on unchanged and logs each one, formatted by ``fn`` (default ``str``)."""
        return self._next("peek", fn=None if fn is None else checked_callable(fn, "peek(fn)"))

    def merge(self, other: Any) -> Any:
        """The items of both stages in one stage (both batch, or both stream)."""
        if not isinstance(other, _ComputeStage) or other._node.is_stream != self._node.is_stream:
            raise TypeError(f"merge(other): other must be a {type(self).__name__} of the same pipeline")
        return self._next("merge", upstream=[self, other])

    def rebalance(self, key: ExtractorLike | None = None) -> Any:
        """Sends the items to the next stage over a distributed edge: round-robin, or partitioned by
        ``key`` (design doc 008). Breaks fusion; before a stateful stage it is a definition error."""
        return type(self)(self._pipeline, self._node,
                          "round_robin" if key is None else extractor(key, "rebalance(key)"))

    def on_error(self, sink: Sink) -> Any:
        """Sends records that this stage's user function fails on to ``sink`` (``Sinks.dead_letter``)
        with the error, instead of failing the job. The stage's key, value and timestamp extractors count
        as its functions: the grouping key given to the keyed stage before it, an aggregate operation's
        values, a join's clause keys, ``add_timestamps``'s timestamp, a sort key, the key of a
        ``rebalance(key)`` in front of it. Such a record never enters the stage."""
        self._node.on_error = checked_dead_letter_sink(sink)
        return self

    def map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any], tuple[Any, Any]]) -> Any:
        """Global stateful mapping: ``fn(state, item) -> (new_state, output)``; output ``None`` emits nothing."""
        return self._next("map_stateful", create_fn=checked_callable(create_fn, "map_stateful(create_fn)"),
                          fn=checked_callable(fn, "map_stateful(fn)"))

    def rolling_aggregate(self, op: AggregateOperation) -> Any:
        """Emits the running result of ``op`` after each item."""
        return self._next("rolling_aggregate", op=checked_operation(op, "rolling_aggregate(op)"))

    def hash_join(self, other: BatchStage, join_clause: JoinClause,
                  mapper: Callable[[Any, Any], Any] = lambda left, right: (left, right)) -> Any:
        """Every item with its match from ``other`` (a batch stage, broadcast to every instance):
        ``mapper(left, right)``, with ``right`` None where nothing matches. An item matching several
        items of ``other`` gives one output per match.

        A join is a map over this (the streamed) stage, as in Jet: with ``preserve_order`` it keeps this
        stage's order, an item's outputs together and in the order of its matches (the order in which
        ``other`` was collected, partition by partition); each output has the item's timestamp where it
        carries one (:meth:`add_timestamps`)."""
        return self._join("hash_join", [(other, join_clause)], mapper)

    def inner_hash_join(self, other: BatchStage, join_clause: JoinClause,
                        mapper: Callable[[Any, Any], Any] = lambda left, right: (left, right)) -> Any:
        """Like :meth:`hash_join`, dropping items that have no match."""
        return self._join("inner_hash_join", [(other, join_clause)], mapper)

    def hash_join2(self, other1: BatchStage, join_clause1: JoinClause, other2: BatchStage, join_clause2: JoinClause,
                   mapper: Callable[[Any, Any, Any], Any] = lambda left, right1, right2: (left, right1, right2)) -> Any:
        """Every item with its matches from two enriching batch stages (Jet's ``hashJoin2``):
        ``mapper(left, right1, right2)``, a right side None where it has no match. An item matching
        several items of a side gives one output per combination of matches.

        Examples
        --------
        >>> from jetspark import Pipeline, Sources, Sinks, JoinClause
        >>> p = Pipeline.create()
        >>> users = p.read_from(Sources.items([{"id": 1, "name": "ann"}]))
        >>> shops = p.read_from(Sources.items([{"id": 7, "city": "Oslo"}]))
        >>> orders = p.read_from(Sources.items([{"user": 1, "shop": 7}, {"user": 2, "shop": 7}]))
        >>> joined = orders.hash_join2(users, JoinClause.on("user", "id"), shops, JoinClause.on("shop", "id"),
        ...                            lambda o, u, s: (u and u["name"], s["city"]))
        >>> joined.write_to(Sinks.list("enriched"))  # gives ('ann', 'Oslo') and (None, 'Oslo')
        SinkStage(list(name='enriched'))
        """
        return self._join("hash_join2", [(other1, join_clause1), (other2, join_clause2)], mapper)

    def inner_hash_join2(self, other1: BatchStage, join_clause1: JoinClause, other2: BatchStage,
                         join_clause2: JoinClause,
                         mapper: Callable[[Any, Any, Any], Any] = lambda left, right1, right2: (left, right1, right2)
                         ) -> Any:
        """Like :meth:`hash_join2`, dropping items that lack a match on some side (Jet's
        ``innerHashJoin2``)."""
        return self._join("inner_hash_join2", [(other1, join_clause1), (other2, join_clause2)], mapper)

    def _join(self, transform: str, sides: list[tuple[Any, Any]], mapper: Any) -> Any:
        """A join with the enriching ``sides`` (stage, clause); the spec names the clause ``clause`` for
        one side, ``clause1``, ``clause2``, ... for several."""
        clauses: dict[str, JoinClause] = {}
        for i, (other, clause) in enumerate(sides, start=1):
            suffix = "" if len(sides) == 1 else str(i)
            if not isinstance(other, BatchStage):
                raise TypeError(f"{transform}(other{suffix}): the enriching side must be a BatchStage, "
                                f"not {type(other).__name__}")
            if not isinstance(clause, JoinClause):
                raise TypeError(f"{transform}(join_clause{suffix}): expected JoinClause.on(left_key, right_key)")
            clauses[f"clause{suffix}"] = clause
        return self._next(transform, upstream=[self] + [other for other, _ in sides], **clauses,
                          mapper=checked_callable(mapper, f"{transform}(mapper)"))

    def write_to(self, sink: Sink) -> SinkStage:
        """Attaches a sink; the returned stage ends this branch."""
        if not isinstance(sink, Sink) or sink.kind == "dead_letter":
            raise TypeError("write_to(sink): expected a Sink from Sinks (dead_letter is for on_error)")
        node = self._pipeline._add("sink", self._node.is_stream, [self], args={"sink": sink})
        return SinkStage(self._pipeline, node)


class BatchStage(_ComputeStage):
    """A stage of a batch pipeline (Jet's ``BatchStage``)."""

    def grouping_key(self, key: ExtractorLike) -> BatchStageWithKey:
        """Items grouped by ``key``: the next stage is keyed."""
        return BatchStageWithKey(self, extractor(key, "grouping_key(key)"))

    def aggregate(self, op: AggregateOperation) -> BatchStage:
        """One item: the result of ``op`` over all items."""
        return self._next("aggregate", op=checked_operation(op, "aggregate(op)"))

    def aggregate2(self, other: BatchStage, op0: AggregateOperation, op1: AggregateOperation) -> BatchStage:
        """One item ``(result0, result1)``: ``op0`` over this stage, ``op1`` over ``other``."""
        if not isinstance(other, BatchStage):
            raise TypeError("aggregate2(other): other must be a BatchStage")
        return self._next("aggregate2", upstream=[self, other], op0=checked_operation(op0, "aggregate2(op0)"),
                          op1=checked_operation(op1, "aggregate2(op1)"))

    def distinct(self) -> BatchStage:
        """Each distinct item once (the first encountered)."""
        return self._next("distinct")

    def add_timestamps(self, ts: ExtractorLike, allowed_lag_ms: int = 0) -> StreamStage:
        """The same items with event time, as a stage that windows can follow (Jet's ``addTimestamps``).

        ``ts`` gives an item's timestamp: a field name, a ``Column`` or a callable, returning integer
        milliseconds since the epoch (a ``datetime`` or a Spark timestamp is converted; a naive
        ``datetime`` is read in local time, as Spark does).

        A batch is one epoch that ends with a watermark of +infinity: no item is late, every non-empty
        window is emitted once, complete, and ``allowed_lag_ms`` has no effect. Early results
        (:meth:`WindowDefinition.set_early_results_period`) are ignored: there is no watermark for them
        to run ahead of. ``ts`` is read here, once per item, and the item carries its timestamp from here
        (Jet's ``JetEvent``): ``map``, ``filter``, ``flat_map``, ``peek``, ``merge``, ``rebalance``,
        ``map_stateful`` and ``rolling_aggregate`` give every output the time of the item it came from,
        and a hash join every output for a left item that item's time (not the enriching items'), so a
        window reads the time ``ts`` gave the original item, whatever those stages made of it. With
        ``preserve_order`` the same holds: the items keep their order through those stages (restored per
        key behind a keyed shuffle on the Spark engine), times and all.

        Examples
        --------
        >>> from jetspark import Pipeline, Sources, Sinks, WindowDefinition, AggregateOperations as ops
        >>> p = Pipeline.create()
        >>> clicks = p.read_from(Sources.items([{"user": "a", "at": 1_500}, {"user": "b", "at": 2_100}]))
        >>> (clicks.add_timestamps("at").grouping_key("user").window(WindowDefinition.tumbling(1_000))
        ...        .aggregate(ops.counting()).write_to(Sinks.list("clicks_per_second")))
        SinkStage(list(name='clicks_per_second'))
        """
        if not isinstance(allowed_lag_ms, int) or isinstance(allowed_lag_ms, bool) or allowed_lag_ms < 0:
            raise ValueError(f"add_timestamps(allowed_lag_ms): must be a non-negative int, not {allowed_lag_ms!r}")
        node = self._pipeline._add("add_timestamps", self._node.is_stream, [self],
                                   args={"ts": extractor(ts, "add_timestamps(ts)"), "allowed_lag_ms": allowed_lag_ms})
        return StreamStage(self._pipeline, node)

    def sort(self, key: ExtractorLike | None = None, reverse: bool = False) -> BatchStage:
        """All items sorted by ``key`` (default the item), descending with ``reverse``. Items with equal
        keys come in no guaranteed order: a sort produces its own order (Jet's design doc 015)."""
        return self._next("sort", key=optional_extractor(key, "sort(key)"), reverse=bool(reverse))


class StreamStage(_ComputeStage):
    """A stage of a streaming pipeline, with timestamps chosen (Jet's ``StreamStage``)."""

    def grouping_key(self, key: ExtractorLike) -> StreamStageWithKey:
        """Items grouped by ``key``: the next stage is keyed."""
        return StreamStageWithKey(self, extractor(key, "grouping_key(key)"))

    def window(self, window_definition: WindowDefinition) -> StageWithWindow:
        """Windows over the whole stream; aggregate next."""
        return StageWithWindow(self, checked_window(window_definition))


class StreamSourceStage(Stage):
    """A stream source that must say how its items get timestamps before anything else (Jet's rule)."""

    def _timestamps(self, kind: str, **params: Any) -> StreamStage:
        if "timestamps" in self._node.args:
            raise ValueError(f"{self.name}: timestamps are already chosen ({self._node.args['timestamps']['kind']})")
        lag = params.get("allowed_lag_ms")
        if lag is not None and (not isinstance(lag, int) or lag < 0):
            raise ValueError(f"{kind}(allowed_lag_ms): must be a non-negative int, not {lag!r}")
        self._node.args["timestamps"] = {"kind": kind, **params}
        return StreamStage(self._pipeline, self._node)

    def with_timestamps(self, ts: ExtractorLike, allowed_lag_ms: int) -> StreamStage:
        """Event time from ``ts`` (ms); a substream's watermark trails its highest timestamp by ``allowed_lag_ms``."""
        return self._timestamps("with_timestamps", ts=extractor(ts, "with_timestamps(ts)"), allowed_lag_ms=allowed_lag_ms)

    def with_native_timestamps(self, allowed_lag_ms: int) -> StreamStage:
        """Event time from the source's own record time (Kafka record timestamps)."""
        return self._timestamps("with_native_timestamps", allowed_lag_ms=allowed_lag_ms)

    def with_ingestion_timestamps(self) -> StreamStage:
        """Event time is the time the source read the item."""
        return self._timestamps("with_ingestion_timestamps")

    def without_timestamps(self) -> StreamStage:
        """No event time: windows are not available downstream."""
        return self._timestamps("without_timestamps")

    def __getattr__(self, name: str) -> Any:
        # Jet's StreamSourceStage has no transforms at all: a user who reaches for one gets the rule and
        # the four ways out, not Python's bare AttributeError.
        if not name.startswith("_") and hasattr(StreamStage, name):
            rule = "stream-source-timestamps"
            raise PipelineDefinitionError(
                f"stage '{self.name}' breaks rule '{rule}': a stream source must choose its timestamps before "
                f"'{name}': call with_timestamps(ts, allowed_lag_ms), with_native_timestamps(allowed_lag_ms), "
                "with_ingestion_timestamps() or without_timestamps() first", stage=self.name, rule=rule)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class _KeyedStage:
    """A stage grouped by a key: keyed transforms come next."""

    def __init__(self, upstream: _ComputeStage, key: Extractor) -> None:
        self._upstream = upstream
        self._key = key

    @property
    def key(self) -> Extractor:
        return self._key

    def _next(self, transform: str, **args: Any) -> Any:
        up = self._upstream
        node = up._pipeline._add(transform, up._node.is_stream, [up], [self._key], args)
        return type(up)(up._pipeline, node)

    def _require_batch(self, transform: str) -> None:
        # A stream never ends, so a result over all of a key's items never comes: Jet offers these on
        # batch stages only, and windows on streams.
        if isinstance(self._upstream, StreamStage):
            stage = self._upstream.name
            raise PipelineDefinitionError(
                f"{stage}: rule 'keyed {transform} needs a batch stage' is broken: a stream stage (after "
                f"timestamps) aggregates per window: .grouping_key(k).window(w).aggregate(op)", stage,
                "keyed aggregation needs a batch stage")

    def aggregate(self, op: AggregateOperation) -> Any:
        """Items ``(key, result)``: ``op`` per key (batch stages; a stream aggregates per window)."""
        self._require_batch("aggregate")
        return self._next("aggregate", op=checked_operation(op, "aggregate(op)"))

    def aggregate2(self, other: _KeyedStage, op0: AggregateOperation, op1: AggregateOperation) -> Any:
        """Items ``(key, (result0, result1))``: co-groups this keyed stage with ``other``."""
        if not isinstance(other, type(self)):
            raise TypeError(f"aggregate2(other): other must be a {type(self).__name__}")
        self._require_batch("aggregate2")
        up = self._upstream
        node = up._pipeline._add("aggregate2", up._node.is_stream, [up, other._upstream], [self._key, other._key],
                                 {"op0": checked_operation(op0, "aggregate2(op0)"), "op1": checked_operation(op1, "aggregate2(op1)")})
        return type(up)(up._pipeline, node)

    def map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any, Any], tuple[Any, Any]]) -> Any:
        """Per-key state: ``fn(state, key, item) -> (new_state, output)``; output ``None`` emits nothing."""
        return self._next("map_stateful", create_fn=checked_callable(create_fn, "map_stateful(create_fn)"),
                          fn=checked_callable(fn, "map_stateful(fn)"))

    def rolling_aggregate(self, op: AggregateOperation) -> Any:
        """Items ``(key, running_result)`` after each item."""
        return self._next("rolling_aggregate", op=checked_operation(op, "rolling_aggregate(op)"))

    def distinct(self) -> Any:
        """The first item of each key (batch stages)."""
        self._require_batch("distinct")
        return self._next("distinct")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._upstream.name}, key={self._key.describe()})"


class BatchStageWithKey(_KeyedStage):
    """A batch stage grouped by a key."""


class StreamStageWithKey(_KeyedStage):
    """A stream stage grouped by a key."""

    def window(self, window_definition: WindowDefinition) -> StageWithKeyAndWindow:
        """Windows per key; aggregate next."""
        return StageWithKeyAndWindow(self, checked_window(window_definition))


class StageWithWindow:
    """A stream stage with a window definition; :meth:`aggregate` gives :class:`WindowResult` items."""

    def __init__(self, upstream: StreamStage, window: WindowDefinition) -> None:
        self._upstream = upstream
        self._window = window

    def aggregate(self, op: AggregateOperation) -> StreamStage:
        up = self._upstream
        return up._next("window_aggregate", window=self._window, op=checked_operation(op, "aggregate(op)"))


class StageWithKeyAndWindow:
    """A keyed stream stage with a window; :meth:`aggregate` gives :class:`KeyedWindowResult` items."""

    def __init__(self, keyed: StreamStageWithKey, window: WindowDefinition) -> None:
        self._keyed = keyed
        self._window = window

    def aggregate(self, op: AggregateOperation) -> StreamStage:
        return self._keyed._next("window_aggregate", window=self._window, op=checked_operation(op, "aggregate(op)"))


class SinkStage(Stage):
    """The end of a branch: a sink."""

    def on_error(self, sink: Sink) -> SinkStage:
        """Sends items that a files or foreach-batch sink cannot turn into rows of its schema to ``sink``
        (``Sinks.dead_letter``) with the error, instead of failing the job."""
        self._node.on_error = checked_dead_letter_sink(sink)
        return self

    def __repr__(self) -> str:
        return f"SinkStage({self._node.args['sink'].describe()})"
