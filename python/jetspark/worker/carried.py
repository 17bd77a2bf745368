"""What items carry beside them through the Spark batch engine's Python steps: their time and their
sequence id, each in columns after the item, time first (the JVM's ``RowSchemas.carriedColumns``).

Time. Between ``add_timestamps`` and a window, an item's timestamp (ms) rides in a column ``ts`` (Jet's
``JetEvent``, see ``CarriedTimestamps``): every output of a step keeps the time of the record it came
from, whatever the step made of the item.

Sequence ids. Where the plan needs order restored by sequence ids (``preserve_order`` across a keyed
shuffle or a diamond: DESIGN.md, Planner "Order"), the JVM gives each item its id where its ordered
stream starts and carries it beside the item: ``seq_substream`` (the source partition, or the processor
of an order-producing stage), ``seq_offset`` (the item's position in it), ``seq_fan_out``, the path that
tells apart the items one source item became, and ``seq_ties``, which the JVM's ordered merges fill in
with where they put the item (Python passes them on). A fused Python chain keeps the id of the record it ran on and extends the path
by ``j`` for the j-th output of each flat_map step (:func:`jetspark.worker.steps.run_steps_numbered`):
the outputs of one record stay together and in their order, and a record that a flat_map did not touch
sorts before what another branch's flat_map made of it, as in the brute-force reference. Ids are
compared by substream, offset, then ties and path as one sequence element by element (a prefix first):
the JVM's restore points and ordered merges do that (``SequenceId`` in the core). A dead letter keeps its record's id (dead letters are not
ordered) and time.

Control rows. In a stream's epoch (the Spark epoch engine), each task ends its output with a control
row (the epoch's barrier and its watermark): its item is null and its bytes ride in a column ``ctl``
(last), which every step passes on untouched; data rows have a null ``ctl``.

Both ride together where a chain between ``add_timestamps`` and a window also leads to a restore point:
an output keeps its record's time and id alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

TS = "ts"
FAN_OUT = "seq_fan_out"
CTL = "ctl"
SEQUENCE_COLUMNS = ["seq_substream", "seq_offset", FAN_OUT, "seq_ties"]
_TYPES = {TS: "bigint", "seq_substream": "int", "seq_offset": "bigint", FAN_OUT: "array<int>", "seq_ties": "array<int>", CTL: "binary"}


def carried_columns(timed: bool, sequenced: bool, controlled: bool = False) -> list[str]:
    """The columns items carry: ``ts`` where they are ``timed``, then the sequence id where ``sequenced``,
    then ``ctl`` where control rows travel among them (``controlled``)."""
    return ([TS] if timed else []) + (SEQUENCE_COLUMNS if sequenced else []) + ([CTL] if controlled else [])


def carried_schema(columns: Sequence[str]) -> str:
    """The DDL of ``columns`` to append to a UDF's schema (each with a leading comma; empty for none)."""
    return "".join(f", {c} {_TYPES[c]}" for c in columns)


def carried_for(batch: Any, rows: Sequence[int], start: int = 1,
                below: Sequence[tuple[int, ...]] | None = None) -> list[Any]:
    """The Arrow columns of ``batch`` from ``start`` on (what its rows carry) for outputs that each came
    from input row ``rows[i]``: copied from that row, except that, with ``below``, the fan-out path of
    the i-th output is extended by ``below[i]``."""
    import pyarrow as pa

    taken = pa.array(rows, pa.int64())
    columns = [batch.column(i).take(taken) for i in range(start, batch.num_columns)]
    names = batch.schema.names[start:]
    if below is not None and FAN_OUT in names:
        at = names.index(FAN_OUT)
        # A control row has no id: its path stays null.
        paths = [None if path is None else path + list(extra) for path, extra in zip(columns[at].to_pylist(), below)]
        columns[at] = pa.array(paths, pa.list_(pa.int32()))
    return columns
