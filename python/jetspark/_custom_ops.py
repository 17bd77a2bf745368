"""Aggregations with a user-defined aggregate operation (:meth:`AggregateOperation.of`) on the Spark batch
engine: its functions are Python's, so every vertex of such an aggregation is one Arrow UDF over the rows
the JVM gives it (``CustomAggregations`` in the JVM says which vertex runs which ``mode``). Where the
user-defined operation is a part (of ``all_of``, or one side of ``aggregate2``), the whole operation runs
here, its built-in parts as ``_operations.py`` implements them, over the values the engine extracted
for them (the ``values`` column):

- ``accumulate``: stage 1 of 2, per partition: items (with their extracted key) into one accumulator per
  key; at the end of the partition, one row per key with the pickled accumulator;
- ``combine``: stage 2 of 2, after the shuffle by key: partial accumulators combined per key, then
  ``finish`` (default ``export``, default the accumulator itself);
- ``single``: one stage, after the shuffle by key (or to one partition): accumulate, then finish;
- ``rolling``: ``rolling_aggregate``: accumulate, and emit ``export`` of the accumulator after each item.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from jetspark._items import loads_key
from jetspark._operations import operation_of
from jetspark._python_steps import CHAIN_SCHEMA, FAILURE, ITEM, OPAQUE_SCHEMA, PICKLE_PROTOCOL, StepFailedError, _arrow_udf
from jetspark.errors import DeadLetter

#: What each mode gives: accumulate adds the group's key (the shuffle to the combining stage reads it).
_SCHEMAS = {"accumulate": f"{CHAIN_SCHEMA}, key binary", "combine": OPAQUE_SCHEMA, "single": CHAIN_SCHEMA,
            "rolling": CHAIN_SCHEMA}
_GLOBAL = b""
#: The column that tells a row's input in an aggregation of two inputs (``CustomAggregations.Ordinal``).
ORDINAL = "ordinal"
#: The column of the values extracted for an operation's built-in parts (pickles, in slot order).
VALUES = "values"


def custom_aggregation_function(operations: Sequence[Any], mode: str, keyed: bool, stage: str,
                                dead_letter: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function of one vertex of an aggregation with one operation per input
    (``operations``: as :func:`~jetspark._operations.operation_of` gives them), over the columns ``key``
    (canonical key bytes), ``item`` (a pickled item; in ``combine`` mode a pickled partial accumulator),
    ``values`` (the pickled values extracted for the built-in parts; not in ``combine`` mode) and, for
    several inputs, ``ordinal`` (the row's input), found by name among the columns of the rows it is
    given. A group keeps one accumulator per input; its result is that of the one operation, or the tuple
    of the results (``aggregate2``). See the module docstring for the modes and the failure rules
    (``dead_letter``: the stage has a dead-letter sink, and ``operations`` leave an accumulator as it
    was where a record fails)."""
    if mode not in _SCHEMAS:
        raise ValueError(f"unknown custom aggregation mode {mode!r}")
    ops = list(operations)

    def about_group(group: bytes) -> str:
        return f"<group of key {loads_key(group)!r}>" if keyed else "<the whole input>"

    def group_call(name: str, record: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
            raise StepFailedError(f"stage '{stage}' failed on record {record} in {name}: {type(e).__name__}: {e}") from e

    def create(record: str) -> list[Any]:
        return group_call("create", record, lambda: [op.create() for op in ops])

    def results(group: bytes, accs: list[Any], final: bool) -> bytes:
        name = "finish" if final else "export"
        values = group_call(name, about_group(group),
                            lambda: [(op.finish if final else op.export)(acc) for op, acc in zip(ops, accs)])
        value = values[0] if len(ops) == 1 else tuple(values)
        return pickle.dumps((loads_key(group), value) if keyed else value, protocol=PICKLE_PROTOCOL)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        def batch_of(out: list[bytes], failures: list[str | None], groups: list[bytes]) -> Any:
            columns, names = [pa.array(out, pa.binary())], [ITEM]
            if mode != "combine":
                columns.append(pa.array(failures, pa.string()))
                names.append(FAILURE)
            if mode == "accumulate":
                columns.append(pa.array(groups, pa.binary()))
                names.append("key")
            return pa.RecordBatch.from_arrays(columns, names=names)

        table: dict[bytes, list[Any]] = {}  # per group, in first-seen order: one accumulator per input
        for batch in batches:
            out: list[bytes] = []
            failures: list[str | None] = []
            groups: list[bytes] = []
            keys, raws = batch.column("key").to_pylist(), batch.column(ITEM).to_pylist()
            ordinals = batch.column(ORDINAL).to_pylist() if ORDINAL in batch.schema.names else [0] * len(raws)
            extracted = batch.column(VALUES).to_pylist() if VALUES in batch.schema.names else [()] * len(raws)
            for key, raw, ordinal, raw_values in zip(keys, raws, ordinals, extracted):
                group = key if keyed else _GLOBAL
                if mode == "combine":
                    partial = pickle.loads(raw)
                    if group in table:
                        accs = table[group]
                        table[group] = group_call("combine", about_group(group),
                                                  lambda: [op.combine(a, b) for op, a, b in zip(ops, accs, partial)])
                    else:
                        table[group] = partial
                    continue
                item = pickle.loads(raw)
                if group not in table:  # a group has a result also where every one of its records failed
                    table[group] = create(repr(item))
                accs = table[group]
                try:
                    commit = ops[ordinal].prepare(accs[ordinal], item, [pickle.loads(v) for v in raw_values])
                except Exception as e:  # noqa: BLE001 - any user error is the record's failure
                    if not dead_letter:
                        raise StepFailedError(f"stage '{stage}' failed on record {item!r}: {type(e).__name__}: {e}") from e
                    out.append(pickle.dumps(DeadLetter(item, stage, f"{type(e).__name__}: {e}"), protocol=PICKLE_PROTOCOL))
                    failures.append(stage)
                    groups.append(group)
                    continue
                accs[ordinal] = commit()
                if mode == "rolling":
                    out.append(results(group, accs, final=False))
                    failures.append(None)
                    groups.append(group)
            yield batch_of(out, failures, groups)
        if mode == "rolling":
            return
        if mode == "accumulate":
            partials = [pickle.dumps(accs, protocol=PICKLE_PROTOCOL) for accs in table.values()]
            yield batch_of(partials, [None] * len(partials), list(table))
            return
        if not keyed and not table:  # a global aggregation has a result also over no items
            table[_GLOBAL] = create(about_group(_GLOBAL))
        yield batch_of([results(group, accs, final=True) for group, accs in table.items()], [None] * len(table), [])

    return run


def custom_aggregation_udf_column(specs: Sequence[Mapping[str, Any]], objects: Sequence[Any], mode: str, keyed: bool,
                                  stage: str, dead_letter: bool) -> Any:
    """The Spark Column of one vertex of an aggregation with a user-defined part (``custom:<vertex>``), one
    operation ``spec`` per input as the JVM sends it (``CustomAggregations.Work``), its functions among
    ``objects``; ``dead_letter``: the stage has a dead-letter sink."""
    operations = [operation_of(spec, objects, atomic=dead_letter) for spec in specs]
    return _arrow_udf(custom_aggregation_function(operations, mode, keyed, stage, dead_letter), _SCHEMAS[mode],
                      ["key", ITEM])
