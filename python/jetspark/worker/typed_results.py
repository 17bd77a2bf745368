"""How the results of an aggregation that Catalyst ran become the values the API promises.

An aggregation over the rows of a DataFrame source may run in Catalyst (``TypedPlan`` in the JVM); its
output is typed (columns ``key`` and ``result``). Where a Python step, a list sink or any other vertex
that needs Python items reads it, one Arrow UDF turns each row into the pickle of ``(key, result)``
(keyed) or ``result`` (global), shaped as the core's operation gives it: a sum of integers as an
``int``, a sum of nothing as ``0``, an ``all_of`` as a tuple, a ``min_by`` item as the ``Row`` it is.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from jetspark._items import PICKLE_PROTOCOL
from jetspark.worker.steps import ITEM

__all__ = ["python_value", "results_to_items_function"]


def python_value(value: Any, shape: dict[str, Any]) -> Any:
    """One result as the core's operation gives it: ``plain`` as Spark gives it, ``sum`` an exact
    ``int`` (Spark's ``decimal(38,0)``) and ``0`` for a sum of nothing, ``item`` the row, ``tuple``
    the parts of an ``all_of``.

    Examples
    --------
    >>> python_value(None, {"kind": "sum"}), python_value(Decimal(2**70), {"kind": "sum"}) == 2**70
    (0, True)
    >>> python_value((3, None), {"kind": "tuple", "parts": [{"kind": "plain"}, {"kind": "sum"}]})
    (3, 0)
    """
    kind = shape["kind"]
    if kind == "sum":
        if value is None:
            return 0
        return int(value) if isinstance(value, Decimal) else value
    if kind == "tuple":
        return tuple(python_value(v, part) for v, part in zip(value, shape["parts"]))
    return value


def results_to_items_function(schema_json: str, shape: dict[str, Any]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function that turns result rows into pickled items: rows are read by Spark's own
    Arrow-to-Row conversion (as ``df.collect()`` reads them), then shaped by :func:`python_value`."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import json

        import pyarrow as pa
        from pyspark.sql.conversion import ArrowTableToRowsConversion
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(schema_json))
        keyed, result = shape["keyed"], shape["result"]
        for batch in batches:
            rows = ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), schema)
            items = [(row[0], python_value(row[1], result)) if keyed else python_value(row[0], result) for row in rows]
            yield pa.RecordBatch.from_arrays(
                [pa.array([pickle.dumps(x, protocol=PICKLE_PROTOCOL) for x in items], pa.binary())], names=[ITEM])

    return run
