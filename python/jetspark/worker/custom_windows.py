"""Windows of an operation with a user-defined part (:meth:`AggregateOperation.of`, alone or inside
``all_of``) on the Spark engine. Its functions are Python's, so the window runs here, one Arrow UDF
per vertex, in the stages the planner gave it (``CustomAggregations`` in the JVM says which vertex runs
which ``mode``); everything about groups, records and their failures is :mod:`jetspark.worker.custom_aggregations`'s.
On a stream the window is one stage, its frames or sessions kept from one epoch to the next
(:mod:`jetspark.worker.stream_windows`); this module is about a batch. Both hold what
:mod:`jetspark.worker.window_frames` holds.

A batch is one epoch that ends with a watermark of +infinity: nothing is late, every non-empty window is
emitted once, complete, and early results are ignored. Windows are aligned to 0 and cover
``[end - size, end)``. The stages are those of the JVM's window processors (``WindowRunner``), so that a
plan means the same whichever side of the line the operation falls:

- ``accumulate`` (stage 1 of 2, a sliding or tumbling window whose operation combines): a partition's
  items into one accumulator per (key, frame), a frame being the ``slide``-long slot that holds the
  item's time; at the partition's end, one row per key with all its frames (``(frame end, accumulator)``
  pairs), for the shuffle by key. Accumulating next to the data sends one partial accumulator per key
  and frame over the shuffle, not every item: the reason the planner made two stages;
- ``combine`` (stage 2 of 2): each key's frames from every partition combined per frame, then slid into
  windows;
- ``single`` (after a shuffle by key, or to one partition): the items into frames, then windows; or,
  for sessions, into sessions.

A window's result is ``finish`` (default ``export``, default the accumulator) of an accumulator of its
own: where the accumulator lives on for the next window, ``finish`` gets a copy, so a ``finish`` that
changes its argument changes no other window. Order: items accumulate in the order they arrive, frames
combine in time order; a result that depends on the order of a window's items is not promised one (as
for every window, API.md).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jetspark._items import loads_key
from jetspark.window import KeyedWindowResult, WindowResult
from jetspark.worker.custom_aggregations import VALUES, Output, StageCalls, column
from jetspark.worker.steps import ITEM, PICKLE_PROTOCOL, TS
from jetspark.worker.window_frames import BATCH_ROWS, Frames, Sessions, StreamWindowState, held_windows

# StreamWindowState lived here once: the epoch states of stream jobs saved then name it by this module.
__all__ = ["StreamWindowState", "custom_window_function"]


def custom_window_function(operation: Any, mode: str, window: Mapping[str, Any], keyed: bool, stage: str,
                           dead_letter: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function of one vertex of a window (``window``: the definition's spec, ``kind``
    sliding or session) with ``operation`` (as :func:`~jetspark.worker.operations.operation_of` gives it), over
    the columns ``key`` (canonical key bytes; empty for a global window), ``item`` (a pickled item; in
    ``combine`` mode a key's pickled frames), ``values`` (the pickled values extracted for built-in parts)
    and ``ts`` (the item's time, ms), found by name. See the module docstring for the modes and failures
    (``dead_letter``: the stage has a dead-letter sink, and ``operation`` leaves an accumulator as it was
    where a record fails)."""
    sliding = window["kind"] == "sliding"
    if mode not in ("accumulate", "combine", "single") or (mode != "single" and not sliding):
        raise ValueError(f"no custom window mode {mode!r} for a {window['kind']} window")
    calls = StageCalls(stage, dead_letter)

    def result(state: Frames | Sessions, key: bytes, start: int, end: int, acc: Any) -> bytes:
        value = calls.of_group("finish", state.about(key, "window", start, end), lambda: operation.finish(acc))
        r = KeyedWindowResult(start, end, loads_key(key), value) if keyed else WindowResult(start, end, value)
        return pickle.dumps(r, protocol=PICKLE_PROTOCOL)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        out = Output(failures=mode != "combine", keys=mode == "accumulate")
        state = held_windows(operation, calls, window, keyed)
        for batch in batches:
            groups = [key if keyed else b"" for key in batch.column("key").to_pylist()]
            raws = batch.column(ITEM).to_pylist()
            if mode == "combine":
                for group, raw in zip(groups, raws):
                    for end, partial in pickle.loads(raw):
                        state.combine_in(group, end, partial)  # type: ignore[union-attr]
                continue
            for group, raw, values, ts in zip(groups, raws, column(batch, VALUES, ()), batch.column(TS).to_pylist()):
                state.add(group, ts, pickle.loads(raw), values, out)
            yield out.batch()
        if mode == "accumulate":
            rows: Iterator[tuple[bytes, bytes]] = ((group, pickle.dumps(frames, protocol=PICKLE_PROTOCOL))
                                                   for group, frames in state.by_key())  # type: ignore[union-attr]
        else:
            rows = ((group, result(state, group, start, end, acc)) for group, start, end, acc in state.windows())
        for group, row in rows:
            out.add(row, None, group)
            if len(out) >= BATCH_ROWS:
                yield out.batch()
        yield out.batch()

    return run
