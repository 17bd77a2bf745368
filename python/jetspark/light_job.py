"""Light jobs (Jet's design doc 020): a pipeline run on the local engine inside the Spark driver's JVM,
started by one call and then only joined or cancelled. No snapshots, no metadata kept; the JVM forgets
the job when it ends. Python callables run in this process: the JVM calls back through py4j's callback
server (bound to 127.0.0.1), one call per batch of items.

The JVM keeps a job in memory only, on two sides: its coordinator knows the job until it has seen it
end, and the engine registers its execution until the execution ends. A light job checker (Jet's) runs
every second while some execution is registered and removes what leaked: an execution never initialised
after a timeout (5 minutes; its job fails), one whose coordinator no longer knows it (it is terminated,
its job ends as cancelled), and one whose owner is gone, this process, which is cancelled: a job is
not left running in the JVM when the Python that could join or cancel it has gone
(docs/light-jobs.md, "The light job checker").
"""

from __future__ import annotations

import json
import pickle
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from jetspark import _protocol
from jetspark._failures import describe as describe_failure
from jetspark._items import canonical_key, loads_key, pack_frames, unpack_frames
from jetspark.errors import JobCancelledError, JobFailedError, PipelineDefinitionError
from jetspark.job import JobConfig, JobStatus
from jetspark.worker.carried import TS
from jetspark.worker.custom_aggregations import ORDINAL, VALUES, column, custom_aggregation_function
from jetspark.worker.custom_windows import custom_window_function
from jetspark.worker.epoch_state import EpochEnd
from jetspark.worker.event_time import timestamp_ms
from jetspark.worker.operations import operation_of
from jetspark.worker.steps import (FAILURE, ITEM, Step, dumps, extract, join_map_step, record_failure,
                                   run_steps_numbered)
from jetspark.worker.stream_windows import stream_window_function
from jetspark.worker.window_frames import StreamWindowState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jetspark.pipeline import Pipeline

__all__ = ["LightJob"]

_JOIN_SLICE_MS = 200


