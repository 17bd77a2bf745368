"""Jobs: configuration, status, and a running job."""

from __future__ import annotations

import enum
import json
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jetspark import _protocol
from jetspark._console import ConsolePrinter
from jetspark._failures import describe as describe_failure
from jetspark._progress import ProgressReporter
from jetspark._row_sinks import attach as attach_row_sinks
from jetspark._shipping import ship_modules_of
from jetspark.errors import JobCancelledError, JobFailedError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jetspark.pipeline import Pipeline

__all__ = ["Job", "JobConfig", "JobStatus", "ProcessingGuarantee"]


class ProcessingGuarantee(enum.Enum):
    """What a job promises after a failure: nothing, no loss (maybe duplicates), or exactly once."""

    NONE = "NONE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    EXACTLY_ONCE = "EXACTLY_ONCE"


class JobStatus(enum.Enum):
    NOT_RUNNING = "NOT_RUNNING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True)
class JobConfig:
    """How a job runs. A job started again with the same ``checkpoint_dir`` resumes from its last snapshot.
    A stream job starts a micro-batch (an epoch) every ``trigger_interval_ms``, or as soon as the last one
    ends with 0; without a ``checkpoint_dir`` it keeps its state in a temporary directory, removed at its end.
    With ``progress_interval_ms``, a stream job writes a line of its progress to stderr at that interval
    (epochs, watermark and lag, items read and written, late drops, state); off by default.
    A light job (:meth:`JetSession.new_light_job`) collects each DataFrame or files source to the driver,
    and refuses one of more than ``light_job_max_source_rows`` rows; its start runs it on the calling thread
    for up to ``light_job_start_us`` microseconds (0: not at all; the batch being processed then is
    finished first) before the engine's threads take it over, so that a small job has ended when its start
    returns.

    Examples
    --------
    >>> JobConfig(name="q5", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE).snapshot_interval_ms
    10000
    >>> JobConfig(snapshot_interval_ms=0)
    Traceback (most recent call last):
    ...
    ValueError: JobConfig(snapshot_interval_ms): must be positive, not 0
    """

    name: str | None = None
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE
    snapshot_interval_ms: int = 10_000
    checkpoint_dir: str | None = None
    partition_idle_timeout_ms: int = 60_000
    trigger_interval_ms: int = 0
    progress_interval_ms: int | None = None
    light_job_max_source_rows: int = 100_000
    light_job_start_us: int = 5_000

    def __post_init__(self) -> None:
        if not isinstance(self.processing_guarantee, ProcessingGuarantee):
            raise TypeError("JobConfig(processing_guarantee): must be a ProcessingGuarantee")
        for name in ("trigger_interval_ms", "light_job_start_us"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"JobConfig({name}): must be 0 or more, not {value!r}")
        for name in ("snapshot_interval_ms", "partition_idle_timeout_ms", "progress_interval_ms",
                     "light_job_max_source_rows"):
            value = getattr(self, name)
            if name == "progress_interval_ms" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"JobConfig({name}): must be positive, not {value!r}")


