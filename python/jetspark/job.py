"""Jobs: configuration, status, and a running job."""

from __future__ import annotations

import enum
import json
import pickle
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jetspark import _jvm
from jetspark._failures import describe as describe_failure
from jetspark._items import pack_frames
from jetspark._shipping import ship_modules_of
from jetspark._sinks_runtime import attach as attach_row_sinks
from jetspark._typed import jvm_columns
from jetspark.errors import JobCancelledError, JobFailedError

if TYPE_CHECKING:
    from jetspark._session import JetSession
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

    def __post_init__(self) -> None:
        if not isinstance(self.processing_guarantee, ProcessingGuarantee):
            raise TypeError("JobConfig(processing_guarantee): must be a ProcessingGuarantee")
        for name in ("snapshot_interval_ms", "partition_idle_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"JobConfig({name}): must be positive, not {value!r}")


class Job:
    """A pipeline running on Spark (Jet's ``Job``). Start one with :meth:`JetSession.new_job`.

    The job runs on a thread of its own: ``join()`` waits for it, ``cancel()`` cancels its Spark jobs.
    """

    def __init__(self, jet: JetSession, pipeline: Pipeline, config: JobConfig) -> None:
        self._jet = jet
        self._pipeline = pipeline
        self.config = config
        self.name = config.name or f"job-{uuid.uuid4().hex[:8]}"
        self._group = f"jetspark-{self.name}-{uuid.uuid4().hex}"
        self._status = JobStatus.NOT_RUNNING
        self._error: BaseException | None = None
        self._metrics: dict[str, Any] = {}
        self._cancelled = False
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
        """Cancels the job's running Spark jobs; ``join()`` then raises :class:`JobCancelledError`."""
        self._cancelled = True
        self._jet.spark.sparkContext.cancelJobGroup(self._group)

    def metrics(self) -> dict[str, Any]:
        """``vertices``: per vertex of the plan, ``items_in``, ``items_out``, ``dead_letters`` (complete once
        the job ends); ``catalyst``: the vertices Catalyst ran; ``typed_windows``: the windows that read a
        DataFrame's rows in the JVM; ``columnar_windows``: those of them whose frames are columns of
        numbers; ``physical_plans``: Spark's plan per sink."""
        return json.loads(json.dumps(self._metrics))

    def _run(self) -> None:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors.exceptions.captured import CapturedException

        spark = self._jet.spark
        console_lists: list[str] = []
        detach_row_sinks = None
        try:
            spark.sparkContext.setJobGroup(self._group, self.name, interruptOnCancel=True)
            spec, objects = self._pipeline.to_spec()
            prepared = _jvm.call(self._jet._bridge.prepareBatch, spark._jsparkSession, json.dumps(spec),
                                 _jvm_objects(spec, objects), 0)
            ship_modules_of(objects)
            names, udfs = _python_udfs(json.loads(_jvm.call(prepared.pythonWorkJson)), objects)
            console_lists = json.loads(prepared.consoleListsJson(self._group))
            detach_row_sinks = attach_row_sinks(self._jet, spec, objects, self._group)
            # cancelJobGroup reaches only Spark jobs already running: a cancel before them is checked here.
            if self._cancelled:
                self._status = JobStatus.CANCELLED
                return
            self._status = JobStatus.RUNNING
            self._metrics = json.loads(_jvm.call(prepared.run, names, udfs, self._group))
            for name in console_lists:
                for item in self._jet.get_list(name):
                    print(item)
            self._status = JobStatus.CANCELLED if self._cancelled else JobStatus.COMPLETED
        except (Py4JJavaError, CapturedException) as e:
            self._finish_failed(e)
        except BaseException as e:  # noqa: BLE001 - every failure must reach join()
            self._error = e
            self._status = JobStatus.FAILED
        finally:
            if detach_row_sinks is not None:
                detach_row_sinks()
            for name in console_lists:
                self._jet.clear_list(name)

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


def _python_udfs(work: dict[str, Any], objects: list[Any]) -> tuple[list[str], list[Any]]:
    """The Arrow UDFs the JVM asked for (``PreparedBatchJob.pythonWorkJson``), named as it expects."""
    from jetspark._carried import carried_columns
    from jetspark._custom_ops import custom_aggregation_udf_column
    from jetspark._custom_windows import custom_window_udf_column
    from jetspark._python_steps import (Step, chain_udf_column, extraction_udf_column, rows_to_items_udf_column,
                                        stateful_udf_column)
    from jetspark._typed import results_to_items_udf_column

    def ref(r: int | None) -> Any:
        return None if r is None else objects[r]

    def carried(w: dict[str, Any]) -> list[str]:
        return carried_columns(w["timed"], w["sequenced"])

    udfs: dict[str, Any] = {}
    for chain in work["chains"]:
        steps = [Step(s["kind"], ref(s["ref"]), s["stage"], s["dead_letter"]) for s in chain["steps"]]
        udfs[f"chain:{chain['vertex']}"] = chain_udf_column(steps, carried(chain))
    for e in work["extractions"]:
        rows = (e["rows_schema"], e["row_fields"]) if "rows_schema" in e else None
        udfs[f"extract:{e['vertex']}:{e['ordinal']}"] = extraction_udf_column(
            e["key"], e["values"], e["stage"], objects, e.get("timestamp"), rows, carried(e), e["dead_letter"])
    for f in work["dataframe_sources"]:
        udfs[f"rows:{f['vertex']}"] = rows_to_items_udf_column(f["schema"])
    for m in work["stateful"]:
        udfs[f"stateful:{m['vertex']}"] = stateful_udf_column(ref(m["create_ref"]), ref(m["fn_ref"]), m["keyed"], m["stage"],
                                                              m["dead_letter"], carried(m))
    for c in work["custom_aggregations"]:
        if c["window"] is not None:
            (operation,) = c["operations"]
            udfs[f"custom:{c['vertex']}"] = custom_window_udf_column(operation, objects, c["mode"], c["window"],
                                                                     c["keyed"], c["stage"], c["dead_letter"])
        else:
            udfs[f"custom:{c['vertex']}"] = custom_aggregation_udf_column(c["operations"], objects, c["mode"],
                                                                          c["keyed"], c["stage"], c["dead_letter"],
                                                                          carried(c))
    for j in work["joins"]:
        mapper = ref(j["mapper_ref"])
        pair_mapper = _pair_mapper(mapper)
        udfs[f"join:{j['vertex']}"] = chain_udf_column([Step("map", pair_mapper, j["stage"], j["dead_letter"])], carried(j))
    for r in work["typed_results"]:
        udfs[f"results:{r['vertex']}"] = results_to_items_udf_column(r["schema"], r["shape"])
    return list(udfs), [column._jc for column in udfs.values()]


def _pair_mapper(mapper: Any) -> Any:
    """The join's mapper over the engine's tuples ``(left, right_1, ..., right_n)``."""
    return lambda pair: mapper(*pair)


def _jvm_objects(spec: dict[str, Any], objects: list[Any]) -> list[Any]:
    """What the JVM gets for the spec's refs: item pickles for `Sources.items`, the JVM DataFrame for
    `Sources.dataframe`, the JVM Column of a Column extractor, and None for what stays in Python (callables)."""
    out: list[Any] = [None] * len(objects)
    jvm_columns(spec, objects, out)
    for node in spec["nodes"]:
        source = node["args"].get("source")
        if source is None:
            continue
        refs = source["refs"]
        if "items" in refs:
            out[refs["items"]] = pack_frames([pickle.dumps(x, protocol=5) for x in objects[refs["items"]]])
        if "df" in refs:
            out[refs["df"]] = objects[refs["df"]]._jdf
    return out