class LightJob:
    """A pipeline running as a light job on the local engine. Start one with
    :meth:`JetSession.new_light_job`; then ``join()`` or ``cancel()``.

    What the local engine cannot run (yet) fails when the job is started, with ``NotImplementedError``
    naming the vertex. A user function that fails makes ``join()`` raise :class:`JobFailedError` naming
    the stage.
    """

    def __init__(self, spark: SparkSession, bridge: Any, pipeline: Pipeline, config: JobConfig) -> None:
        self.name = config.name or f"light-{uuid.uuid4().hex[:12]}"
        spec, objects = pipeline.to_spec()
        _collect_sources(spark, spec, objects, config.light_job_max_source_rows)
        self._callback = _Callback(objects)
        _protocol.ensure_callback_server(spark)
        started = _protocol.start_light(bridge, spec, objects, self._callback, self.name, config.light_job_start_us)
        # A job that completed within its start comes back as its count of late events, not as a handle.
        self._j = _Completed(started) if isinstance(started, int) else started

    @property
    def status(self) -> JobStatus:
        """RUNNING, then COMPLETED, FAILED or CANCELLED."""
        return JobStatus(str(self._j.status()))

    @property
    def late_events(self) -> int:
        """How many late events the job's windows dropped so far: events behind their stream's watermark,
        whose windows were emitted already (a batch has none)."""
        return int(self._j.lateEventsDropped())

    def join(self, timeout: float | None = None) -> None:
        """Waits until the job ends; raises :class:`JobFailedError` (with the failing stage) if it failed,
        :class:`JobCancelledError` if it was cancelled, TimeoutError if ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # In slices, so that Ctrl-C reaches Python while a long job runs.
            while not self._j.join(_JOIN_SLICE_MS if deadline is None else
                                   max(0, min(_JOIN_SLICE_MS, int((deadline - time.monotonic()) * 1000)))):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"light job {self.name} still running after {timeout} s")
        except _protocol.jvm_errors() as e:
            raise self._error(e) from e

    def cancel(self) -> None:
        """Cancels the job; ``join()`` then raises :class:`JobCancelledError`. No effect once it ended."""
        self._j.cancel()

    def _error(self, e: Any) -> Exception:
        if _protocol.is_cancellation(e):
            return JobCancelledError(f"light job {self.name} was cancelled")
        failure = describe_failure(e)
        return JobFailedError(f"light job {self.name} failed: {failure.text}", stage=failure.stage)

    def __repr__(self) -> str:
        return f"LightJob({self.name!r})"


class _Completed:
    """Stands for the JVM's ``LightJob`` of a job that completed within its start (the engine ran it on the
    calling thread to its end): answers as that handle would, without a round trip."""

    def __init__(self, late_events: int) -> None:
        self._late_events = late_events

    def status(self) -> str:
        return JobStatus.COMPLETED.value

    def lateEventsDropped(self) -> int:  # noqa: N802 - the JVM handle's name
        return self._late_events

    def join(self, timeout_ms: int) -> bool:
        return True

    def cancel(self) -> None:
        pass


def _collect_sources(spark: SparkSession, spec: dict[str, Any], objects: list[Any], limit: int) -> None:
    """Turns each DataFrame and files source of ``spec`` into a source of its rows, collected to the driver
    (PySpark ``Row``s, the items that the Spark engine's functions get from such a source, in partition
    order): the local engine runs in the driver. A source of more than ``limit`` rows is refused, as
    collecting it would cost more than a light job saves."""
    for node in spec["nodes"]:
        source = node["args"].get("source") if node["op"] == "source" else None
        if source is None or source["kind"] not in ("dataframe", "files"):
            continue
        if source["kind"] == "dataframe":
            df = objects[source["refs"]["df"]]
        else:
            params = source["params"]
            df = spark.read.format(params["format"]).options(**params["options"]).load(params["path"])
        stage = node["name"] or f"{source['kind']} source"
        if df.isStreaming:
            raise PipelineDefinitionError(
                f"stage '{stage}': a light job reads batches only; run a streaming DataFrame with new_job",
                stage=stage, rule="light job sources")
        rows = df.limit(limit + 1).collect()
        if len(rows) > limit:
            raise PipelineDefinitionError(
                f"stage '{stage}': a light job collects its sources to the driver, and this one has more than "
                f"{limit} rows (JobConfig.light_job_max_source_rows); run it with new_job, or raise the limit",
                stage=stage, rule="light_job_max_source_rows")
        objects.append(rows)
        node["args"]["source"] = {"kind": "items", "params": {"count": len(rows)}, "refs": {"items": len(objects) - 1},
                                  "stream": False}


class _Callback:
    """The Python work of one light job, called by the JVM through py4j: ``call(work, packed pickles)``
    returns packed pickles. ``work`` is the JSON description the JVM sends with every call of a vertex
    (``PythonVertices``): a fused chain, a ``map_stateful``, an extraction of keys and values, a chain and
    the extraction of its outputs in one call (``fused``), the timestamps of ``add_timestamps``, a
    processor's part of an aggregation with a user-defined operation, or printing (a console sink)."""

    def __init__(self, objects: list[Any]) -> None:
        self._objects = objects
        self._functions = dict(enumerate(objects))
        self._works: dict[str, dict[str, Any]] = {}
        # The instances of a vertex call from several JVM threads at once; a work's parsed form (with a
        # map_stateful's states) must be made once.
        self._lock = threading.Lock()

    def _parsed(self, work: str) -> dict[str, Any]:
        with self._lock:
            if work not in self._works:
                self._works[work] = self._prepared(json.loads(work))
            return self._works[work]

    def _prepared(self, spec: dict[str, Any]) -> dict[str, Any]:
        if spec["kind"] == "chain":
            spec["steps"] = [_step(s, self._functions) for s in spec["steps"]]
        elif spec["kind"] == "stateful":
            spec["states"] = {}
        elif spec["kind"] == "custom_aggregation":
            spec["run"] = _CustomAggregation(spec, self._objects)
        elif spec["kind"] == "fused":
            spec["chain"], spec["extract"] = self._prepared(spec["chain"]), self._prepared(spec["extract"])
        return spec

    def call(self, work: str, data: bytes) -> bytes:
        spec = self._works.get(work) or self._parsed(work)
        frames = unpack_frames(bytes(data))
        if spec["kind"] == "stateful":
            return pack_frames(self._stateful(spec, frames))
        if spec["kind"] == "custom_aggregation":
            return pack_frames(spec["run"].call(frames))
        items = [pickle.loads(b) for b in frames]
        out: list[bytes] = []
        if spec["kind"] == "print":
            for item in items:
                print(item)
        elif spec["kind"] == "stamp":
            # Per item: the stage its timestamp failed in (empty for none), the timestamp, the item as it came.
            for raw, item in zip(frames, items):
                try:
                    ts = timestamp_ms(extract(spec["timestamp"], item, self._functions))
                except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                    out += [spec["stage"].encode(), b"", dumps(record_failure(spec["stage"], spec["dead_letter"], item, e))]
                    continue
                out += [b"", str(ts).encode(), raw]
        elif spec["kind"] == "chain":
            self._chain(spec, items, out)
        elif spec["kind"] == "fused":
            # The chain's outputs, then the extraction over them, as the two calls would do: the chain keeps
            # no dead letters here, and its outputs' pickles, unpickled, are what the extraction reads (a
            # copy of each output, as everywhere else) and sends on.
            steps = spec["chain"]["steps"]
            pickles = [output for item in items for _, output in run_steps_numbered(steps, item, dumps)[0]]
            self._extract(spec["extract"], [pickle.loads(b) for b in pickles], out, pickles)
        else:
            self._extract(spec, items, out)
        return pack_frames(out)

    def _chain(self, spec: dict[str, Any], items: list[Any], out: list[bytes]) -> None:
        for item in items:
            numbered, letters = run_steps_numbered(spec["steps"], item, dumps)
            answers = [(b"", path, result) for path, result in numbered]
            answers += [(letter.stage.encode(), (), dumps(letter)) for letter in letters]
            _answer(out, answers, spec["itemwise"])

    def _extract(self, spec: dict[str, Any], items: list[Any], out: list[bytes], pickles: list[bytes] | None = None) -> None:
        """Per item: an empty frame, the key, the values and the item (its pickle from ``pickles`` where given);
        or, for a record whose extractor failed where the stage routes failures, the stage's name and the
        dead letter."""
        stage, key = spec["stage"], spec["key"]
        for at, item in enumerate(items):
            try:
                extracted = [b"" if key is None else canonical_key(extract(key, item, self._functions))]
                extracted += [dumps(extract(v, item, self._functions)) for v in spec["values"]]
            except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                letter = record_failure(stage, spec["dead_letter"], item, e)
                out += [stage.encode(), dumps(letter)]
                continue
            out += [b"", *extracted, dumps(item) if pickles is None else pickles[at]]

    def _stateful(self, spec: dict[str, Any], frames: list[bytes]) -> list[bytes]:
        """``map_stateful`` over pairs of frames (the key's canonical bytes, the item's pickle): the state of
        each key lives here across calls; answers as a chain does (:func:`_answer`), an output keeping its
        item's id."""
        create, fn, states = self._functions[spec["create_ref"]], self._functions[spec["fn_ref"]], spec["states"]
        out: list[bytes] = []
        for key_bytes, raw in zip(frames[::2], frames[1::2]):
            item = pickle.loads(raw)
            state = states[key_bytes] if key_bytes in states else create()
            try:
                state, output = fn(state, loads_key(key_bytes), item) if spec["keyed"] else fn(state, item)
                answers = [] if output is None else [(b"", (), dumps(output))]
            except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                answers = [(spec["stage"].encode(), (), dumps(record_failure(spec["stage"], spec["dead_letter"], item, e)))]
            else:
                states[key_bytes] = state
            _answer(out, answers, spec["itemwise"])
        return out

    def ping(self) -> bool:
        return True

    class Java:
        implements = ["io.jetspark.engine.local.PythonCallback"]


