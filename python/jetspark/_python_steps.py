"""Fused Python steps: one Arrow map UDF runs a whole chain of map/filter/flat_map/peek per item, so a
chain of Python callables costs one trip through a Python worker, not one per step.

Opaque items travel as one binary column ``item`` holding a pickle. The chain's output adds a
``failure`` column: null for a result, or, for a record that a stage routed to a dead-letter sink
failed on, that stage's name, with ``item`` holding a pickled :class:`~jetspark.errors.DeadLetter`.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jetspark.errors import DeadLetter

ITEM = "item"
FAILURE = "failure"
OPAQUE_SCHEMA = f"{ITEM} binary"
CHAIN_SCHEMA = f"{ITEM} binary, {FAILURE} string"
PICKLE_PROTOCOL = 5


@dataclass(frozen=True)
class Step:
    """One Python step of a fused chain: ``kind`` is map, filter, flat_map or peek; ``stage`` names it in
    errors; ``dead_letter`` routes its failures to a dead-letter sink instead of failing the job."""

    kind: str
    fn: Callable[[Any], Any] | None
    stage: str
    dead_letter: bool = False


class StepFailedError(Exception):
    """A user function raised on a record; the message names the stage and the record."""


class _Failed(Exception):
    def __init__(self, step: Step, record: Any, error: BaseException) -> None:
        self.step, self.record, self.error = step, record, error


def run_steps(steps: list[Step], item: Any) -> list[Any]:
    """What the chain emits for one item, step by step (a plain loop: the reference semantics)."""
    items = [item]
    for step in steps:
        produced: list[Any] = []
        for x in items:
            try:
                if step.kind == "map":
                    result = step.fn(x)  # type: ignore[misc]
                    if result is not None:  # Jet: a map that returns null emits nothing
                        produced.append(result)
                elif step.kind == "filter":
                    if step.fn(x):  # type: ignore[misc]
                        produced.append(x)
                elif step.kind == "flat_map":
                    produced.extend(step.fn(x))  # type: ignore[misc]
                elif step.kind == "peek":
                    print(f"[{step.stage}] {step.fn(x) if step.fn else x}", file=sys.stderr)
                    produced.append(x)
                else:
                    raise ValueError(f"unknown step kind {step.kind!r}")
            except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                raise _Failed(step, x, e) from e
        items = produced
    return items


def chain_function(steps: list[Step]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function (``SQL_MAP_ARROW_ITER_UDF``) that runs ``steps`` over pickled items."""
    steps = list(steps)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            out: list[bytes] = []
            failures: list[str | None] = []
            for raw in batch.column(0).to_pylist():
                try:
                    for result in run_steps(steps, pickle.loads(raw)):
                        out.append(pickle.dumps(result, protocol=PICKLE_PROTOCOL))
                        failures.append(None)
                except _Failed as f:
                    if not f.step.dead_letter:
                        raise StepFailedError(
                            f"stage '{f.step.stage}' failed on record {f.record!r}: "
                            f"{type(f.error).__name__}: {f.error}") from f.error
                    letter = DeadLetter(f.record, f.step.stage, f"{type(f.error).__name__}: {f.error}")
                    out.append(pickle.dumps(letter, protocol=PICKLE_PROTOCOL))
                    failures.append(f.step.stage)
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary()), pa.array(failures, pa.string())],
                                             names=[ITEM, FAILURE])

    return run


def chain_udf_column(steps: list[Step]) -> Any:
    """The Spark Column of the fused chain, over the ``item`` column of whatever DataFrame the JVM
    applies it to (``SqlBridge.mapInArrow``)."""
    from pyspark.sql.functions import col, pandas_udf
    from pyspark.util import PythonEvalType

    udf = pandas_udf(chain_function(steps), returnType=CHAIN_SCHEMA,  # type: ignore[call-overload]
                     functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    return udf(col(ITEM))
