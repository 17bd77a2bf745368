"""Fused Python steps: one Arrow map UDF runs a whole chain of map/filter/flat_map/peek per item, so a
chain of Python callables costs one trip through a Python worker, not one per step.

Opaque items travel as one binary column ``item`` holding a pickle. The chain's output adds a
``failure`` column: null for a result, or, for a record that a stage routed to a dead-letter sink
failed on, that stage's name, with ``item`` holding a pickled :class:`~jetspark.errors.DeadLetter`.

An extraction (the keys, values or timestamp a stage reads from each item entering it) of a stage
routed to a dead-letter sink adds a ``failure`` column too: a record whose extractor raised gives a row
with that stage's name there and a pickled :class:`~jetspark.errors.DeadLetter` in ``item``, which the
JVM sends to the stage's dead letters instead of into the stage.

Items may carry columns beside them (:mod:`jetspark.worker.carried`): their timestamp (ms) between
``add_timestamps`` and a window, read once where items are stamped (an extraction with a
``timestamp``), and their sequence id under ``preserve_order``. Every output of a chain keeps what the
record it came from carried, whatever the steps made of the item (a flat_map's outputs with their own
place in the fan-out path); so does every output of ``map_stateful`` (:func:`stateful_function`) and
every output of a hash join's mapper for a streamed item (its chain of one map step over the JVM's
joined tuples, which carry the item's time and id).
"""

from __future__ import annotations

import json
import numbers
import pickle
import sys
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from jetspark._items import PICKLE_PROTOCOL, canonical_key, loads_key
from jetspark.errors import DeadLetter
from jetspark.worker.carried import TS, carried_for, carried_schema
from jetspark.worker.event_time import timestamp_ms

ITEM = "item"
FAILURE = "failure"
OPAQUE_SCHEMA = f"{ITEM} binary"
CHAIN_SCHEMA = f"{ITEM} binary, {FAILURE} string"
#: What an extraction gives per item entering an aggregation: key, the operation's values, the item.
EXTRACTED_SCHEMA = f"key binary, values array<binary>, {ITEM} binary"


def routes_failures(dead_letter: bool, time_stage: tuple[str, bool] | None) -> bool:
    """Whether an extraction gives a ``failure`` column: its stage routes failures, or the stage its time
    belongs to does (see :func:`extraction_function`)."""
    return dead_letter or (time_stage is not None and time_stage[1])


def extraction_schema(timed: bool, dead_letter: bool) -> str:
    """What an extraction gives per item: :data:`EXTRACTED_SCHEMA`, then ``failure`` where a stage whose
    failures it makes routes them to a dead-letter sink, then ``ts`` last where items carry their time (at
    a window's input, or where they are stamped)."""
    failure = f", {FAILURE} string" if dead_letter else ""
    return f"{EXTRACTED_SCHEMA}{failure}" + carried_schema([TS] if timed else [])


@dataclass(frozen=True)
class Step:
    """One Python step of a fused chain: ``kind`` is map, filter, flat_map or peek; ``stage`` names it in
    errors; ``dead_letter`` routes its failures to a dead-letter sink instead of failing the job."""

    kind: str
    fn: Callable[[Any], Any] | None
    stage: str
    dead_letter: bool = False


def join_map_step(mapper: Callable[..., Any], stage: str, dead_letter: bool) -> Step:
    """A hash join's mapper as a map step over the engine's joined tuples ``(left, right_1, ..., right_n)``:
    both engines join in the JVM and map in Python."""
    return Step("map", lambda joined: mapper(*joined), stage, dead_letter)


class StepFailedError(Exception):
    """A user function raised on a record; the message names the stage and the record."""


def dumps(value: Any) -> bytes:
    """The pickle an item leaves a Python step as."""
    return pickle.dumps(value, protocol=PICKLE_PROTOCOL)


