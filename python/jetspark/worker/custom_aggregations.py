"""Aggregations with a user-defined aggregate operation (:meth:`AggregateOperation.of`) on the Spark batch
engine: its functions are Python's, so every vertex of such an aggregation is one Arrow UDF over the rows
the JVM gives it (``CustomAggregations`` in the JVM says which vertex runs which ``mode``). Where the
user-defined operation is a part (of ``all_of``, or one side of ``aggregate2``), the whole operation runs
here, its built-in parts as :mod:`jetspark.worker.operations` implements them, over the values the engine extracted
for them (the ``values`` column):

- ``accumulate``: stage 1 of 2, per partition: items (with their extracted key) into one accumulator per
  key; at the end of the partition, one row per key with the pickled accumulator;
- ``combine``: stage 2 of 2, after the shuffle by key: partial accumulators combined per key, then
  ``finish`` (default ``export``, default the accumulator itself);
- ``single``: one stage, after the shuffle by key (or to one partition): accumulate, then finish;
- ``rolling``: ``rolling_aggregate``: accumulate, and emit ``export`` of the accumulator after each item.
  What the item carries beside it (its time, its sequence id: :mod:`jetspark.worker.carried`) goes with what
  is emitted for it, result or dead letter, as Jet's rolling aggregation keeps its item's timestamp.

Windows (groups of a key and a frame or session) are :mod:`jetspark.worker.window_frames`'s; both build on the
calls and outputs here (:class:`StageCalls`, :class:`Output`), so a record fails and a group is named
alike everywhere.

``aggregate2`` of two user-defined operations gets both inputs' rows, each tagged with its ``ordinal``,
and keeps one accumulator per input; its result is the pair of results.

A global aggregation is one group (the key column is then ignored: a ``rebalance(key)`` in front of it
only spreads the items), and it has a result also for no items: ``finish(create())``.

Failures follow the engine's rules: a record whose ``accumulate`` raises (in any part) goes to the
stage's dead-letter sink when it has one, and leaves every part's accumulator as it was (a user-defined
``accumulate`` then works on a copy, since it may update the accumulator in place); otherwise it fails the
job naming the stage and the record. A failing ``create``, ``combine``, ``export`` or ``finish`` is about a
group, not a record, and fails the job naming the stage, the group and the function.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

from jetspark._items import loads_key
from jetspark.worker.carried import carried_for
from jetspark.worker.steps import (CHAIN_SCHEMA, FAILURE, ITEM, OPAQUE_SCHEMA, PICKLE_PROTOCOL, StepFailedError,
                                    record_failure)

#: What each mode gives: accumulate adds the group's key (the shuffle to the combining stage reads it).
SCHEMAS = {"accumulate": f"{CHAIN_SCHEMA}, key binary", "combine": OPAQUE_SCHEMA, "single": CHAIN_SCHEMA,
           "rolling": CHAIN_SCHEMA}
_GLOBAL = b""
#: The column that tells a row's input in an aggregation of two inputs (``CustomAggregations.Ordinal``).
ORDINAL = "ordinal"
#: The column of the values extracted for an operation's built-in parts (pickles, in slot order).
VALUES = "values"


class StageCalls:
    """How one stage calls its operation's functions, and what their failures become (see the module
    docstring): a failing ``accumulate`` is its record's failure, any other function's a group's."""

    def __init__(self, stage: str, dead_letter: bool) -> None:
        self.stage, self.dead_letter = stage, dead_letter

    def of_group(self, name: str, about: object, fn: Callable[[], Any]) -> Any:
        """``fn()``, a call of the function ``name`` about a group (``str(about)`` describes it, made only
        when the call fails): its failure fails the job."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
            raise StepFailedError(f"stage '{self.stage}' failed on record {about} in {name}: {type(e).__name__}: {e}") from e

    def accumulated(self, op: Any, acc: Any, item: Any, values: Sequence[bytes], out: Output, group: bytes,
                    row: int = -1) -> tuple[bool, Any]:
        """``(True, the new accumulator)`` of ``acc`` with ``item`` (and its extracted ``values``' pickles),
        or ``(False, acc)`` where the record failed and went to ``out`` as a dead letter of ``group``
        (for input ``row``, where ``out`` carries columns)."""
        try:
            commit = op.prepare(acc, item, [pickle.loads(v) for v in values])
        except Exception as e:  # noqa: BLE001 - any user error is the record's failure
            out.add(pickle.dumps(record_failure(self.stage, self.dead_letter, item, e), protocol=PICKLE_PROTOCOL),
                    self.stage, group, row)
            return False, acc
        return True, commit()


class _Group:
    """The group a call of the operation is about, put into words only when the call fails: a combine
    runs once per partial of a group, and unpickling the group's key for each would cost more than the
    call (as a window's, see ``window_frames._About``)."""

    __slots__ = ("key",)

    def __init__(self, key: bytes | None) -> None:
        self.key = key

    def __str__(self) -> str:
        return f"<group of key {loads_key(self.key)!r}>" if self.key is not None else "<the whole input>"


class Output:
    """The rows of one Arrow batch a UDF gives: ``item`` (a pickle), then ``failure`` (None, or the stage
    whose dead letter ``item`` is) where the UDF gives dead letters, then ``key`` where its rows cross a
    shuffle by group (a first stage's partial results), then the ``carried`` columns, copied from the
    input row each output was made for (the last columns of the input batch)."""

    def __init__(self, failures: bool, keys: bool, carried: Sequence[str] = ()) -> None:
        self.failures, self.keys, self.carried = failures, keys, list(carried)
        self._items: list[bytes] = []
        self._failures: list[str | None] = []
        self._keys: list[bytes] = []
        self._rows: list[int] = []

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: bytes | None, failure: str | None = None, key: bytes = b"", row: int = -1) -> None:
        self._items.append(item)
        self._failures.append(failure)
        self._keys.append(key)
        self._rows.append(row)

    def batch(self, source: Any = None) -> Any:
        """The rows added so far as a batch, their carried columns taken from the input batch ``source``
        that the rows were made from; the output is empty again."""
        import pyarrow as pa

        columns, names = [pa.array(self._items, pa.binary())], [ITEM]
        if self.failures:
            columns.append(pa.array(self._failures, pa.string()))
            names.append(FAILURE)
        if self.keys:
            columns.append(pa.array(self._keys, pa.binary()))
            names.append("key")
        if self.carried:
            start = source.num_columns - len(self.carried)
            assert source.schema.names[start:] == self.carried, \
                f"carried columns {self.carried} not last in {source.schema.names}"
            columns.extend(carried_for(source, self._rows, start=start))
            names.extend(self.carried)
        self._items, self._failures, self._keys, self._rows = [], [], [], []
        return pa.RecordBatch.from_arrays(columns, names=names)


def column(batch: Any, name: str, default: Any = None) -> list[Any]:
    """Column ``name`` of an Arrow batch as Python values, or ``default`` for each row where it has none."""
    return batch.column(name).to_pylist() if name in batch.schema.names else [default] * batch.num_rows


def custom_aggregation_function(operations: Sequence[Any], mode: str, keyed: bool, stage: str,
                                dead_letter: bool, carried: Sequence[str] = ()) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function of one vertex of an aggregation with one operation per input
    (``operations``: as :func:`~jetspark.worker.operations.operation_of` gives them), over the columns ``key``
    (canonical key bytes), ``item`` (a pickled item; in ``combine`` mode a pickled partial accumulator),
    ``values`` (the pickled values extracted for the built-in parts; not in ``combine`` mode) and, for
    several inputs, ``ordinal`` (the row's input), found by name among the columns of the rows it is
    given. A group keeps one accumulator per input; its result is that of the one operation, or the tuple
    of the results (``aggregate2``). See the module docstring for the modes and the failure rules
    (``dead_letter``: the stage has a dead-letter sink, and ``operations`` leave an accumulator as it
    was where a record fails). In ``rolling`` mode the ``carried`` columns, the last of each row, go with
    what is emitted for it."""
    if mode not in SCHEMAS:
        raise ValueError(f"unknown custom aggregation mode {mode!r}")
    if carried and mode != "rolling":
        raise ValueError(f"carried columns {list(carried)} beside the results of {mode!r}: each is made of many items")
    ops = list(operations)
    calls = StageCalls(stage, dead_letter)

    def about_group(group: bytes) -> _Group:
        return _Group(group if keyed else None)

    def create(record: object) -> list[Any]:
        return calls.of_group("create", record, lambda: [op.create() for op in ops])

    def results(group: bytes, accs: list[Any], final: bool) -> bytes:
        name = "finish" if final else "export"
        values = calls.of_group(name, about_group(group),
                                lambda: [(op.finish if final else op.export)(acc) for op, acc in zip(ops, accs)])
        value = values[0] if len(ops) == 1 else tuple(values)
        return pickle.dumps((loads_key(group), value) if keyed else value, protocol=PICKLE_PROTOCOL)

    def run(batches: Iterator[Any], table: dict[bytes, list[Any]] | None = None) -> Generator[Any, None, dict[bytes, list[Any]]]:
        # Per group, in first-seen order: one accumulator per input; a rolling aggregation on a stream starts
        # from the table of the epoch before (jetspark.worker.epoch_state) and leaves its own.
        table = {} if table is None else table
        out = Output(failures=mode != "combine", keys=mode == "accumulate", carried=carried)
        for batch in batches:
            keys, raws = batch.column("key").to_pylist(), batch.column(ITEM).to_pylist()
            ordinals, extracted = column(batch, ORDINAL, 0), column(batch, VALUES, ())
            for row, (key, raw, ordinal, raw_values) in enumerate(zip(keys, raws, ordinals, extracted)):
                group = key if keyed else _GLOBAL
                if mode == "combine":
                    partial = pickle.loads(raw)
                    if group in table:
                        accs = table[group]
                        table[group] = calls.of_group("combine", about_group(group),
                                                      lambda: [op.combine(a, b) for op, a, b in zip(ops, accs, partial)])
                    else:
                        table[group] = partial
                    continue
                item = pickle.loads(raw)
                if group not in table:  # a group has a result also where every one of its records failed
                    table[group] = create(repr(item))
                accs = table[group]
                ok, accs[ordinal] = calls.accumulated(ops[ordinal], accs[ordinal], item, raw_values, out, group, row)
                if ok and mode == "rolling":
                    out.add(results(group, accs, final=False), None, group, row)
            yield out.batch(batch)
        if mode == "rolling":
            return table
        if mode == "accumulate":
            for group, accs in table.items():
                out.add(pickle.dumps(accs, protocol=PICKLE_PROTOCOL), None, group)
            yield out.batch()
            return table
        if not keyed and not table:  # a global aggregation has a result also over no items
            table[_GLOBAL] = create(about_group(_GLOBAL))
        for group, accs in table.items():
            out.add(results(group, accs, final=True))
        yield out.batch()
        return table

    return run
