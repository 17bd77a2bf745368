"""Files and foreach-batch sinks on the Spark batch engine: items as rows of a schema.

The JVM (``RowSinks.scala``) calls :class:`RowSinksRuntime` back through py4j on the driver when such a
sink runs. Items that are rows already (typed items) never come here; opaque items (pickles) become
rows of the sink's ``schema=``, or, without one, of the schema Spark's ``createDataFrame`` would infer:

- a ``Row``, a namedtuple, a dict, a dataclass or another object with attributes is one row, its fields
  matched by name (``Row``s and namedtuples keep their field order; dicts and objects are sorted by name,
  as ``createDataFrame`` sorts them);
- a plain tuple or list is one row by position (columns ``_1``, ``_2``, ... when inferred);
- anything else (a number, a string, a date, ...) is a row of one column, ``value``.

The schema is inferred from the first 100 items, merged as ``createDataFrame`` merges the schemas of a
list; items that cannot be merged are left out of the inference (they will not fit). An item fits the
schema when its fields are all in it and their values are of its types (``createDataFrame``'s
``verifySchema`` check); a field the schema lacks is not dropped silently: the item does not fit. An
item that does not fit fails the job naming the sink stage and the record, or, when the sink stage has
``on_error(Sinks.dead_letter(name))``, goes there as a :class:`~jetspark.errors.DeadLetter`.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jetspark._python_steps import FAILURE, ITEM, PICKLE_PROTOCOL, StepFailedError
from jetspark.errors import DeadLetter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructType

#: The column of a converted item's row (``RowSinks.RowColumn`` in the JVM).
ROW = "row"
#: How many of the first items the schema is inferred from (``createDataFrame`` on an RDD looks at 100).
INFER_FROM = 100
#: The column of a primitive item.
VALUE = "value"


class RowSinksRuntime:
    """The Python side of a job's rows sinks (the JVM interface ``PythonRowSinks``); ``objects`` are the
    values the pipeline's spec numbers (a foreach-batch function among them)."""

    def __init__(self, spark: SparkSession, objects: list[Any]) -> None:
        self._spark = spark
        self._objects = objects

    def rows(self, stage: str, schema: str | None, dead_letter: bool, items: Any) -> Any:
        """The JVM DataFrame of ``item``, ``failure`` and ``row`` columns for the items (see the module)."""
        from pyspark.sql.dataframe import DataFrame

        df = DataFrame(items, self._spark)
        if schema is not None:
            target = parse_schema(schema)
        else:
            first = [pickle.loads(row[0]) for row in df.take(INFER_FROM)]
            target = infer_schema(first, **self._inference_options())
        large = self._spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
        return df.mapInArrow(rows_function(target, stage, dead_letter, large), output_schema(target))._jdf

    def foreachBatch(self, stage: str, fn_ref: int, rows: Any, batch_id: int) -> None:  # noqa: N802 - a JVM name
        """Calls the sink's function with the rows DataFrame and the batch id."""
        from pyspark.sql.dataframe import DataFrame

        self._objects[fn_ref](DataFrame(rows, self._spark), batch_id)

    def _inference_options(self) -> dict[str, bool]:
        conf = self._spark.conf
        return {
            "infer_dict_as_struct": conf.get("spark.sql.pyspark.inferNestedDictAsStruct.enabled", "false") == "true",
            "prefer_timestamp_ntz": conf.get("spark.sql.timestampType", "TIMESTAMP_LTZ") == "TIMESTAMP_NTZ",
        }

    class Java:
        implements = ["io.jetspark.engine.spark.PythonRowSinks"]


def attach(jet: Any, spec: dict[str, Any], objects: list[Any], job_id: str) -> Callable[[], None]:
    """Registers the runtime for job ``job_id`` when the pipeline ``spec`` has rows sinks; returns how to
    unregister it."""
    kinds = {n["args"]["sink"]["kind"] for n in spec["nodes"] if n["op"] == "sink"}
    if not kinds & {"files", "foreach_batch"}:
        return lambda: None
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(jet.spark.sparkContext._gateway)
    jet._bridge.registerRowSinks(job_id, RowSinksRuntime(jet.spark, objects))
    return lambda: jet._bridge.unregisterRowSinks(job_id)


def parse_schema(text: str) -> StructType:
    """A sink's ``schema=`` as a struct: Spark's JSON of a type or a DDL string; a type that is not a
    struct is the type of one column, ``value`` (as in ``createDataFrame``)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_json_string, _parse_datatype_string

    data_type = _parse_datatype_json_string(text) if text.lstrip()[:1] in ('{', '"') else _parse_datatype_string(text)
    return data_type if isinstance(data_type, StructType) else StructType([StructField(VALUE, data_type, True)])


def is_record(item: Any) -> bool:
    """Whether an item is a row of fields (else it is one ``value``)."""
    return isinstance(item, (Mapping, tuple, list)) or dataclasses.is_dataclass(item) or hasattr(item, "__dict__")


def infer_schema(items: list[Any], *, infer_dict_as_struct: bool = False,
                 prefer_timestamp_ntz: bool = False) -> StructType:
    """The schema ``createDataFrame`` infers from ``items`` (see the module); no items: no columns.

    >>> infer_schema([{"b": 1, "a": "x"}, {"a": None, "b": 2, "c": 1.5}]).simpleString()
    'struct<a:string,b:bigint,c:double>'
    >>> infer_schema([1, 2]).simpleString()
    'struct<value:bigint>'
    """
    from pyspark.sql.types import StructField, StructType, _has_nulltype, _infer_schema, _infer_type, _merge_type

    def of(item: Any) -> StructType:
        if is_record(item):
            record = _fields_of(item) if _is_slotted_dataclass(item) else item
            return _infer_schema(record, infer_dict_as_struct=infer_dict_as_struct,
                                 prefer_timestamp_ntz=prefer_timestamp_ntz)
        value_type = _infer_type(item, infer_dict_as_struct, prefer_timestamp_ntz=prefer_timestamp_ntz)
        return StructType([StructField(VALUE, value_type, True)])

    schema: StructType | None = None
    first_error: Exception | None = None
    for item in items:
        try:
            schema = of(item) if schema is None else _merge_type(schema, of(item))
        except (TypeError, ValueError) as e:  # PySpark's type errors are both: the item will not fit
            first_error = first_error or e
    if schema is None:
        if first_error is None:
            return StructType([])
        raise ValueError(f"cannot infer a schema from the items ({first_error}); give the sink a schema=")
    if _has_nulltype(schema):
        raise ValueError(f"cannot infer a schema from the first {len(items)} items: a field is None in all of them "
                         f"({schema.simpleString()}); give the sink a schema=")
    return schema


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
            yield pa.RecordBatch.from_arrays(
                [pa.array([None] * len(fitting) + letters, pa.binary()),
                 pa.array([None] * len(fitting) + [stage] * len(letters), pa.string()),
                 pa.concat_arrays([rows, pa.nulls(len(letters), row_type)])],
                names=[ITEM, FAILURE, ROW])

    return run


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
        return _fields_of(value)
    if hasattr(value, "__dict__"):
        return vars(value)
    return None


def _is_slotted_dataclass(item: Any) -> bool:
    return dataclasses.is_dataclass(item) and not hasattr(item, "__dict__")


def _fields_of(item: Any) -> dict[str, Any]:
    return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
