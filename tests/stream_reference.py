"""The brute-force reference for stream pipelines: a finite ``Sources.items_stream`` cut into epochs.

It evaluates stream pipelines of this shape, and refuses others with :class:`NotImplementedError`:
``Sources.items_stream(*substreams, items_per_batch=k)`` with ``with_timestamps(ts, allowed_lag_ms=L)``
or ``without_timestamps()``, then ``map``/``filter``/``flat_map``/``peek``, ``merge`` of branches of
that stream or of several such streams (rule 10), ``rebalance``, hash joins of the stream (the streamed side) with batch enriching sides, and
windows (sliding, tumbling, session; keyed or global; any operation the batch reference takes) behind
those stages, which keep nothing between epochs and let the watermarks pass as they are; the same stages
after a window, ``map_stateful`` and ``rolling_aggregate`` (rules 8 and 9), and list and dead-letter
sinks. Everything else is the batch reference's
(:mod:`reference`): what a stage does to an item, failures and dead letters, joins and merges, a window's
results. The stream adds when the watermark moves, so which items are late, and when each window is
emitted:

1. Epochs. Epoch ``b`` (``b = 0, 1, ...``) holds, for every substream ``s`` (the ``s``-th list given to
   ``items_stream``), its items ``[b*k, (b+1)*k)``. There are ``T = max(1, ceil(longest / k))`` epochs.
   Substream ``s`` is done after the epoch that holds its last item (an empty substream: after epoch 0).
   A ``Sources.PAUSE`` holds an item's place and delivers nothing: ``s`` delivers in epoch ``b`` when
   one of its places there is an item.
2. Source watermark per substream: ``wm_s(b)`` = (highest timestamp among ``s``'s items in epochs
   ``0..b``) - ``L``; minus infinity while it has none. It never goes back. The timestamp is read from the
   item at the source, before any map or filter, so an item filtered out still raises its substream's
   watermark.
3. Coalesced watermark after epoch ``b``: ``W(b)`` = +infinity when every substream is done after epoch
   ``b`` (so after the last epoch everything is emitted); else the minimum of ``wm_s(b)`` over the live
   (not done) substreams that are not idle after ``b``; when all live ones are idle, the maximum of their
   ``wm_s(b)`` (Jet's coalescer); and never below ``W(b - 1)``. ``W(-1)`` = minus infinity.
   Idleness (docs/streaming.md, rule 9) is wall-clock, measured on the epochs' times, which are at least
   1 ms apart. Two timeouts are modelled (``partition_idle_timeout_ms`` of :func:`run_stream_reference`):
   1 ms, where a live substream is idle after every epoch ``b >= 1`` in which it delivered nothing (its
   quiet time counts from epoch 0's time), and 60 s or more, where no substream is ever idle (the tests'
   jobs end sooner).
4. Watermarks act only at epoch ends: every item of epoch ``b`` reaches a window before the watermark of
   epoch ``b`` does.
5. Lateness at a window. An item that reaches a window in epoch ``b`` is late, for a sliding or tumbling
   window, when its frame is already closed: ``frameEnd(ts) <= closedEnd(w)``, with ``frameEnd(ts) =
   floor(ts / slide) * slide + slide`` and ``closedEnd(w)`` the highest multiple of ``slide`` at or below
   ``w`` (the core's ``SlidingWindowPolicy.frameEnd`` and ``lastEndAtOrBefore``); for a session window,
   when ``ts < w`` (``SessionWindowProcessor``). ``w`` is the watermark the window's first stage had
   after epoch ``b - 1``: ``W(b - 1)`` where the first stage reads every substream, or ``wm_s(b - 1)`` of
   the item's own substream ``s`` where it reads that substream alone (see
   :meth:`_StreamRun.reads_one_substream`; frames of a first stage are never late in the second where no
   substream is idle, and the reference refuses a two-stage window over idle substreams). A late
   item is dropped and counted (:attr:`StreamRun.late_dropped`); it is in no window. Where the window
   stage routes its failures (``on_error(Sinks.dead_letter(name))``), it is also that stage's dead letter,
   of error type ``LateEvent`` (such a window has one stage: the planner's ``AggregationStageRule``). Its grouping key is
   still taken first (a failing key is the window stage's failure, not a late item), as the engine
   takes it before it looks at the frame.
6. Output: the windows of the non-late items, exactly as the batch reference computes them (the same
   result objects, each with time ``end - 1``). A sliding or tumbling window ``[start, end)`` is emitted
   after the first epoch ``b`` with ``end <= W(b)``, a session after the first with ``end < W(b)``
   (``SlidingWindowProcessor.closeUpTo``, ``SessionWindowProcessor.closeBefore``).
7. Early results (windows with an early-results period ``p``; docs/streaming.md, rule 6), with ``p`` of
   1 ms: at the end of every epoch ``b`` with ``1 <= b < T - 1``, every window (or session) that the
   non-late items of epochs ``0..b`` make, and that is not emitted after ``b`` by rule 6, is emitted with
   ``is_early=True`` and the aggregate of those items (:attr:`StreamRun.early`); with ``p`` of 60 s or
   more: none; any other ``p``: not modelled (``None``). (A closed session gains no later item: one at or after the watermark starts past its end.)

8. State across epochs. ``map_stateful`` and ``rolling_aggregate`` (keyed or global) keep their state
   from one epoch to the next: each output is what the batch reference gives for the item after every
   item of its key before it, in the order of rule 9. (A window behind them is not evaluated.)
9. Per-key order. A keyed stateful stage sees each key's items epoch by epoch, and within an epoch each
   substream's items in their order; a global stage is one key. How the items of different substreams
   interleave within one epoch is not promised: they reach the stage from different senders, over a
   shuffle. :func:`order_allowed` says whether an order is one of those. The reference takes an epoch's
   items substream after substream, so a test compares its stateful outputs with the engine's only where
   they do not depend on that interleaving: every key fed by one substream, or state kept per substream.
   Under ``preserve_order`` the engine promises the reference's order itself (test_streaming_order.py).
10. Several sources. Where a window's items come from several items streams (a ``merge`` of them), each
   source is cut by its own ``k`` and epoch ``b`` holds every source's epoch ``b``; each substream has its
   source's ``L``, and ``W(b)`` of rule 3 is over the substreams of all of them (the stream is done when
   all are). A first stage that reads its partition alone (rule 5) reads substream ``s`` of every
   source where the sources have as many substreams each (a merge's partition ``s`` holds substream
   ``s`` of each branch), and ``W`` over those is its watermark; else every substream.

Explicit epochs. A source whose items the reference cannot read itself, a streaming DataFrame
(``Sources.dataframe(streaming_df, substream=None)``), takes them from the caller, cut into epochs:
``run_stream_reference(p, epochs=[[rows of epoch 0], [rows of epoch 1], ...])``. Such a stream never
ends: rule 1's "done" never happens, so nothing is emitted after its last epoch but what the watermark
passed. Its substreams are the distinct values of its ``substream`` column (one substream without it),
each from the epoch of its first row on; rule 3 becomes ``W(b)`` = the greater of ``W(b - 1)`` and the
minimum of ``wm_s(b)`` over the values seen by epoch ``b`` (minus infinity before any) that are not idle
after ``b``, or the maximum over them when all are: the one task that reads a DataFrame never lowers its
watermark for a value that comes late. With the 1 ms timeout of rule 3, a value is idle after every epoch
``b >= 1`` in which it delivered no row, once it has been seen. Every stage, a window's first
stage too, sees ``W`` (the values share that task). Timestamps: ``with_timestamps`` by a field name, or
``with_native_timestamps``, which reads the column ``timestamp``, else the only column of a timestamp
type (docs/streaming.md).

Order. An item's sequence id at the source is ``(source id, epoch, substream, offset in substream)``, so
the stream runs epoch by epoch, substream after substream within one. A window emits epoch by epoch, in
end order within an epoch. The engines promise neither order across substreams nor across keys: compare
with :func:`reference.as_multiset`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from reference import _dead_letter_key, _label, _milliseconds, _Run

from jetspark import Pipeline, Sources

__all__ = ["LATE_EVENT", "StreamRun", "Watermarks", "emission_epoch", "epoch_count", "epoch_watermarks", "is_late", "order_allowed",
           "run_stream_reference"]

#: The idle timeouts and early-results periods the reference models (module docstring, rules 3 and 7): at
#: most the 1 ms between two epochs' times, or at least the run time of any test's job.
AT_EVERY_EPOCH_MS = 1
NEVER_IN_A_TEST_MS = 60_000

Mark = float | int  # a watermark: an int timestamp, or minus or plus infinity

#: The error type of a late event's dead letter (rule 5).
LATE_EVENT = "LateEvent"

#: The stream transforms this reference evaluates; a window only behind a source and the stages that
#: keep nothing between epochs (it reads the source's watermarks, which pass those stages as they are):
#: the stateless ones, merges of branches of that source, and hash joins of its items (the streamed,
#: first input) with batch enriching sides, read whole.
_STATELESS = {"map", "filter", "flat_map", "peek"}
_JOINS = {"hash_join", "inner_hash_join", "hash_join2", "inner_hash_join2"}
_PASSING = _STATELESS | _JOINS | {"merge"}
_STREAM_OPS = _PASSING | {"source", "window_aggregate", "sink", "map_stateful", "rolling_aggregate"}


@dataclass(frozen=True)
class Watermarks:
    """One stream source's watermarks after each epoch (rules 1 to 3): ``substreams[b][s]`` is
    ``wm_s(b)``, ``idle[b][s]`` whether ``s`` is idle after ``b``, ``coalesced[b]`` is ``W(b)``."""

    substreams: list[list[Mark]]
    coalesced: list[Mark]
    idle: list[list[bool]] = None  # type: ignore[assignment]  # None: no substream is ever idle

    def __post_init__(self) -> None:
        if self.idle is None:
            object.__setattr__(self, "idle", [[False] * len(marks) for marks in self.substreams])

    @property
    def epochs(self) -> int:
        return len(self.coalesced)

    def of_substream(self, epoch: int, substream: int) -> Mark:
        """``wm_s(epoch)``; minus infinity before the first epoch."""
        return -math.inf if epoch < 0 else self.substreams[epoch][substream]

    def of_all(self, epoch: int) -> Mark:
        """``W(epoch)``; minus infinity before the first epoch."""
        return -math.inf if epoch < 0 else self.coalesced[epoch]


def epoch_count(lengths: list[int], items_per_batch: int) -> int:
    """Rule 1: ``T``, the number of epochs of substreams of ``lengths`` items cut ``items_per_batch`` per epoch."""
    return max(1, *(math.ceil(n / items_per_batch) for n in lengths))


def epoch_watermarks(timestamps: list[list[Any]], items_per_batch: int | list[int], allowed_lag_ms: int | list[int],
                     quiet_epochs_idle: bool = False) -> Watermarks:
    """The watermarks of a source whose substream ``s`` has items with ``timestamps[s]`` (``None``: an
    item whose timestamp could not be read, which raises nothing; ``Sources.PAUSE``: a pause), cut
    ``items_per_batch`` per epoch; with ``quiet_epochs_idle``, a substream is idle after each epoch but
    the first in which it delivered nothing (rule 3, a timeout of 1 ms). Where the substreams are those of
    several sources (rule 10), ``items_per_batch`` and ``allowed_lag_ms`` are lists: each substream's."""
    ks = items_per_batch if isinstance(items_per_batch, list) else [items_per_batch] * len(timestamps)
    lags = allowed_lag_ms if isinstance(allowed_lag_ms, list) else [allowed_lag_ms] * len(timestamps)
    epochs = max(1, *(epoch_count([len(ts)], k) for ts, k in zip(timestamps, ks)))
    last_epoch = [max(0, math.ceil(len(ts) / k) - 1) for ts, k in zip(timestamps, ks)]  # done after it
    substreams, coalesced, idle = [], [], []
    previous: Mark = -math.inf
    for b in range(epochs):
        marks = [max((t for t in ts[:(b + 1) * k] if t is not None and t is not Sources.PAUSE), default=-math.inf)
                 - lag for ts, k, lag in zip(timestamps, ks, lags)]
        live = [b < last for last in last_epoch]
        quiet = [b >= 1 and quiet_epochs_idle and all(t is Sources.PAUSE for t in ts[b * k:(b + 1) * k])
                 for ts, k in zip(timestamps, ks)]
        idle.append([is_live and is_quiet for is_live, is_quiet in zip(live, quiet)])
        active = [m for m, is_live, is_idle in zip(marks, live, idle[-1]) if is_live and not is_idle]
        if not any(live):
            candidate: Mark = math.inf
        elif active:
            candidate = min(active)
        else:
            candidate = max(m for m, is_live in zip(marks, live) if is_live)
        previous = max(previous, candidate)
        substreams.append(marks)
        coalesced.append(previous)
    return Watermarks(substreams, coalesced, idle)


