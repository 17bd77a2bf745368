"""Python steps on items that carry a sequence id (``preserve_order`` across a keyed shuffle or a diamond).

Where the plan needs order restored by sequence ids (DESIGN.md, Planner "Order"), the JVM gives each
item its id where its ordered stream starts and carries it beside the item: ``seq_substream`` (the
source partition, or the processor of an order-producing stage), ``seq_offset`` (the item's position
in it), ``seq_fan_out``, the path that tells apart the items one source item became, and ``seq_ties``,
which the JVM's ordered merges fill in (Python passes them on). A fused Python
chain keeps the id of the record it ran on and extends the path by ``j`` for the j-th output of each
flat_map step (:func:`jetspark._python_steps.run_steps_numbered`): the outputs of one record stay
together and in their order, and a record that a flat_map did not touch sorts before what another
branch's flat_map made of it, as in the brute-force reference. Ids are compared by substream, offset,
then path element by element (a prefix first), then ties; the JVM's restore points and ordered merges
do that.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

from jetspark._python_steps import (CHAIN_SCHEMA, FAILURE, ITEM, PICKLE_PROTOCOL, Step, _arrow_udf,
                                    bound_extraction_function, extraction_schema, passing_on, run_steps_numbered,
                                    stateful_function)

SEQUENCE_COLUMNS = ["seq_substream", "seq_offset", "seq_fan_out", "seq_ties"]
SEQUENCE_SCHEMA = "seq_substream int, seq_offset bigint, seq_fan_out array<int>, seq_ties array<int>"


def sequenced_chain_function(steps: list[Step]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that runs ``steps`` over rows (item, substream, offset, path, ties): each
    result keeps the record's substream, offset and ties, its path extended as the module docstring
    says; a dead letter keeps the record's id (dead letters are not ordered)."""
    steps = list(steps)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            out: list[bytes] = []
            failures: list[str | None] = []
            substreams: list[int] = []
            offsets: list[int] = []
            paths: list[list[int]] = []
            ties_out: list[list[int]] = []
            columns = [batch.column(i).to_pylist() for i in range(5)]
            for raw, substream, offset, path, ties in zip(*columns):
                results, letters = run_steps_numbered(steps, pickle.loads(raw))
                for below, result in results:
                    out.append(pickle.dumps(result, protocol=PICKLE_PROTOCOL))
                    failures.append(None)
                    paths.append(path + list(below))
                for letter in letters:
                    out.append(pickle.dumps(letter, protocol=PICKLE_PROTOCOL))
                    failures.append(letter.stage)
                    paths.append(path)
                given = len(results) + len(letters)
                substreams.extend([substream] * given)
                offsets.extend([offset] * given)
                ties_out.extend([ties] * given)
            yield pa.RecordBatch.from_arrays(
                [pa.array(out, pa.binary()), pa.array(failures, pa.string()), pa.array(substreams, pa.int32()),
                 pa.array(offsets, pa.int64()), pa.array(paths, pa.list_(pa.int32())),
                 pa.array(ties_out, pa.list_(pa.int32()))],
                names=[ITEM, FAILURE, *SEQUENCE_COLUMNS])

    return run


def sequenced_chain_udf_column(steps: list[Step]) -> Any:
    """The Spark Column of a fused chain whose items carry sequence ids."""
    return _arrow_udf(sequenced_chain_function(steps), f"{CHAIN_SCHEMA}, {SEQUENCE_SCHEMA}", [ITEM, *SEQUENCE_COLUMNS])


def sequenced_extraction_udf_column(key: dict[str, Any] | None, values: list[dict[str, Any]], stage: str,
                                    objects: list[Any], timestamp: dict[str, Any] | None = None,
                                    dead_letter: bool = False) -> Any:
    """:func:`jetspark._python_steps.extraction_udf_column` for items that carry sequence ids, which the
    extracted rows keep (after the ``ts`` of items stamped here with ``timestamp``); a dead letter keeps
    the record's id (dead letters are not ordered)."""
    extract = bound_extraction_function(key, values, stage, objects, timestamp, dead_letter=dead_letter)
    extracted = extraction_schema(timestamp is not None, dead_letter)
    return _arrow_udf(passing_on(extract), f"{extracted}, {SEQUENCE_SCHEMA}", [ITEM, *SEQUENCE_COLUMNS])


def sequenced_stateful_udf_column(create: Callable[[], Any], fn: Callable[..., tuple[Any, Any]], keyed: bool, stage: str,
                                  dead_letter: bool) -> Any:
    """The Spark Column of a ``map_stateful`` vertex whose items carry sequence ids: each output keeps the
    id of the item it was emitted for (one output at most per item)."""
    return _arrow_udf(stateful_function(create, fn, keyed, stage, dead_letter, passed_on=len(SEQUENCE_COLUMNS)),
                      f"{CHAIN_SCHEMA}, {SEQUENCE_SCHEMA}", ["key", "values", ITEM, *SEQUENCE_COLUMNS])
