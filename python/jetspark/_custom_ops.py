"""User-defined aggregate operations (:meth:`AggregateOperation.of`) on the Spark batch engine: their
functions are Python's, so every vertex of such an aggregation is one Arrow UDF over the rows the JVM
gives it (``CustomAggregations`` in the JVM says which vertex runs which ``mode``):

- ``accumulate``: stage 1 of 2, per partition: items (with their extracted key) into one accumulator per
  key; at the end of the partition, one row per key with the pickled accumulator;
- ``combine``: stage 2 of 2, after the shuffle by key: partial accumulators combined per key, then
  ``finish`` (default ``export``, default the accumulator itself);
- ``single``: one stage, after the shuffle by key (or to one partition): accumulate, then finish;
- ``rolling``: ``rolling_aggregate``: accumulate, and emit ``export`` of the accumulator after each item.

A global aggregation is one group (the key column is then ignored: a ``rebalance(key)`` in front of it
only spreads the items), and it has a result also for no items: ``finish(create())``.

Failures follow the engine's rules: a record whose ``accumulate`` raises goes to the stage's dead-letter
sink when it has one, and leaves the accumulator as it was (``accumulate`` then works on a copy, since it
may update the accumulator in place); otherwise it fails the job naming the stage and the record. A
failing ``create``, ``combine``, ``export`` or ``finish`` is about a group, not a record, and fails the
job naming the stage, the group and the function.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jetspark._items import loads_key
from jetspark._python_steps import CHAIN_SCHEMA, FAILURE, ITEM, OPAQUE_SCHEMA, PICKLE_PROTOCOL, StepFailedError, _arrow_udf
from jetspark.errors import DeadLetter

#: What each mode gives: accumulate adds the group's key (the shuffle to the combining stage reads it).
_SCHEMAS = {"accumulate": f"{CHAIN_SCHEMA}, key binary", "combine": OPAQUE_SCHEMA, "single": CHAIN_SCHEMA,
            "rolling": CHAIN_SCHEMA}
_GLOBAL = b""


def custom_aggregation_function(functions: Mapping[str, Callable[..., Any] | None], mode: str, keyed: bool, stage: str,
                                dead_letter: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function of one vertex of a user-defined aggregation, over the columns ``key``
    (canonical key bytes) and ``item`` (a pickled item; in ``combine`` mode a pickled partial
    accumulator), found by name among the columns of the rows it is given. See the module docstring for
    the modes and the failure rules."""
    if mode not in _SCHEMAS:
        raise ValueError(f"unknown custom aggregation mode {mode!r}")
    create, accumulate, combine = functions["create"], functions["accumulate"], functions["combine"]
    export = functions["export"] or _unchanged
    finish = functions["finish"] or export

    def about_group(group: bytes) -> str:
        return f"<group of key {loads_key(group)!r}>" if keyed else "<the whole input>"

    def group_call(name: str, record: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - any user error is reported with its stage
            raise StepFailedError(f"stage '{stage}' failed on record {record} in {name}: {type(e).__name__}: {e}") from e

    def result(group: bytes, value: Any) -> bytes:
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

        accs: dict[bytes, Any] = {}  # per group, in first-seen order
        for batch in batches:
            out: list[bytes] = []
            failures: list[str | None] = []
            groups: list[bytes] = []
            for key, raw in zip(batch.column("key").to_pylist(), batch.column(ITEM).to_pylist()):
                group = key if keyed else _GLOBAL
                if mode == "combine":
                    partial = pickle.loads(raw)
                    accs[group] = (group_call("combine", about_group(group), combine, accs[group], partial)
                                   if group in accs else partial)
                    continue
                item = pickle.loads(raw)
                acc = accs[group] if group in accs else group_call("create", repr(item), create)
                try:
                    acc = accumulate(copy.deepcopy(acc) if dead_letter else acc, item)
                except Exception as e:  # noqa: BLE001 - any user error is the record's failure
                    if not dead_letter:
                        raise StepFailedError(f"stage '{stage}' failed on record {item!r}: {type(e).__name__}: {e}") from e
                    accs.setdefault(group, acc)
                    out.append(pickle.dumps(DeadLetter(item, stage, f"{type(e).__name__}: {e}"), protocol=PICKLE_PROTOCOL))
                    failures.append(stage)
                    groups.append(group)
                    continue
                accs[group] = acc
                if mode == "rolling":
                    out.append(result(group, group_call("export", about_group(group), export, acc)))
                    failures.append(None)
                    groups.append(group)
            yield batch_of(out, failures, groups)
        if mode == "rolling":
            return
        if mode == "accumulate":
            partials = [pickle.dumps(acc, protocol=PICKLE_PROTOCOL) for acc in accs.values()]
            yield batch_of(partials, [None] * len(partials), list(accs))
            return
        if not keyed and not accs:  # a global aggregation has a result also over no items
            accs[_GLOBAL] = group_call("create", about_group(_GLOBAL), create)
        yield batch_of([result(group, group_call("finish", about_group(group), finish, acc)) for group, acc in accs.items()],
                       [None] * len(accs), [])

    return run


def custom_aggregation_udf_column(functions: Mapping[str, Callable[..., Any] | None], mode: str, keyed: bool, stage: str,
                                  dead_letter: bool) -> Any:
    """The Spark Column of one vertex of a user-defined aggregation (``custom:<vertex>``)."""
    return _arrow_udf(custom_aggregation_function(functions, mode, keyed, stage, dead_letter), _SCHEMAS[mode],
                      ["key", ITEM])


def _unchanged(acc: Any) -> Any:
    """``export`` by default: the accumulator itself (it is pickled at once, so later items do not change
    a result already given)."""
    return acc