def is_late(window: dict[str, Any], ts: int, watermark: Mark) -> bool:
    """Rule 5: whether an event at ``ts`` is late at a ``window`` (its spec) whose watermark is ``watermark``."""
    if window["kind"] == "session":
        return ts < watermark
    if math.isinf(watermark):
        return watermark > 0
    slide = window["slide_ms"]
    frame_end = ts // slide * slide + slide
    closed_end = watermark // slide * slide
    return frame_end <= closed_end


def emission_epoch(marks: Watermarks, window: dict[str, Any], end: int) -> int | None:
    """Rule 6: the epoch after which the window ending at ``end`` is emitted; None if no epoch's watermark
    passes it (a stream that does not end)."""
    reached = (lambda w: end < w) if window["kind"] == "session" else (lambda w: end <= w)
    return next((b for b in range(marks.epochs) if reached(marks.of_all(b))), None)


def unending_watermarks(timestamps: list[list[tuple[int, int | None]]], substreams: int,
                        allowed_lag_ms: int, quiet_epochs_idle: bool = False) -> Watermarks:
    """The watermarks of a source that does not end, given per epoch its items' ``(substream, timestamp)``
    (see "Explicit epochs"): ``wm_s`` as rule 2, ``W`` never going back and over the substreams seen; with
    ``quiet_epochs_idle``, a substream seen in an epoch before is idle after each epoch in which it
    delivered nothing (rule 3, a timeout of 1 ms)."""
    tops: dict[int, Mark] = {}
    per_epoch, coalesced, idle, last = [], [], [], -math.inf
    for b, items in enumerate(timestamps):
        seen_before = set(tops)
        delivered = {s for s, _ in items}
        for s, ts in items:
            tops.setdefault(s, -math.inf)
            if ts is not None:
                tops[s] = max(tops[s], ts)
        marks = [tops.get(s, -math.inf) - allowed_lag_ms for s in range(substreams)]
        quiet = [quiet_epochs_idle and b >= 1 and s in seen_before and s not in delivered for s in range(substreams)]
        active = [marks[s] for s in tops if not quiet[s]]
        if active:
            candidate: Mark = min(active)
        else:
            candidate = max((marks[s] for s in tops), default=-math.inf)
        last = max(last, candidate)
        per_epoch.append(marks)
        coalesced.append(last)
        idle.append(quiet)
    return Watermarks(per_epoch, coalesced, idle)