class _Feed:
    """The batches a running aggregation function reads, handed to it one at a time: it reads the next
    when asked for its next output, and ends when the input does."""

    def __init__(self) -> None:
        self.batch: Any = None
        self.ended = False

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> Any:
        if self.ended:
            raise StopIteration
        if self.batch is None:
            raise RuntimeError("the aggregation function read a batch it was not given")
        batch, self.batch = self.batch, None
        return batch


class _CustomAggregation:
    """One processor's part of an aggregation with a user-defined operation: the Spark engine's function
    (:func:`~jetspark.worker.custom_aggregations.custom_aggregation_function`, in the work's mode) over the
    batches the JVM sends (``PythonAggregationVertices.customAggregation`` describes the frames), its
    accumulators kept between calls; a window on a stream runs
    :func:`~jetspark.worker.stream_windows.stream_window_function` epoch by epoch, as the JVM ends them."""

    def __init__(self, spec: dict[str, Any], objects: list[Any]) -> None:
        operations = [operation_of(op, objects, atomic=spec["dead_letter"]) for op in spec["operations"]]
        self._feed = _Feed()
        self._mode, self._window = spec["mode"], spec["window"]
        self._kept: list[Any] = []
        if spec["stream"]:
            # Its frames or sessions kept from one epoch to the next, as on the Spark engine.
            (operation,) = operations
            self._epoch = stream_window_function(operation, self._window, spec["keyed"], spec["stage"], spec["dead_letter"])
            self._state: StreamWindowState | None = None
            return
        if self._window is None:
            function = custom_aggregation_function(operations, spec["mode"], spec["keyed"], spec["stage"], spec["dead_letter"])
        else:
            # A window's function answers once its input ended, not batch by batch: its batches are kept.
            (operation,) = operations
            function = custom_window_function(operation, spec["mode"], self._window, spec["keyed"], spec["stage"],
                                              spec["dead_letter"])
        self._function = function
        self._run = function(self._feed) if self._window is None else None

    def call(self, frames: list[bytes]) -> list[bytes]:
        if frames[0] == b"epoch":
            return self._end_epoch(EpochEnd(watermark=int(frames[1]), time_ms=int(frames[2]), done=frames[3] == b"1"))
        if frames[0] == b"end":
            self._feed.ended = True
            if self._window is None:
                return [frame for batch in self._run for frame in _triples(batch)]
            # A window's result goes with its time, its window's last instant, as the JVM's windows give it.
            timed = self._mode != "accumulate"
            return [frame for batch in self._function(iter(self._kept)) for frame in _triples(batch, timed)]
        batch = self._input(int(frames[1]), frames[2:])
        if self._window is not None:  # a window's batches wait for its end, or for its epoch's on a stream
            self._kept.append(batch)
            return []
        self._feed.batch = batch
        return _triples(next(self._run))

    def _end_epoch(self, end: EpochEnd) -> list[bytes]:
        """A stream's epoch over the batches kept since the last: the late events it dropped, then per row
        of what it emits (:data:`~jetspark.worker.stream_windows.STREAM_WINDOW_SCHEMA`) the stage of a dead
        letter (empty for a result), the row's time and its pickle."""
        run = self._epoch(iter(self._kept), self._state, end)
        self._kept = []
        out: list[bytes] = []
        while True:
            try:
                batch = next(run)
            except StopIteration as stop:
                self._state = stop.value
                break
            for item, failure, ts in zip(batch.column(ITEM).to_pylist(), column(batch, FAILURE), batch.column(TS).to_pylist()):
                out += [(failure or "").encode(), str(ts).encode(), item]
        return [str(end.late_dropped).encode(), *out]

    def _input(self, ordinal: int, frames: list[bytes]) -> Any:
        import pyarrow as pa

        keys, items, times, values = [], [], [], []
        at = 0
        while at < len(frames):
            count = int(frames[at + 3])
            keys.append(frames[at])
            items.append(frames[at + 1])
            times.append(int(frames[at + 2]) if frames[at + 2] else None)
            values.append(frames[at + 4:at + 4 + count])
            at += 4 + count
        columns, names = [pa.array(keys, pa.binary()), pa.array(items, pa.binary())], ["key", ITEM]
        if self._mode != "combine":
            columns += [pa.array([ordinal] * len(keys), pa.int32()), pa.array(values, pa.list_(pa.binary()))]
            names += [ORDINAL, VALUES]
        if self._window is not None:
            columns.append(pa.array(times, pa.int64()))
            names.append(TS)
        return pa.RecordBatch.from_arrays(columns, names=names)


