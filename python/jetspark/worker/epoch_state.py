"""State a Python UDF keeps over its partition's items, kept from one epoch of a stream to the next
(docs/streaming.md, "Python stages with state"): ``map_stateful``'s states per key, a rolling aggregation's
accumulators per key, a window's frames or sessions.

The JVM (``PythonEpochStage``) loads the state its partition committed in the epoch before from Spark's
state store and sends it as the first row of the UDF's input: a row whose only non-null column is
``state`` (null there too in the first epoch). The epoch's data rows follow; the senders' control rows
stay in the JVM, which ends the input with one more row of that kind, the epoch's end (:class:`EpochEnd`,
JSON in ``state``): the watermark they coalesce to and whether they are all done. The wrapped function
runs over the data rows, from that state, and learns the epoch's end once its batches are over. After its
last output the wrapper sends the state the function left, pickled, as one more row of that kind, with
the number of events the function dropped as late in ``ts``; the JVM counts them and commits the state as
the next version.

A wrapped function is an Arrow map function that takes the state to start from as a second argument
(None: a fresh one) and the :class:`EpochEnd` as a third, and returns, when its batches end, the state it
leaves (its generator's return value). The state is pickled with cloudpickle, so that it may hold what the
user's functions hold (instances of classes defined next to them, functions).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from jetspark._items import PICKLE_PROTOCOL
from jetspark.worker.carried import TS
from jetspark.worker.steps import StepFailedError

#: The column of the one row that carries the partition's pickled state, in and out.
STATE = "state"



@dataclass
class EpochEnd:
    """What the partition's senders said at the epoch's end, known once the function's batches are over:
    the ``watermark`` they coalesce to (never below the epoch before's; ``-2**63``: none yet), whether they
    are all ``done`` (nothing follows: emit everything held), and the epoch's time (``time_ms``), which
    early results are due by. The function sets ``late_dropped``: the events it dropped as late."""

    watermark: int = -2**63
    done: bool = False
    time_ms: int = 0
    late_dropped: int = 0


StatefulRun = Callable[[Iterator[Any], Any, EpochEnd], Generator[Any, None, Any]]


def kept_across_epochs(run: StatefulRun, stage: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that runs ``run`` over a partition's data rows from the state the first row
    carries (column :data:`STATE`, last), with the epoch's end that the last row carries, and ends its
    output with the state ``run`` leaves. The data rows reach ``run`` without that column; its outputs get
    it, null. ``stage`` names the stage where the state cannot be pickled."""

    def wrapped(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        first = next(batches)
        if first.num_rows == 0 or first.schema.names[-1] != STATE or not _is_state_row(first):
            raise ValueError(f"stage '{stage}': the partition's input does not start with its state row")
        raw = first.column(STATE)[0].as_py()
        restored = None if raw is None else pickle.loads(raw)

        end = EpochEnd()

        def rest() -> Iterator[Any]:
            # The epoch's end is the last row of the last batch: each batch waits until the next one comes.
            pending = first.slice(1)
            for batch in batches:
                if batch.num_rows:
                    yield _without_state(pending)
                    pending = batch
            last = pending.num_rows - 1
            if last < 0 or not _is_state_row(pending.slice(last)):
                raise ValueError(f"stage '{stage}': the partition's input does not end with the epoch's end")
            told = json.loads(pending.column(STATE)[last].as_py())
            end.watermark, end.done, end.time_ms = told["watermark"], told["done"], told["time_ms"]
            yield _without_state(pending.slice(0, last))

        outputs = run(rest(), restored, end)
        schema = None
        while True:
            try:
                out = next(outputs)
            except StopIteration as stop:
                left = stop.value
                break
            schema = out.schema
            yield out.append_column(STATE, pa.nulls(out.num_rows, pa.binary()))
        assert schema is not None, f"stage '{stage}': no output batch for the partition's rows"
        try:
            from pyspark import cloudpickle

            kept = cloudpickle.dumps(left, protocol=PICKLE_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - any failure to pickle is the stage's
            raise StepFailedError(f"stage '{stage}': its state cannot be kept from one epoch to the next: "
                                  f"{type(e).__name__}: {e}") from e
        columns = [pa.array([end.late_dropped], pa.int64()) if field.name == TS else pa.nulls(1, field.type)
                   for field in schema] + [pa.array([kept], pa.binary())]
        yield pa.RecordBatch.from_arrays(columns, names=[*schema.names, STATE])

    return wrapped


def _is_state_row(batch: Any) -> bool:
    """Whether the batch's first row carries nothing but (perhaps) the ``state`` column: the partition's
    state, or the epoch's end."""
    return all(not batch.column(i)[0].is_valid for i in range(batch.num_columns - 1))


def _without_state(batch: Any) -> Any:
    return batch.drop_columns([STATE])