def order_allowed(seen: list[tuple[int, int, int]]) -> bool:
    """Rule 9: whether a stateful stage may see one key's items in this order, each item given as
    ``(epoch, substream, offset in substream)``: epochs never go back, and each substream's offsets rise."""
    last_offset: dict[int, int] = {}
    for (epoch, substream, offset), before in zip(seen, [None, *seen]):
        if (before is not None and epoch < before[0]) or offset <= last_offset.get(substream, -1):
            return False
        last_offset[substream] = offset
    return True


@dataclass(frozen=True)
class StreamRun:
    """What :func:`run_stream_reference` computes: ``outputs`` as :func:`reference.run_reference` gives
    them (per list sink, and per dead letter); per window stage (by name), ``late_dropped`` its late
    items, ``emitted[b]`` the results it emits after epoch ``b`` and ``early[b]`` the early results it
    emits then (rule 7); per stream source with timestamps (by name), its ``watermarks``."""

    outputs: dict[str, list[Any]]
    late_dropped: dict[str, int]
    emitted: dict[str, list[list[Any]]]
    watermarks: dict[str, Watermarks]
    early: dict[str, list[list[Any]] | None]


def run_stream_reference(pipeline: Pipeline, epochs: list[list[Any]] | None = None,
                         partition_idle_timeout_ms: int = NEVER_IN_A_TEST_MS) -> StreamRun:
    """Evaluates a stream ``pipeline`` by the rules of this module's docstring, for a job whose
    ``JobConfig.partition_idle_timeout_ms`` is ``partition_idle_timeout_ms`` (rule 3); ``epochs``: the
    items of its streaming DataFrame source, epoch by epoch ("Explicit epochs")."""
    spec, objects = pipeline.to_spec()
    run = _StreamRun(objects, spec["preserve_order"], _modelled("partition_idle_timeout_ms", partition_idle_timeout_ms),
                     epochs)
    run.evaluate_all(spec)
    return StreamRun(run.results, run.late_dropped, run.emitted,
                     {_label(run.nodes[i]): marks for i, marks in run.watermarks.items()}, run.early)


