"""Light jobs (Jet's design doc 020): a pipeline run on the local engine inside the Spark driver's JVM,
started by one call and then only joined or cancelled. No snapshots, no metadata kept; the JVM forgets
the job when it ends. Python callables run in this process: the JVM calls back through py4j's callback
server (bound to 127.0.0.1), one call per batch of items.
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
from jetspark.errors import JobCancelledError, JobFailedError
from jetspark.job import JobStatus
from jetspark.worker.steps import Step, dumps, extract, record_failure, run_steps_numbered

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

    def __init__(self, spark: SparkSession, bridge: Any, pipeline: Pipeline) -> None:
        self.name = f"light-{uuid.uuid4().hex[:12]}"
        spec, objects = pipeline.to_spec()
        self._callback = _Callback(objects)
        _protocol.ensure_callback_server(spark)
        self._j = _protocol.start_light(bridge, spec, objects, self._callback, self.name)

    @property
    def status(self) -> JobStatus:
        """RUNNING, then COMPLETED, FAILED or CANCELLED."""
        return JobStatus(str(self._j.status()))

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


class _Callback:
    """The Python work of one light job, called by the JVM through py4j: ``call(work, packed pickles)``
    returns packed pickles. ``work`` is the JSON description the JVM sends with every call of a vertex
    (``PythonVertices``): a fused chain, a ``map_stateful``, an extraction of keys and values, a chain and
    the extraction of its outputs in one call (``fused``), or printing (a console sink)."""

    def __init__(self, objects: list[Any]) -> None:
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
            spec["steps"] = [Step(s["kind"], self._functions.get(s["ref"]), s["stage"], s["dead_letter"])
                             for s in spec["steps"]]
        elif spec["kind"] == "stateful":
            spec["states"] = {}
        elif spec["kind"] == "fused":
            spec["chain"], spec["extract"] = self._prepared(spec["chain"]), self._prepared(spec["extract"])
        return spec

    def call(self, work: str, data: bytes) -> bytes:
        spec = self._works.get(work) or self._parsed(work)
        frames = unpack_frames(bytes(data))
        if spec["kind"] == "stateful":
            return pack_frames(self._stateful(spec, frames))
        items = [pickle.loads(b) for b in frames]
        out: list[bytes] = []
        if spec["kind"] == "print":
            for item in items:
                print(item)
        elif spec["kind"] == "chain":
            self._chain(spec, items, out)
        elif spec["kind"] == "fused":
            # What the chain's own call would answer, then the extraction's call over it: the chain keeps no
            # dead letters here, so its answers are (empty stage, output pickle) pairs.
            chained: list[bytes] = []
            self._chain(spec["chain"], items, chained)
            self._extract(spec["extract"], [pickle.loads(b) for b in chained[1::2]], out)
        else:
            self._extract(spec, items, out)
        return pack_frames(out)

    def _chain(self, spec: dict[str, Any], items: list[Any], out: list[bytes]) -> None:
        for item in items:
            numbered, letters = run_steps_numbered(spec["steps"], item, dumps)
            answers = [(b"", path, result) for path, result in numbered]
            answers += [(letter.stage.encode(), (), dumps(letter)) for letter in letters]
            _answer(out, answers, spec["sequenced"])

    def _extract(self, spec: dict[str, Any], items: list[Any], out: list[bytes]) -> None:
        """Per item: an empty frame, the key, the values and the item; or, for a record whose extractor failed
        where the stage routes failures, the stage's name and the dead letter."""
        stage, key = spec["stage"], spec["key"]
        for item in items:
            try:
                extracted = [b"" if key is None else canonical_key(extract(key, item, self._functions))]
                extracted += [dumps(extract(v, item, self._functions)) for v in spec["values"]]
            except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                letter = record_failure(stage, spec["dead_letter"], item, e)
                out += [stage.encode(), dumps(letter)]
                continue
            out += [b"", *extracted, dumps(item)]

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
            _answer(out, answers, spec["sequenced"])
        return out

    def ping(self) -> bool:
        return True

    class Java:
        implements = ["io.jetspark.engine.local.PythonCallback"]


def _answer(out: list[bytes], answers: list[tuple[bytes, tuple[int, ...], bytes]], sequenced: bool) -> None:
    """Appends the answers for one input item, each (the stage it failed in, empty for an output; its
    fan-out path below the item; the pickle): as pairs (stage, pickle), or, where the items keep their
    sequence ids, as the number of answers, then triples (stage, path joined by dots, pickle), so that
    the JVM gives each output its item's id extended by the path (``PythonVertices.sequencedOutputs``)."""
    if sequenced:
        out.append(str(len(answers)).encode())
    for stage, path, pickled in answers:
        out += [stage, ".".join(map(str, path)).encode(), pickled] if sequenced else [stage, pickled]