def record_failure(stage: str, dead_letter: bool, item: Any, error: Exception) -> DeadLetter:
    """What a user function raising ``error`` on ``item`` in ``stage`` makes of the record: its dead letter
    where the stage keeps them (``dead_letter``), else the job's failure, raised, naming the stage and the
    record."""
    if not dead_letter:
        raise StepFailedError(f"stage '{stage}' failed on record {item!r}: {type(error).__name__}: {error}") from error
    return DeadLetter(item, stage, f"{type(error).__name__}: {error}")


def run_steps(steps: list[Step], item: Any, emit: Callable[[Any], Any] = lambda x: x) -> tuple[list[Any], list[DeadLetter]]:
    """What the chain emits for one item, step by step (a plain loop: the reference semantics), and the
    dead letters of records that a stage routed to a dead-letter sink failed on. A failure affects only
    the record it happened on; one in a stage without a dead-letter sink raises StepFailedError.

    Each result leaves as ``emit`` makes it (a pickle, to leave the worker): a result that ``emit``
    fails on (one that cannot be pickled) is a failure of the last step, on the record it was given."""
    results, letters = run_steps_numbered(steps, item, emit)
    return [result for _, result in results], letters


def run_steps_numbered(steps: list[Step], item: Any, emit: Callable[[Any], Any] = lambda x: x
                       ) -> tuple[list[tuple[tuple[int, ...], Any]], list[DeadLetter]]:
    """:func:`run_steps`, each result with its fan-out path below ``item``: the j-th output of a flat_map
    step for its input appends ``j``; map, filter and peek append nothing (the sequence ids of
    :mod:`jetspark.worker.carried`)."""
    items: list[tuple[tuple[int, ...], Any]] = [((), item)]
    letters: list[DeadLetter] = []
    for index, step in enumerate(steps):
        last = index == len(steps) - 1
        produced: list[tuple[tuple[int, ...], Any]] = []
        for path, x in items:
            try:
                outputs: list[tuple[tuple[int, ...], Any]] = []
                if step.kind == "map":
                    result = step.fn(x)  # type: ignore[misc]
                    if result is not None:  # Jet: a map that returns null emits nothing
                        outputs.append((path, result))
                elif step.kind == "filter":
                    if step.fn(x):  # type: ignore[misc]
                        outputs.append((path, x))
                elif step.kind == "flat_map":
                    # Whole or not at all: a generator that fails half-way must not leave half its output.
                    outputs.extend((path + (j,), y) for j, y in enumerate(list(step.fn(x))))  # type: ignore[misc]
                elif step.kind == "peek":
                    print(f"[{step.stage}] {step.fn(x) if step.fn else x}", file=sys.stderr)
                    outputs.append((path, x))
                else:
                    raise ValueError(f"unknown step kind {step.kind!r}")
                produced.extend([(p, emit(y)) for p, y in outputs] if last else outputs)
            except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                letters.append(record_failure(step.stage, step.dead_letter, x, e))
        items = produced
    return items, letters