def _user_defined(op: dict[str, Any]) -> bool:
    """Whether ``op`` (an operation's spec) or a part of it is ``AggregateOperation.of``."""
    return op["name"] == "custom" or any(_user_defined(part) for part in op.get("parts", []))


def _modelled(what: str, ms: int) -> bool:
    """Whether a timeout or period of ``ms`` is due at every epoch end (True) or never in a test (False)."""
    if ms > AT_EVERY_EPOCH_MS and ms < NEVER_IN_A_TEST_MS:
        raise NotImplementedError(f"the stream reference models {what} of at most {AT_EVERY_EPOCH_MS} ms or at "
                                  f"least {NEVER_IN_A_TEST_MS} ms, not {ms}: in between it depends on the wall clock")
    return ms <= AT_EVERY_EPOCH_MS


class _StreamRun(_Run):
    def __init__(self, objects: list[Any], preserve_order: bool, quiet_epochs_idle: bool,
                 epochs: list[list[Any]] | None = None) -> None:
        super().__init__(objects)
        self.preserve_order = preserve_order
        self.quiet_epochs_idle = quiet_epochs_idle
        self.epochs = epochs
        self.unending: set[int] = set()  # the stream sources, by node id, that never end
        self.watermarks: dict[int, Watermarks] = {}  # per stream source with timestamps, by node id
        # per items stream with timestamps, by node id: its substreams' timestamps, k and allowed lag
        self.cuts: dict[int, tuple[list[list[Any]], int, int]] = {}
        self.late_dropped: dict[str, int] = {}
        self.emitted: dict[str, list[list[Any]]] = {}
        self.early: dict[str, list[list[Any]] | None] = {}

    def require_supported(self, node: dict[str, Any]) -> None:
        if node["stream"] and node["op"] not in _STREAM_OPS:
            raise NotImplementedError(f"{_label(node)}: the stream reference has no stream '{node['op']}'")

    def _source(self, node: dict[str, Any], args: dict[str, Any]) -> list[Any]:
        source = args["source"]
        if not node["stream"]:
            return super()._source(node, args)
        if source["kind"] == "dataframe":
            return self._dataframe_stream(node, source, args["timestamps"])
        if source["kind"] != "items_stream":
            raise NotImplementedError(f"{_label(node)}: the stream reference reads Sources.items_stream only")
        substreams, k = self.objects[source["refs"]["partitions"]], source["params"]["items_per_batch"]
        timestamps = args["timestamps"]
        if timestamps["kind"] not in ("with_timestamps", "without_timestamps"):
            raise NotImplementedError(f"{_label(node)}: the stream reference takes with_timestamps and "
                                      f"without_timestamps, not {timestamps['kind']}")
        epochs = epoch_count([len(items) for items in substreams], k)
        stream = [((node["id"], b, s, i), items[i]) for b in range(epochs) for s, items in enumerate(substreams)
                  for i in range(b * k, min((b + 1) * k, len(items))) if items[i] is not Sources.PAUSE]
        if timestamps["kind"] == "without_timestamps":
            return stream
        read = self.extractor(timestamps["ts"])
        read_ts: list[list[Any]] = [[Sources.PAUSE if x is Sources.PAUSE else None for x in items] for items in substreams]
        out = []
        for seq, item in stream:
            ok, ts = self.call(node, item, lambda x: _milliseconds(read(x)), item)
            if ok:
                read_ts[seq[2]][seq[3]] = ts
                out.append((seq, item, ts))
        self.watermarks[node["id"]] = epoch_watermarks(read_ts, k, timestamps["allowed_lag_ms"], self.quiet_epochs_idle)
        self.cuts[node["id"]] = (read_ts, k, timestamps["allowed_lag_ms"])
        return out

    def _dataframe_stream(self, node: dict[str, Any], source: dict[str, Any], timestamps: dict[str, Any]) -> list[Any]:
        if self.epochs is None:
            raise NotImplementedError(f"{_label(node)}: a streaming DataFrame's items come as explicit epochs")
        column = source["params"].get("substream")
        values: dict[Any, int] = {}  # substream value -> its number, in order of first appearance
        stream = []
        for b, items in enumerate(self.epochs):
            offsets: dict[int, int] = {}
            for item in items:
                s = values.setdefault(None if column is None else getattr(item, column), len(values))
                offsets[s] = offsets.get(s, -1) + 1
                stream.append(((node["id"], b, s, offsets[s]), item))
        self.unending.add(node["id"])
        if timestamps["kind"] == "without_timestamps":
            return stream
        if timestamps["kind"] == "with_native_timestamps":
            schema = self.objects[source["refs"]["df"]].schema
            names = [f.name for f in schema.fields if f.name == "timestamp"] or [
                f.name for f in schema.fields if f.dataType.typeName() in ("timestamp", "timestamp_ntz")]
            if len(names) != 1:
                raise NotImplementedError(f"{_label(node)}: no native timestamp column in {schema.simpleString()}")
            read, lag = (lambda row: getattr(row, names[0])), timestamps["allowed_lag_ms"]
        elif timestamps["kind"] == "with_timestamps":
            read, lag = self.extractor(timestamps["ts"]), timestamps["allowed_lag_ms"]
        else:
            raise NotImplementedError(f"{_label(node)}: the stream reference has no {timestamps['kind']}")
        out, read_ts = [], [[] for _ in self.epochs]
        for seq, item in stream:
            ok, ts = self.call(node, item, lambda x: _milliseconds(read(x)), item)
            read_ts[seq[1]].append((seq[2], ts if ok else None))
            if ok:
                out.append((seq, item, ts))
        self.watermarks[node["id"]] = unending_watermarks(read_ts, len(values), lag, self.quiet_epochs_idle)
        return out

    def require_carried(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node["op"] == "source" and node["stream"] and node["args"]["timestamps"]["kind"] in (
                "with_timestamps", "with_native_timestamps"):
            return
        super().require_carried(node_id)

    def path_from_source(self, window: dict[str, Any]) -> list[dict[str, Any]]:
        """The stream source and the stages from it to ``window`` (its own node last), through the first
        input of each (a join's streamed items; a merge's first branch, whose source is the other's too)."""
        path = [window]
        while path[0]["op"] != "source":
            upstream = self.nodes[path[0]["inputs"][0]]
            if upstream["op"] not in _PASSING | {"source"} or not upstream["stream"]:
                raise NotImplementedError(f"{_label(window)}: the stream reference windows items that come from "
                                          "a stream source through map, filter, flat_map, peek, merge and hash "
                                          "joins only")
            path.insert(0, upstream)
        return path

    def reads_one_substream(self, path: list[dict[str, Any]]) -> bool:
        """Whether the first stage of the window at the end of ``path`` reads one substream alone: a
        two-stage window (the planner's ``AggregationStageRule``: two stages unless the operation cannot
        combine, a session window, early results, a keyed window's rebalanced input, preserved order
        reaching an order-sensitive operation, failures routed to a dead-letter sink, or an operation
        with a user-defined part, which Python runs in one stage) whose first stage sits next to the source, over local
        edges only, so nothing between the source and the window is rebalanced, on any branch a merge
        on the way joins (a merge's partition ``i`` holds substream ``i`` of each branch). Otherwise the
        items cross a shuffle, and the receiver coalesces the watermarks of every substream; so it does
        where the source is a streaming DataFrame (read in one task)."""
        window = path[-1]
        definition, op = window["args"]["window"], window["args"]["op"]
        single_stage = (not op["can_combine"] or definition["kind"] == "session"
                        or bool(definition["early_results_period_ms"])
                        or (window["keys"][0] is not None and window["rebalance"][0] is not None)
                        or (self.preserve_order and op["order_sensitive"])
                        or window["on_error"] is not None or _user_defined(op))
        rebalanced = any(r is not None for node in self.stream_stages_before(window)
                         for r, i in zip(node["rebalance"], node["inputs"]) if self.nodes[i]["stream"])
        return not single_stage and path[0]["id"] not in self.unending and not rebalanced

    def stream_stages_before(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """``node`` and every stream stage its items come through, along every input that is a stream."""
        stages, todo = [], [node]
        while todo:
            stage = todo.pop()
            stages.append(stage)
            todo.extend(self.nodes[i] for i in stage["inputs"] if self.nodes[i]["stream"])
        return stages

    def _window_aggregate(self, node: dict[str, Any], args: dict[str, Any], stream: list[Any]) -> list[Any]:
        if not node["stream"]:
            return super()._window_aggregate(node, args, stream)
        self.require_carried(node["inputs"][0])
        path = self.path_from_source(node)
        marks, own_substream = self.watermarks[path[0]["id"]], self.reads_one_substream(path)
        first_stage_mark = (lambda epoch, seq: marks.of_substream(epoch, seq[2])) if own_substream else (
            lambda epoch, seq: marks.of_all(epoch))
        sources = [stage["id"] for stage in self.stream_stages_before(node) if stage["op"] == "source"]
        if len(set(sources)) > 1:
            marks, first_stage_mark = self.merged_watermarks(node, sorted(set(sources)), own_substream)
        if own_substream and any(any(idle) for idle in marks.idle):
            # The second stage coalesces without the idle ones, so a resumed substream's frames may be late
            # there, in the epoch the first stage emits them: not modelled.
            raise NotImplementedError(f"{_label(node)}: the stream reference has no two-stage window over idle substreams")
        key_of = None if node["keys"][0] is None else self.extractor(node["keys"][0])
        kept, late = [], 0
        for seq, item, ts in stream:
            seen = first_stage_mark(seq[1] - 1, seq)
            if not is_late(args["window"], ts, seen):
                kept.append((seq, item, ts))
            elif key_of is None or self.call(node, item, key_of, item)[0]:
                late += 1
                if node["on_error"] is not None:
                    self.results[_dead_letter_key(node)].append((item, _label(node), LATE_EVENT))
        label = _label(node)
        self.late_dropped[label] = late
        # In end order, which is also emission order: W never goes back (the substreams it is the least of
        # only rise, and only leave).
        results = super()._window_aggregate(node, args, kept)
        epochs = [emission_epoch(marks, args["window"], r.end) for _, r, _ in results]
        self.emitted[label] = [[r for (_, r, _), e in zip(results, epochs) if e == b] for b in range(marks.epochs)]
        self.early[label] = self.early_results(node, args, marks, kept)
        return [result for result, e in zip(results, epochs) if e is not None]

    def merged_watermarks(self, node: dict[str, Any], sources: list[int], own_substream: bool) -> tuple[Watermarks, Any]:
        """Rule 10: the watermarks of the window ``node`` whose items come from several items streams
        ``sources`` (node ids), over all their substreams, and the watermark its first stage judges an item
        of epoch ``b`` by (``mark(b, seq)``): ``W(b)`` over all of them, or, where that stage reads its
        partition's substreams alone (``own_substream``) and the sources have as many substreams each,
        that over substream ``s`` of each source."""
        if any(source not in self.cuts for source in sources):
            raise NotImplementedError(f"{_label(node)}: the stream reference merges items streams with timestamps only")
        cuts = [self.cuts[source] for source in sources]
        def over(lanes: list[tuple[list[Any], int, int]]) -> Watermarks:
            return epoch_watermarks([ts for ts, _, _ in lanes], [k for _, k, _ in lanes], [lag for _, _, lag in lanes],
                                    self.quiet_epochs_idle)
        everything = over([(ts, k, lag) for timestamps, k, lag in cuts for ts in timestamps])
        widths = {len(timestamps) for timestamps, _, _ in cuts}
        if not own_substream or len(widths) > 1:
            return everything, lambda epoch, seq: everything.of_all(epoch)
        lanes = [over([(timestamps[s], k, lag) for timestamps, k, lag in cuts]) for s in range(widths.pop())]
        return everything, lambda epoch, seq: lanes[seq[2]].of_all(epoch)

    def early_results(self, node: dict[str, Any], args: dict[str, Any], marks: Watermarks,
                      kept: list[Any]) -> list[list[Any]] | None:
        """Rule 7: the early results of a window stage after each epoch, from its non-late items ``kept``;
        None where its period is neither modelled one."""
        window = args["window"]
        period = window["early_results_period_ms"]
        if period and AT_EVERY_EPOCH_MS < period < NEVER_IN_A_TEST_MS:
            return None  # wall-clock: not modelled
        if not period or not _modelled("an early-results period", period):
            return [[] for _ in range(marks.epochs)]
        early: list[list[Any]] = [[]]
        # Each early aggregate goes over records the final one has gone over: their dead letters are its.
        letters = _dead_letter_key(node) if node["on_error"] is not None else None
        written = list(self.results[letters]) if letters else []
        for b in range(1, marks.epochs - 1):
            so_far = super()._window_aggregate(node, args, [(seq, item, ts) for seq, item, ts in kept if seq[1] <= b])
            early.append([dataclasses.replace(r, is_early=True) for _, r, _ in so_far
                          if (e := emission_epoch(marks, window, r.end)) is None or e > b])
        if letters:
            self.results[letters] = written
        return early + [[]] * (marks.epochs - len(early))
