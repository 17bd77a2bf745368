"""The brute-force reference for stream pipelines: a finite ``Sources.items_stream`` cut into epochs.

It evaluates stream pipelines of this shape, and refuses others with :class:`NotImplementedError`:
``Sources.items_stream(*substreams, items_per_batch=k)`` with ``with_timestamps(ts, allowed_lag_ms=L)``
or ``without_timestamps()``, then ``map``/``filter``/``flat_map``/``peek``, ``merge`` of branches of
that stream, ``rebalance``, hash joins of the stream (the streamed side) with batch enriching sides, and
windows (sliding, tumbling, session; keyed or global; any operation the batch reference takes) behind
those stages, which keep nothing between epochs and let the watermarks pass as they are; the same stages
after a window, and list and dead-letter sinks. Everything else is the batch reference's
(:mod:`reference`): what a stage does to an item, failures and dead letters, joins and merges, a window's
results. The stream adds when the watermark moves, so which items are late, and when each window is
emitted:

1. Epochs. Epoch ``b`` (``b = 0, 1, ...``) holds, for every substream ``s`` (the ``s``-th list given to
   ``items_stream``), its items ``[b*k, (b+1)*k)``. There are ``T = max(1, ceil(longest / k))`` epochs.
   Substream ``s`` is done after the epoch that holds its last item (an empty substream: after epoch 0).
2. Source watermark per substream: ``wm_s(b)`` = (highest timestamp among ``s``'s items in epochs
   ``0..b``) - ``L``; minus infinity while it has none. It never goes back. The timestamp is read from the
   item at the source, before any map or filter, so an item filtered out still raises its substream's
   watermark.
3. Coalesced watermark after epoch ``b``: ``W(b)`` = the minimum over the substreams NOT done after epoch
   ``b`` of ``wm_s(b)``; +infinity when every substream is done (so after the last epoch everything is
   emitted). ``W(-1)`` = minus infinity. Idleness (``partition_idle_timeout_ms``, wall-clock) is not
   modelled: tests keep the default 60 s, far above their run time.
4. Watermarks act only at epoch ends: every item of epoch ``b`` reaches a window before the watermark of
   epoch ``b`` does.
5. Lateness at a window. An item that reaches a window in epoch ``b`` is late, for a sliding or tumbling
   window, when its frame is already closed: ``frameEnd(ts) <= closedEnd(w)``, with ``frameEnd(ts) =
   floor(ts / slide) * slide + slide`` and ``closedEnd(w)`` the highest multiple of ``slide`` at or below
   ``w`` (the core's ``SlidingWindowPolicy.frameEnd`` and ``lastEndAtOrBefore``); for a session window,
   when ``ts < w`` (``SessionWindowProcessor``). ``w`` is the watermark the window's first stage had
   after epoch ``b - 1``: ``W(b - 1)`` where the first stage reads every substream, or ``wm_s(b - 1)`` of
   the item's own substream ``s`` where it reads that substream alone (see
   :meth:`_StreamRun.reads_one_substream`; frames of a first stage are never late in the second). A late
   item is dropped and counted (:attr:`StreamRun.late_dropped`); it is in no window. Its grouping key is
   still taken first (a failing key is the window stage's failure, not a late item), as the engine
   takes it before it looks at the frame.
6. Output: the windows of the non-late items, exactly as the batch reference computes them (the same
   result objects, each with time ``end - 1``). A sliding or tumbling window ``[start, end)`` is emitted
   after the first epoch ``b`` with ``end <= W(b)``, a session after the first with ``end < W(b)``
   (``SlidingWindowProcessor.closeUpTo``, ``SessionWindowProcessor.closeBefore``). Early results are not
   modelled: compare an engine's results with ``is_early=False`` only.

Order. An item's sequence id at the source is ``(source id, epoch, substream, offset in substream)``, so
the stream runs epoch by epoch, substream after substream within one. A window emits epoch by epoch, in
end order within an epoch. The engines promise neither order across substreams nor across keys: compare
with :func:`reference.as_multiset`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from reference import _label, _milliseconds, _Run

from jetspark import Pipeline

__all__ = ["StreamRun", "Watermarks", "emission_epoch", "epoch_count", "epoch_watermarks", "is_late", "run_stream_reference"]

Mark = float | int  # a watermark: an int timestamp, or minus or plus infinity

#: The stream transforms this reference evaluates; a window only behind a source and the stages that
#: keep nothing between epochs (it reads the source's watermarks, which pass those stages as they are):
#: the stateless ones, merges of branches of that source, and hash joins of its items (the streamed,
#: first input) with batch enriching sides, read whole.
_STATELESS = {"map", "filter", "flat_map", "peek"}
_JOINS = {"hash_join", "inner_hash_join", "hash_join2", "inner_hash_join2"}
_PASSING = _STATELESS | _JOINS | {"merge"}
_STREAM_OPS = _PASSING | {"source", "window_aggregate", "sink"}


@dataclass(frozen=True)
class Watermarks:
    """One stream source's watermarks after each epoch (rules 1 to 3): ``substreams[b][s]`` is
    ``wm_s(b)``, ``coalesced[b]`` is ``W(b)``."""

    substreams: list[list[Mark]]
    coalesced: list[Mark]

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


def epoch_watermarks(timestamps: list[list[int | None]], items_per_batch: int, allowed_lag_ms: int) -> Watermarks:
    """The watermarks of a source whose substream ``s`` has items with ``timestamps[s]`` (``None``: an
    item whose timestamp could not be read, which raises nothing), cut ``items_per_batch`` per epoch."""
    k = items_per_batch
    epochs = epoch_count([len(ts) for ts in timestamps], k)
    last_epoch = [max(0, math.ceil(len(ts) / k) - 1) for ts in timestamps]  # done after it
    substreams, coalesced = [], []
    for b in range(epochs):
        marks = [max((t for t in ts[:(b + 1) * k] if t is not None), default=-math.inf) - allowed_lag_ms
                 for ts in timestamps]
        substreams.append(marks)
        coalesced.append(min((m for m, last in zip(marks, last_epoch) if b < last), default=math.inf))
    return Watermarks(substreams, coalesced)


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


def emission_epoch(marks: Watermarks, window: dict[str, Any], end: int) -> int:
    """Rule 6: the epoch after which the window ending at ``end`` is emitted."""
    reached = (lambda w: end < w) if window["kind"] == "session" else (lambda w: end <= w)
    return next(b for b in range(marks.epochs) if reached(marks.of_all(b)))


@dataclass(frozen=True)
class StreamRun:
    """What :func:`run_stream_reference` computes: ``outputs`` as :func:`reference.run_reference` gives
    them (per list sink, and per dead letter); per window stage (by name), ``late_dropped`` its late
    items and ``emitted[b]`` the results it emits after epoch ``b``; per stream source with timestamps
    (by name), its ``watermarks``."""

    outputs: dict[str, list[Any]]
    late_dropped: dict[str, int]
    emitted: dict[str, list[list[Any]]]
    watermarks: dict[str, Watermarks]


def run_stream_reference(pipeline: Pipeline) -> StreamRun:
    """Evaluates a stream ``pipeline`` by the rules of this module's docstring."""
    spec, objects = pipeline.to_spec()
    run = _StreamRun(objects, spec["preserve_order"])
    run.evaluate_all(spec)
    return StreamRun(run.results, run.late_dropped, run.emitted,
                     {_label(run.nodes[i]): marks for i, marks in run.watermarks.items()})