def _triples(batch: Any, timed: bool = False) -> list[bytes]:
    """An aggregation function's output batch as the JVM reads it: per row, the stage its dead letter is
    of (empty for a result), the group's key (empty where the output has none; where ``timed``, a window
    result's time, ``end - 1``) and the pickle."""
    out: list[bytes] = []
    for item, failure, key in zip(batch.column(ITEM).to_pylist(), column(batch, FAILURE), column(batch, "key", b"")):
        if timed and not failure:
            key = str(pickle.loads(item).end - 1).encode()
        out += [(failure or "").encode(), key, item]
    return out


def _step(spec: dict[str, Any], functions: dict[int, Any]) -> Step:
    """A chain's step as the JVM describes it (``PythonVertices.ChainStep``)."""
    fn = functions.get(spec["ref"])
    if spec["kind"] == "join_map":
        return join_map_step(fn, spec["stage"], spec["dead_letter"])
    return Step(spec["kind"], fn, spec["stage"], spec["dead_letter"])


def _answer(out: list[bytes], answers: list[tuple[bytes, tuple[int, ...], bytes]], itemwise: bool) -> None:
    """Appends the answers for one input item, each (the stage it failed in, empty for an output; its
    fan-out path below the item; the pickle): as pairs (stage, pickle), or, where the items keep their
    sequence ids or event time (``itemwise``), as the number of answers, then triples (stage, path joined by dots, pickle), so that
    the JVM gives each output its item's id extended by the path (``PythonVertices.itemwiseOutputs``)."""
    if itemwise:
        out.append(str(len(answers)).encode())
    for stage, path, pickled in answers:
        out += [stage, ".".join(map(str, path)).encode(), pickled] if itemwise else [stage, pickled]
