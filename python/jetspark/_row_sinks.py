"""Files and foreach-batch sinks on the Spark engines (batch, and each epoch of a stream): the driver's side.

The JVM (``RowSinks.scala``) calls :class:`RowSinksRuntime` back through py4j on the driver when such a
sink runs. Items that are rows already (typed items) never come here; opaque items (pickles) become
rows of the sink's ``schema=``, or, without one, of the schema Spark's ``createDataFrame`` would infer
(:mod:`jetspark.worker.rows` says which items make which rows, and converts them on the workers).

The schema is inferred from the first 100 items, merged as ``createDataFrame`` merges the schemas of a
list; items that cannot be merged are left out of the inference (they will not fit).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetspark._protocol import ensure_callback_server
from jetspark.worker.kafka import RECORD_SCHEMA, records_function
from jetspark.worker.rows import fields_of, is_record, is_slotted_dataclass, output_schema, rows_function

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

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

    def kafkaRecords(self, stage: str, key_ref: int, value_ref: int, dead_letter: bool, items: Any) -> Any:  # noqa: N802
        """The JVM DataFrame of ``item``, ``failure`` and ``row`` (``key``, ``value``) for a Kafka sink's
        items, made by its functions numbered ``key_ref`` and ``value_ref`` (-1: none)."""
        from pyspark.sql.dataframe import DataFrame

        def function(ref: int) -> Any:
            return None if ref < 0 else self._objects[ref]

        return DataFrame(items, self._spark).mapInArrow(
            records_function(function(key_ref), function(value_ref), stage, dead_letter),
            output_schema(parse_schema(RECORD_SCHEMA)))._jdf

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
        implements = ["io.jetspark.engine.spark.runner.PythonRowSinks"]


def attach(spark: SparkSession, bridge: Any, spec: dict[str, Any], objects: list[Any],
           job_id: str) -> Callable[[], None]:
    """Registers the runtime for job ``job_id`` with the JVM ``bridge`` when the pipeline ``spec`` has rows
    sinks; returns how to unregister it."""
    kinds = {n["args"]["sink"]["kind"] for n in spec["nodes"] if n["op"] == "sink"}
    if not kinds & {"files", "foreach_batch", "kafka"}:
        return lambda: None
    ensure_callback_server(spark)
    bridge.registerRowSinks(job_id, RowSinksRuntime(spark, objects))
    return lambda: bridge.unregisterRowSinks(job_id)


def parse_schema(text: str) -> StructType:
    """A sink's ``schema=`` as a struct: Spark's JSON of a type or a DDL string; a type that is not a
    struct is the type of one column, ``value`` (as in ``createDataFrame``)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_json_string, _parse_datatype_string

    data_type = _parse_datatype_json_string(text) if text.lstrip()[:1] in ('{', '"') else _parse_datatype_string(text)
    return data_type if isinstance(data_type, StructType) else StructType([StructField(VALUE, data_type, True)])


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
            record = fields_of(item) if is_slotted_dataclass(item) else item
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
