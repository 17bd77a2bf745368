"""Windows of an operation with a user-defined part (:meth:`AggregateOperation.of`) on a stream, on the
Spark engine's epochs: one stage, its frames or sessions (:mod:`jetspark.worker.window_frames`) kept from
one epoch to the next (:mod:`jetspark.worker.epoch_state`)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any

from jetspark._items import loads_key
from jetspark.errors import DeadLetter
from jetspark.window import KeyedWindowResult, WindowResult
from jetspark.worker.carried import CTL
from jetspark.worker.custom_aggregations import VALUES, StageCalls, column
from jetspark.worker.epoch_state import EpochEnd
from jetspark.worker.steps import CHAIN_SCHEMA, FAILURE, ITEM, PICKLE_PROTOCOL, TS
from jetspark.worker.window_frames import BATCH_ROWS, StreamWindowState, held_windows

#: What a window on a stream gives (``PythonEpochStage``): results and dead letters with their time, and a
#: control column, null (the partition's control row is the JVM's).
STREAM_WINDOW_SCHEMA = f"{CHAIN_SCHEMA}, {TS} bigint, {CTL} binary"
def stream_window_function(operation: Any, window: Mapping[str, Any], keyed: bool, stage: str, dead_letter: bool
                           ) -> Callable[[Iterator[Any], StreamWindowState | None, EpochEnd], Generator[Any, None, Any]]:
    """The function, run from epoch to epoch (:func:`~jetspark.worker.epoch_state.kept_across_epochs`), of
    a single-stage window of ``operation`` on a stream (the planner gives such a window one stage), over
    the columns ``key``, ``values``, ``item`` and ``ts``. It does what the JVM's window processors do in an
    epoch (docs/streaming.md, "Windows"):

    - an event is late where the watermark of an epoch before had closed its frame (a session: where its
      time is below that watermark): dropped and counted, and where the stage routes its failures, a
      ``LateEvent`` dead letter; the others go into their frames or sessions as in a batch;
    - at the epoch's end, the windows the new watermark closes (ending at or before it; a session: before
      it) are emitted, in end order, and their frames or sessions that no later window holds are let go;
      when every sender is done, every window;
    - then, at most once per ``early_results_period_ms`` of the epochs' time (the first one period after
      the first epoch), the partial result (``export``) of every window still open, ``is_early=True``.

    Each result leaves with the time ``end - 1``."""
    period = window.get("early_results_period_ms") or 0
    calls = StageCalls(stage, dead_letter)

    def result(key: bytes, start: int, end: int, value: Any, early: bool) -> bytes:
        r = (KeyedWindowResult(start, end, loads_key(key), value, early) if keyed
             else WindowResult(start, end, value, early))
        return pickle.dumps(r, protocol=PICKLE_PROTOCOL)

    def run(batches: Iterator[Any], state: StreamWindowState | None, end: EpochEnd) -> Generator[Any, None, Any]:
        state = StreamWindowState() if state is None else state
        held = held_windows(operation, calls, window, keyed)
        held.table = state.table
        out = _TimedOutput()
        for batch in batches:
            groups = [key if keyed else b"" for key in batch.column("key").to_pylist()]
            for group, raw, values, ts in zip(groups, batch.column(ITEM).to_pylist(), column(batch, VALUES, ()),
                                              batch.column(TS).to_pylist()):
                item = pickle.loads(raw)
                out.ts = ts
                if not held.late_on_stream(ts, state):
                    held.add(group, ts, item, values, out)
                    continue
                end.late_dropped += 1
                if dead_letter:
                    letter = DeadLetter(item, stage, f"LateEvent: the event at {ts} came after watermark {state.watermark} "
                                                     f"of window stage '{stage}' had closed its window")
                    out.add(pickle.dumps(letter, protocol=PICKLE_PROTOCOL), stage)
            yield out.batch()
        if end.done:
            closed = held.open_on_stream(state)
        elif end.watermark > state.watermark:
            state.watermark = end.watermark
            closed = held.closed_on_stream(state)
        else:
            closed = iter(())
        yield from out.results(sorted(closed, key=lambda w: w[2]),
                               lambda key, start, stop, acc: result(key, start, stop, calls.of_group(
                                   "finish", held.about(key, "window", start, stop), lambda: operation.finish(acc)), False))
        if state.early_at is None:
            state.early_at = end.time_ms + period
        elif period and not end.done and end.time_ms >= state.early_at:
            state.early_at = end.time_ms + period
            still_open = held.open_on_stream(state, keep=True)
            yield from out.results(sorted(still_open, key=lambda w: w[2]),
                                   lambda key, start, stop, acc: result(key, start, stop, calls.of_group(
                                       "export", held.about(key, "window", start, stop), lambda: operation.export(acc)), True))
        return state

    return run


class _TimedOutput:
    """The rows of a window on a stream (:data:`STREAM_WINDOW_SCHEMA`): each result or dead letter with its
    time, ``ts`` (set before a record is accumulated, so that its dead letter keeps the record's time)."""

    def __init__(self) -> None:
        self.ts = 0
        self._items: list[bytes] = []
        self._failures: list[str | None] = []
        self._times: list[int] = []

    def add(self, item: bytes, failure: str | None = None, key: bytes = b"", row: int = -1) -> None:
        """As :meth:`Output.add`, which a record's failure goes to (:meth:`StageCalls.accumulated`); its group
        and input row mean nothing here."""
        self._items.append(item)
        self._failures.append(failure)
        self._times.append(self.ts)

    def results(self, windows: Iterable[tuple[bytes, int, int, Any]], made: Callable[[bytes, int, int, Any], bytes]
                ) -> Iterator[Any]:
        """The batches of ``windows``' results, as ``made`` pickles each, timed ``end - 1``."""
        for key, start, end, acc in windows:
            self.ts = end - 1
            self.add(made(key, start, end, acc))
            if len(self._items) >= BATCH_ROWS:
                yield self.batch()
        yield self.batch()

    def batch(self) -> Any:
        import pyarrow as pa

        n = len(self._items)
        columns = [pa.array(self._items, pa.binary()), pa.array(self._failures, pa.string()),
                   pa.array(self._times, pa.int64()), pa.nulls(n, pa.binary())]
        self._items, self._failures, self._times = [], [], []
        return pa.RecordBatch.from_arrays(columns, names=[ITEM, FAILURE, TS, CTL])


