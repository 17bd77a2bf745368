"""Items as rows of a schema, for the files and foreach-batch sinks of the Spark batch engine: the Arrow
map function that converts a sink's pickled items on the workers (:func:`rows_function`), and what it
and the driver's schema inference (:mod:`jetspark._row_sinks`) agree on about the shape of an item:

- a ``Row``, a namedtuple, a dict, a dataclass or another object with attributes is one row, its fields
  matched by name (``Row``s and namedtuples keep their field order; dicts and objects are sorted by name,
  as ``createDataFrame`` sorts them);
- a plain tuple or list is one row by position (columns ``_1``, ``_2``, ... when inferred);
- anything else (a number, a string, a date, ...) is a row of one column, ``value``.

An item fits the schema when its fields are all in it and their values are of its types
(``createDataFrame``'s ``verifySchema`` check); a field the schema lacks is not dropped silently: the item
does not fit. An item that does not fit fails the job naming the sink stage and the record, or, when the
sink stage has ``on_error(Sinks.dead_letter(name))``, goes there as a :class:`~jetspark.errors.DeadLetter`.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jetspark.errors import DeadLetter
from jetspark.worker.steps import FAILURE, ITEM, PICKLE_PROTOCOL, StepFailedError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

#: The column of a converted item's row (``RowSinks.RowColumn`` in the JVM).
ROW = "row"


def is_record(item: Any) -> bool:
    """Whether an item is a row of fields (else it is one ``value``)."""
    return isinstance(item, (Mapping, tuple, list)) or dataclasses.is_dataclass(item) or hasattr(item, "__dict__")


def output_schema(row: StructType) -> StructType:
    """What the conversion gives: ``item`` (a dead letter's pickle), ``failure`` (its stage), ``row``."""
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    return StructType([StructField(ITEM, BinaryType()), StructField(FAILURE, StringType()), StructField(ROW, row)])


def record_of(item: Any, schema: StructType) -> Any:
    """``item`` as ``schema``'s row: named records (at every level) as dicts, so that fields match by
    name; raises ValueError naming a field the schema lacks."""
    return _conform(item if is_record(item) else (item,), schema, "")


def rows_function(schema: StructType, stage: str, dead_letter: bool,
                  large_types: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function from pickled items to :func:`output_schema` rows: the items that fit, in
    their order, then the dead letters of those that do not (they go to another sink)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark.sql.conversion import LocalDataToArrowConversion
        from pyspark.sql.pandas.types import to_arrow_type
        from pyspark.sql.types import _make_type_verifier

        verify = _make_type_verifier(schema)
        row_type = to_arrow_type(schema, timezone="UTC", prefers_large_types=large_types)

        def arrow_rows(records: list[Any]) -> Any:
            if not records:
                return pa.array([], row_type)
            if not schema.fields:
                return pa.array([{}] * len(records), row_type)
            table = LocalDataToArrowConversion.convert(records, schema, large_types).combine_chunks()
            return pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(row_type))

        for batch in batches:
            fitting: list[Any] = []  # (item, record) of the items that pass the checks
            letters: list[bytes] = []

            def unfit(item: Any, e: Exception) -> None:
                error = f"{type(e).__name__}: {e}"
                if not dead_letter:
                    raise StepFailedError(f"stage '{stage}' failed on record {item!r}: {error}") from e
                letters.append(pickle.dumps(DeadLetter(item, stage, error), protocol=PICKLE_PROTOCOL))

            for raw in batch.column(0).to_pylist():
                item = pickle.loads(raw)
                try:
                    record = record_of(item, schema)
                    verify(record)
                    fitting.append((item, record))
                except Exception as e:  # noqa: BLE001 - any mismatch is the record's
                    unfit(item, e)
            try:
                rows = arrow_rows([record for _, record in fitting])
            except Exception:  # noqa: BLE001 - what the verifier let through still did not convert: find it
                kept = []
                for item, record in fitting:
                    try:
                        arrow_rows([record])
                        kept.append((item, record))
                    except Exception as e:  # noqa: BLE001
                        unfit(item, e)
                fitting = kept
                rows = arrow_rows([record for _, record in fitting])
            yield sink_rows(rows, letters, stage)

    return run


def sink_rows(rows: Any, letters: list[bytes], stage: str) -> Any:
    """A batch of :func:`output_schema` rows: ``rows`` (an Arrow struct array, the items that fit), then
    ``letters``, the pickled dead letters of ``stage``."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([None] * len(rows) + letters, pa.binary()),
         pa.array([None] * len(rows) + [stage] * len(letters), pa.string()),
         pa.concat_arrays([rows, pa.nulls(len(letters), rows.type)])],
        names=[ITEM, FAILURE, ROW])


def _conform(value: Any, data_type: DataType, path: str) -> Any:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if value is None:
        return None
    if isinstance(data_type, StructType):
        fields = _named_fields(value)
        if fields is None:
            if isinstance(value, (tuple, list)) and len(value) == len(data_type.fields):
                return tuple(_conform(v, f.dataType, f"{path}{f.name}.") for v, f in zip(value, data_type.fields))
            return value  # the verifier says what is wrong with it
        extra = [name for name in fields if name not in data_type.names]
        if extra:
            raise ValueError(f"field{'s' if len(extra) > 1 else ''} {', '.join(repr(path + n) for n in extra)} "
                             f"not in the sink's schema {data_type.simpleString()}")
        return {f.name: _conform(fields.get(f.name), f.dataType, f"{path}{f.name}.") for f in data_type.fields}
    if isinstance(data_type, ArrayType) and isinstance(value, (list, tuple)):
        return [_conform(v, data_type.elementType, path) for v in value]
    if isinstance(data_type, MapType) and isinstance(value, Mapping):
        return {k: _conform(v, data_type.valueType, path) for k, v in value.items()}
    return value


def _named_fields(value: Any) -> Mapping[str, Any] | None:
    """A record's fields by name, or None for a positional tuple or list (or a value that is no record)."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, tuple) and hasattr(value, "__fields__"):  # Row
        return dict(zip(value.__fields__, value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        return value._asdict()
    if isinstance(value, (tuple, list)):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return fields_of(value)
    if hasattr(value, "__dict__"):
        return vars(value)
    return None


def is_slotted_dataclass(item: Any) -> bool:
    return dataclasses.is_dataclass(item) and not hasattr(item, "__dict__")


def fields_of(item: Any) -> dict[str, Any]:
    return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
