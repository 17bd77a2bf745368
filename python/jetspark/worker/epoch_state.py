"""State a Python UDF keeps over its partition's items, kept from one epoch of a stream to the next
(docs/streaming.md, "Python stages with state"): ``map_stateful``'s states per key, a rolling aggregation's
accumulators per key.

The JVM (``PythonEpochStage``) loads the state its partition committed in the epoch before from Spark's
state store and sends it as the first row of the UDF's input: a row whose only non-null column is
``state`` (null there too in the first epoch). The wrapped function runs over the rest of the rows, from
that state. After its last output the wrapper sends the state the function left, pickled, as one more row
of the same kind, which the JVM commits as the next version once every sender's control row is in.
Control rows pass through the wrapped function (``jetspark.worker.carried``).

A wrapped function is an Arrow map function that takes the state to start from as a second argument
(None: a fresh one) and returns, when its batches end, the state it leaves (its generator's return value).
The state is pickled with cloudpickle, so that it may hold what the user's functions hold (instances of
classes defined next to them, functions).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Generator, Iterator
from typing import Any

from jetspark._items import PICKLE_PROTOCOL
from jetspark.worker.steps import StepFailedError

#: The column of the one row that carries the partition's pickled state, in and out.
STATE = "state"

StatefulRun = Callable[[Iterator[Any], Any], Generator[Any, None, Any]]


def kept_across_epochs(run: StatefulRun, stage: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that runs ``run`` over a partition's rows from the state the first row
    carries (column :data:`STATE`, last), and ends its output with the state ``run`` leaves. The other
    rows reach ``run`` without that column; its outputs get it, null. ``stage`` names the stage where the
    state cannot be pickled."""

    def wrapped(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        first = next(batches)
        if first.num_rows == 0 or first.schema.names[-1] != STATE or not _is_state_row(first):
            raise ValueError(f"stage '{stage}': the partition's input does not start with its state row")
        raw = first.column(STATE)[0].as_py()
        restored = None if raw is None else pickle.loads(raw)

        def rest() -> Iterator[Any]:
            yield _without_state(first.slice(1))
            for batch in batches:
                yield _without_state(batch)

        outputs = run(rest(), restored)
        schema = None
        while True:
            try:
                out = next(outputs)
            except StopIteration as end:
                left = end.value
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
        columns = [pa.nulls(1, field.type) for field in schema] + [pa.array([kept], pa.binary())]
        yield pa.RecordBatch.from_arrays(columns, names=[*schema.names, STATE])

    return wrapped


def _is_state_row(batch: Any) -> bool:
    """Whether the batch's first row carries nothing but (perhaps) the state."""
    return all(not batch.column(i)[0].is_valid for i in range(batch.num_columns - 1))


def _without_state(batch: Any) -> Any:
    return batch.drop_columns([STATE])