class _StreamRun(_Run):
    def __init__(self, objects: list[Any], preserve_order: bool) -> None:
        super().__init__(objects)
        self.preserve_order = preserve_order
        self.watermarks: dict[int, Watermarks] = {}  # per stream source with timestamps, by node id
        self.late_dropped: dict[str, int] = {}
        self.emitted: dict[str, list[list[Any]]] = {}

    def require_supported(self, node: dict[str, Any]) -> None:
        if node["stream"] and node["op"] not in _STREAM_OPS:
            raise NotImplementedError(f"{_label(node)}: the stream reference has no stream '{node['op']}'")

    def _source(self, node: dict[str, Any], args: dict[str, Any]) -> list[Any]:
        source = args["source"]
        if not node["stream"]:
            return super()._source(node, args)
        if source["kind"] != "items_stream":
            raise NotImplementedError(f"{_label(node)}: the stream reference reads Sources.items_stream only")
        substreams, k = self.objects[source["refs"]["partitions"]], source["params"]["items_per_batch"]
        timestamps = args["timestamps"]
        if timestamps["kind"] not in ("with_timestamps", "without_timestamps"):
            raise NotImplementedError(f"{_label(node)}: the stream reference takes with_timestamps and "
                                      f"without_timestamps, not {timestamps['kind']}")
        epochs = epoch_count([len(items) for items in substreams], k)
        stream = [((node["id"], b, s, i), items[i]) for b in range(epochs) for s, items in enumerate(substreams)
                  for i in range(b * k, min((b + 1) * k, len(items)))]
        if timestamps["kind"] == "without_timestamps":
            return stream
        read = self.extractor(timestamps["ts"])
        read_ts: list[list[int | None]] = [[None] * len(items) for items in substreams]
        out = []
        for seq, item in stream:
            ok, ts = self.call(node, item, lambda x: _milliseconds(read(x)), item)
            if ok:
                read_ts[seq[2]][seq[3]] = ts
                out.append((seq, item, ts))
        self.watermarks[node["id"]] = epoch_watermarks(read_ts, k, timestamps["allowed_lag_ms"])
        return out

    def require_carried(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node["op"] == "source" and node["stream"] and node["args"]["timestamps"]["kind"] == "with_timestamps":
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
        combine, a session window, early results, a keyed window's rebalanced input, or preserved order
        reaching an order-sensitive operation) whose first stage sits next to the source, over local
        edges only, so nothing between the source and the window is rebalanced, on any branch a merge
        on the way joins (a merge's partition ``i`` holds substream ``i`` of each branch). Otherwise the
        items cross a shuffle, and the receiver coalesces the watermarks of every substream."""
        window = path[-1]
        definition, op = window["args"]["window"], window["args"]["op"]
        single_stage = (not op["can_combine"] or definition["kind"] == "session"
                        or bool(definition["early_results_period_ms"])
                        or (window["keys"][0] is not None and window["rebalance"][0] is not None)
                        or (self.preserve_order and op["order_sensitive"]))
        return not single_stage and not any(r is not None for node in self.stream_stages_before(window)
                                            for r, i in zip(node["rebalance"], node["inputs"]) if self.nodes[i]["stream"])

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
        key_of = None if node["keys"][0] is None else self.extractor(node["keys"][0])
        kept, late = [], 0
        for seq, item, ts in stream:
            epoch, substream = seq[1], seq[2]
            seen = marks.of_substream(epoch - 1, substream) if own_substream else marks.of_all(epoch - 1)
            if not is_late(args["window"], ts, seen):
                kept.append((seq, item, ts))
            elif key_of is None or self.call(node, item, key_of, item)[0]:
                late += 1
        label = _label(node)
        self.late_dropped[label] = late
        # In end order, which is also emission order: W never goes back (the substreams it is the least of
        # only rise, and only leave).
        results = super()._window_aggregate(node, args, kept)
        epochs = [emission_epoch(marks, args["window"], r.end) for _, r, _ in results]
        self.emitted[label] = [[r for (_, r, _), e in zip(results, epochs) if e == b] for b in range(marks.epochs)]
        return results