def chain_function(steps: list[Step]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function (``SQL_MAP_ARROW_ITER_UDF``) that runs ``steps`` over pickled items (the
    first column). Columns after it (an item's ``ts``, its sequence id) are what each item carries: every
    result and dead letter of a record gets that record's values of them, a result's fan-out path
    extended by its own below the record (:mod:`jetspark.worker.carried`)."""
    steps = list(steps)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            out: list[bytes] = []
            failures: list[str | None] = []
            records: list[int] = []  # the input row of each output
            below: list[tuple[int, ...]] = []  # each output's fan-out path below its record
            for row, raw in enumerate(batch.column(0).to_pylist()):
                if raw is None:  # a stream's control row (jetspark.worker.carried): passed on as it is
                    out.append(None)
                    failures.append(None)
                    below.append(())
                    records.append(row)
                    continue
                results, letters = run_steps_numbered(steps, pickle.loads(raw), dumps)
                for path, result in results:
                    out.append(result)
                    failures.append(None)
                    below.append(path)
                for letter in letters:
                    out.append(pickle.dumps(letter, protocol=PICKLE_PROTOCOL))
                    failures.append(letter.stage)
                    below.append(())
                records.extend([row] * (len(results) + len(letters)))
            yield pa.RecordBatch.from_arrays(
                [pa.array(out, pa.binary()), pa.array(failures, pa.string()), *carried_for(batch, records, below=below)],
                names=[ITEM, FAILURE, *batch.schema.names[1:]])

    return run


def extract(spec: dict[str, Any], item: Any, functions: dict[int, Callable[[Any], Any]],
            columns: Sequence[Any] = ()) -> Any:
    """:func:`extract_value`, checked to be a number where the operation it is for takes numbers only
    (``"numbers_for"``: summing, averaging, ...): else the record fails here, as the extractor's failure."""
    value = extract_value(spec, item, functions, columns)
    if "numbers_for" not in spec or type(value) in _BUILT_IN_NUMBERS:
        return value
    # The JVM reads the value's pickle: another number type (numpy's, an IntEnum) goes as the built-in it
    # equals, which Pyrolite reads, rather than failing the job there instead of this record here.
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{spec['numbers_for']} takes numbers, not {type(value).__name__} {value!r}")


_BUILT_IN_NUMBERS = (int, bool, float, Decimal)


def extract_value(spec: dict[str, Any], item: Any, functions: dict[int, Callable[[Any], Any]],
                  columns: Sequence[Any] = ()) -> Any:
    """One key or value of ``item``: a field (a mapping's key or a Row's column, else an attribute), a
    function's result, the item itself, a Column's value that Catalyst gave next to the item's row
    (``{"kind": "column", "slot": i}``: ``columns[i]``), or (``{"kind": "key", "of": spec}``) the
    canonical key bytes of what ``of`` extracts, or (``{"kind": "window_time"}``) a window result's
    timestamp, ``end - 1``. Rows are indexed by name: as attributes, tuple methods
    such as ``count`` and ``index`` would hide columns of those names."""
    kind = spec["kind"]
    if kind == "item":
        return item
    if kind == "column":
        return columns[spec["slot"]]
    if kind == "key":
        return canonical_key(extract(spec["of"], item, functions, columns))
    if kind == "field":
        by_name = isinstance(item, Mapping) or hasattr(item, "__fields__")
        return item[spec["name"]] if by_name else getattr(item, spec["name"])
    if kind == "python":
        return functions[spec["ref"]](item)
    if kind == "window_time":  # Jet's time of a window result: its window's last instant
        return item.end - 1
    raise ValueError(f"unknown extractor kind {kind!r}")


def extraction_function(key: dict[str, Any] | None, values: list[dict[str, Any]], stage: str,
                        functions: dict[int, Callable[[Any], Any]],
                        timestamp: dict[str, Any] | None = None,
                        rows: tuple[str, int] | None = None,
                        dead_letter: bool = False,
                        time_stage: tuple[str, bool] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that gives, per pickled item, its key as :func:`~jetspark._items.canonical_key` bytes (empty
    for a global aggregation), its values' pickles and the item's own pickle, unchanged; at a window's
    input (``timestamp`` given) also the item's timestamp in ms (:func:`~jetspark.worker.event_time.timestamp_ms`).

    An extractor that raises on a record fails the job naming ``stage``, or, with ``dead_letter``, makes
    the record's row a dead letter (see the module docstring): empty key and values, the
    :class:`~jetspark.errors.DeadLetter` of the item as the extractor saw it, ``failure`` = ``stage``.
    With ``time_stage`` (a stage's name, and whether it routes failures), the time belongs to that stage
    (a stream source's, read in the pass that takes its window's key): it is read first, and a record
    whose time fails is that stage's failure.

    With ``rows`` (a schema's JSON and a number of fields ``n``), it reads a DataFrame source's rows
    instead: the first ``n`` fields make the item (a ``Row``, as :func:`rows_to_items_function` makes
    it), the others are the values of the Column extractors that Catalyst evaluated next to it."""
    decode = _opaque_items if rows is None else _rows_with_columns(*rows)
    routes = routes_failures(dead_letter, time_stage)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            keys: list[bytes] = []
            extracted: list[list[bytes]] = []
            times: list[int | None] = []
            raws: list[bytes] = []
            failures: list[str | None] = []
            for raw, item, columns in decode(batch):
                if raw is None:  # a stream's control row (jetspark.worker.carried): nothing to extract
                    keys.append(None)
                    extracted.append(None)
                    times.append(None)
                    raws.append(None)
                    failures.append(None)
                    continue
                failing = time_stage or (stage, dead_letter)
                try:
                    # Everything first, then the row: a record whose timestamp fails has no key either.
                    if time_stage is not None:
                        time = timestamp_ms(extract(timestamp, item, functions, columns))
                        failing = (stage, dead_letter)
                    key_bytes = b"" if key is None else canonical_key(extract(key, item, functions, columns))
                    value_pickles = [pickle.dumps(extract(v, item, functions, columns), protocol=PICKLE_PROTOCOL)
                                     for v in values]
                    if time_stage is None:
                        time = None if timestamp is None else timestamp_ms(extract(timestamp, item, functions, columns))
                    failure = None
                except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                    letter = record_failure(*failing, item, e)
                    key_bytes, value_pickles, time, failure = b"", [], None, failing[0]
                    raw = pickle.dumps(letter, protocol=PICKLE_PROTOCOL)
                keys.append(key_bytes)
                extracted.append(value_pickles)
                times.append(time)
                raws.append(raw)
                failures.append(failure)
            arrays = [pa.array(keys, pa.binary()), pa.array(extracted, pa.list_(pa.binary())), pa.array(raws, pa.binary())]
            names = ["key", "values", ITEM]
            if routes:
                arrays.append(pa.array(failures, pa.string()))
                names.append(FAILURE)
            if timestamp is not None:
                arrays.append(pa.array(times, pa.int64()))
                names.append(TS)
            yield pa.RecordBatch.from_arrays(arrays, names=names)

    return run


def _opaque_items(batch: Any) -> Iterator[tuple[bytes, Any, Sequence[Any]]]:
    """Each pickled item of a batch's ``item`` column: (pickle, item, no Column values); a control row's
    null as (None, None, ())."""
    for raw in batch.column(0).to_pylist():
        yield raw, None if raw is None else pickle.loads(raw), ()


def _rows_with_columns(schema_json: str, fields: int) -> Callable[[Any], Iterator[tuple[bytes, Any, Sequence[Any]]]]:
    """How a batch of rows with Column values after their first ``fields`` fields gives (the item's
    pickle, the item, the Column values)."""

    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(schema_json))
    item_schema, column_schema = StructType(schema.fields[:fields]), StructType(schema.fields[fields:])

    def decode(batch: Any) -> Iterator[tuple[bytes, Any, Sequence[Any]]]:
        import pyarrow as pa
        from pyspark.sql.conversion import ArrowTableToRowsConversion

        table = pa.Table.from_batches([batch])
        items = ArrowTableToRowsConversion.convert(table.select(range(fields)), item_schema)
        columns = ArrowTableToRowsConversion.convert(table.select(range(fields, len(schema.fields))), column_schema)
        for item, values in zip(items, columns):
            yield pickle.dumps(item, protocol=PICKLE_PROTOCOL), item, tuple(values)

    return decode


def passing_on(one_to_one: Callable[[Iterator[Any]], Iterator[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """An Arrow map function over (item, carried columns...) rows that gives what ``one_to_one`` gives
    for the items, with each row's carried columns (its ``ts``, its sequence id) appended as they are.
    ``one_to_one`` must yield one batch per batch and one row per row, keeping nothing between batches
    (an extraction does)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            items = pa.RecordBatch.from_arrays([batch.column(0)], names=[ITEM])
            (out,) = list(one_to_one(iter([items])))
            carried = [batch.column(i) for i in range(1, batch.num_columns)]
            yield pa.RecordBatch.from_arrays([*out.columns, *carried], names=[*out.schema.names, *batch.schema.names[1:]])

    return run


def bound_extraction_function(key: dict[str, Any] | None, values: list[dict[str, Any]], stage: str,
                              objects: list[Any], timestamp: dict[str, Any] | None = None,
                              rows: tuple[str, int] | None = None, dead_letter: bool = False,
                              time_stage: tuple[str, bool] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """:func:`extraction_function` with the Python callables its extractors name taken from ``objects``."""
    def refs(spec: dict[str, Any]) -> list[int]:
        return [spec["ref"]] if spec["kind"] == "python" else refs(spec["of"]) if spec["kind"] == "key" else []

    specs = ([key] if key else []) + values + ([timestamp] if timestamp else [])
    used = [r for s in specs for r in refs(s)]
    return extraction_function(key, values, stage, {r: objects[r] for r in used}, timestamp, rows, dead_letter,
                               time_stage)


def stateful_function(create: Callable[[], Any], fn: Callable[..., tuple[Any, Any]], keyed: bool, stage: str,
                      dead_letter: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function of ``map_stateful``: over the extracted rows (key, values, item) of one
    partition, which holds every item of its keys (or, unkeyed, every item), it keeps a state per key
    from ``create()`` and emits what ``fn(state, key, item)`` (unkeyed: ``fn(state, item)``) returns
    besides the new state, unless that is None. The columns after those three (the item's ``ts``, its
    sequence id, a stream's ``ctl``) are copied from each row to what it gives, result or dead letter (a
    stream's control rows stay in the JVM: :mod:`jetspark.worker.epoch_state`). It starts from ``states``
    (per key's canonical bytes; None: none yet) and returns the states it leaves (:mod:`jetspark.worker.epoch_state`
    keeps them across epochs)."""

    def run(batches: Iterator[Any], states: dict[bytes, Any] | None = None) -> Generator[Any, None, dict[bytes, Any]]:
        import pyarrow as pa

        states = {} if states is None else states
        for batch in batches:
            out: list[bytes | None] = []
            failures: list[str | None] = []
            rows: list[int] = []  # the input row of each output
            for row, (key_bytes, raw) in enumerate(zip(batch.column(0).to_pylist(), batch.column(2).to_pylist())):
                item = pickle.loads(raw)
                state = states[key_bytes] if key_bytes in states else create()
                try:
                    state, output = fn(state, loads_key(key_bytes), item) if keyed else fn(state, item)
                    emitted = None if output is None else dumps(output)
                except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
                    out.append(dumps(record_failure(stage, dead_letter, item, e)))
                    failures.append(stage)
                    rows.append(row)
                    continue
                states[key_bytes] = state
                if emitted is not None:
                    out.append(emitted)
                    failures.append(None)
                    rows.append(row)
            yield pa.RecordBatch.from_arrays(
                [pa.array(out, pa.binary()), pa.array(failures, pa.string()), *carried_for(batch, rows, start=3)],
                names=[ITEM, FAILURE, *batch.schema.names[3:]])
        return states

    return run


def rows_to_items_function(schema_json: str,
                           item_of: Callable[[Any], Any] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that turns a DataFrame's rows into items: pickled PySpark ``Row``s, made by
    Spark's own Arrow-to-Row conversion, so that they equal what ``df.collect()`` gives (maps, nested
    structs, timestamps and all), or what ``item_of`` makes of each (a Kafka source's records). Columns
    after the schema's (what a stream's source reads beside its rows: their time, their substream) are
    passed on after the item as they are."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import json

        import pyarrow as pa
        from pyspark.sql.conversion import ArrowTableToRowsConversion
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(schema_json))
        width = len(schema.fields)
        for batch in batches:
            own = pa.RecordBatch.from_arrays(batch.columns[:width], names=batch.schema.names[:width])
            rows = ArrowTableToRowsConversion.convert(pa.Table.from_batches([own]), schema)
            made = rows if item_of is None else map(item_of, rows)
            items = pa.array([pickle.dumps(r, protocol=PICKLE_PROTOCOL) for r in made], pa.binary())
            yield pa.RecordBatch.from_arrays([items, *batch.columns[width:]], names=[ITEM, *batch.schema.names[width:]])

    return run