class Job:
    """A pipeline running on Spark (Jet's ``Job``). Start one with :meth:`JetSession.new_job`.

    The job runs on a thread of its own: ``join()`` waits for it, ``cancel()`` cancels its Spark jobs. A
    pipeline that reads a stream runs on the epoch engine (docs/streaming.md): a Structured Streaming
    query whose micro-batches are its epochs; ``join()`` returns once a finite stream is complete.
    """

    def __init__(self, spark: SparkSession, bridge: Any, pipeline: Pipeline, config: JobConfig) -> None:
        self._spark = spark
        self._bridge = bridge
        self._pipeline = pipeline
        self.config = config
        self.name = config.name or f"job-{uuid.uuid4().hex[:8]}"
        self._group = f"jetspark-{self.name}-{uuid.uuid4().hex}"
        self._status = JobStatus.NOT_RUNNING
        self._error: BaseException | None = None
        self._metrics: dict[str, Any] = {}
        self._cancelled = False
        self._stream: Any = None  # the JVM's StreamingJob, once a stream job has started
        self._thread = threading.Thread(target=self._run, name=f"jetspark {self.name}", daemon=True)
        self._status = JobStatus.STARTING
        self._thread.start()

    @property
    def status(self) -> JobStatus:
        return self._status

    def join(self, timeout: float | None = None) -> None:
        """Waits until the job ends; raises :class:`JobFailedError` (with the failing stage) if it failed,
        :class:`JobCancelledError` if it was cancelled, TimeoutError if ``timeout`` seconds pass first."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"job {self.name} still {self._status.value} after {timeout} s")
        if self._status is JobStatus.CANCELLED:
            raise JobCancelledError(f"job {self.name} was cancelled")
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """Cancels the job's running Spark jobs (a stream job: stops its query); ``join()`` then raises
        :class:`JobCancelledError`."""
        self._cancelled = True
        if self._stream is not None:
            self._stream.cancel()
        self._spark.sparkContext.cancelJobGroup(self._group)

    def metrics(self) -> dict[str, Any]:
        """``vertices``: per vertex of the plan, ``items_in``, ``items_out``, ``dead_letters`` (complete once
        the job ends); ``catalyst``: the vertices Catalyst ran; ``typed_windows``: the windows that read a
        DataFrame's rows in the JVM; ``columnar_windows``: those of them whose frames are columns of
        numbers; ``physical_plans``: Spark's plan per sink.

        A stream job's, also while it runs: ``epochs`` done, ``watermark`` (what its sinks' inputs
        coalesced to), ``late_events_dropped`` (by all its windows), ``typed_windows`` (those whose first
        stage reads a streaming DataFrame's rows in the JVM), ``columnar_windows`` (those of them whose frames
        are columns of numbers), and ``vertices``: per vertex
        ``items_in``, ``items_out``, ``watermark`` and ``watermark_lag_ms`` (behind the wall clock),
        ``state_bytes``, and per window its ``late_events_dropped`` (docs/streaming.md, "Metrics")."""
        if self._stream is not None and self._status is JobStatus.RUNNING:
            return json.loads(self._stream.metricsJson())
        return json.loads(json.dumps(self._metrics))

    def _run(self) -> None:
        spark = self._spark
        console_lists: list[str] = []
        detach_row_sinks = None
        try:
            spark.sparkContext.setJobGroup(self._group, self.name, interruptOnCancel=True)
            spec, objects = self._pipeline.to_spec()
            if any(node["stream"] for node in spec["nodes"]):
                self._run_stream(spec, objects)
                return
            prepared = _protocol.PreparedBatch(self._bridge, spark, spec, objects)
            ship_modules_of(objects)
            udfs = prepared.python_udfs()
            console_lists = prepared.console_lists(self._group)
            detach_row_sinks = attach_row_sinks(spark, self._bridge, spec, objects, self._group)
            # cancelJobGroup reaches only Spark jobs already running: a cancel before them is checked here.
            if self._cancelled:
                self._status = JobStatus.CANCELLED
                return
            self._status = JobStatus.RUNNING
            self._metrics = prepared.run(udfs, self._group)
            for name in console_lists:
                for item in _protocol.get_list(self._bridge, name):
                    print(item)
            self._status = JobStatus.CANCELLED if self._cancelled else JobStatus.COMPLETED
        except _protocol.jvm_errors() as e:
            self._finish_failed(e)
        except BaseException as e:  # noqa: BLE001 - every failure must reach join()
            self._error = e
            self._status = JobStatus.FAILED
        finally:
            if detach_row_sinks is not None:
                detach_row_sinks()
            for name in console_lists:
                self._bridge.clearList(name)

    def _run_stream(self, spec: dict[str, Any], objects: list[Any]) -> None:
        prepared = _protocol.PreparedStream(self._bridge, self._spark, spec, objects)
        ship_modules_of(objects)
        udfs = prepared.python_udfs()
        checkpoint = self.config.checkpoint_dir or tempfile.mkdtemp(prefix="jetspark-stream-")
        detach_row_sinks = attach_row_sinks(self._spark, self._bridge, spec, objects, self._group)
        console = ConsolePrinter(self._bridge, prepared.console_lists(self._group))
        try:
            if self._cancelled:
                self._status = JobStatus.CANCELLED
                return
            self._stream = prepared.start(udfs, self.name, checkpoint, self.config.trigger_interval_ms,
                                          self.config.partition_idle_timeout_ms, self._group,
                                          self.config.processing_guarantee.value)
            if self._cancelled:  # cancelled while the query started, before cancel() could reach it
                self._stream.cancel()
            self._status = JobStatus.RUNNING
            interval = self.config.progress_interval_ms
            progress = None if interval is None else ProgressReporter(self.name, self.metrics, interval)
            try:
                completed = self._stream.awaitCompletion()
            finally:
                if progress is not None:
                    progress.stop()
            self._metrics = json.loads(self._stream.metricsJson())
            self._status = JobStatus.COMPLETED if completed and not self._cancelled else JobStatus.CANCELLED
        finally:
            console.stop()
            detach_row_sinks()
            if self.config.checkpoint_dir is None:
                shutil.rmtree(checkpoint, ignore_errors=True)

    def _finish_failed(self, e: BaseException) -> None:
        if self._cancelled:
            self._status = JobStatus.CANCELLED
            return
        failure = describe_failure(e)
        self._error = JobFailedError(f"job {self.name} failed: {failure.text}", stage=failure.stage)
        self._error.__cause__ = e
        self._status = JobStatus.FAILED

    def __repr__(self) -> str:
        return f"Job({self.name!r}, {self._status.value})"
