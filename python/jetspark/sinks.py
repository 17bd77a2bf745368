"""Pipeline sinks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

from jetspark._definition import Definition

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

#: A sink's ``schema=``: a pyspark DataType or a DDL string.
DataTypeLike = Union["DataType", str]

__all__ = ["Sink", "Sinks"]


class Sink(Definition):
    """A sink definition."""


class Sinks:
    """Factories of sinks (Jet's ``Sinks``).

    Examples
    --------
    >>> Sinks.list("out").params
    {'name': 'out'}
    """

    @staticmethod
    def list(name: str) -> Sink:
        """A named list, read back with ``jet.get_list(name)`` (committed items, in arrival order)."""
        return Sink("list", {"name": _name(name, "Sinks.list(name)")})

    @staticmethod
    def console() -> Sink:
        """Prints each item on the driver's standard output."""
        return Sink("console")

    @staticmethod
    def noop() -> Sink:
        """Discards the items."""
        return Sink("noop")

    @staticmethod
    def files(path: str, format: str = "parquet", mode: str = "append", schema: DataTypeLike | None = None,
              **options: Any) -> Sink:
        """Writes the items with ``rows.write.format(format).mode(mode).options(**options).save(path)``.

        Items that are rows already (a DataFrame source's) are written as they are. Other items become rows
        of ``schema`` (a ``StructType``, another ``DataType`` for one column ``value``, or a DDL string such
        as ``"id INT, name STRING"``), or, without one, of the schema ``spark.createDataFrame`` would infer
        from the first 100 items: Rows, namedtuples, dicts, dataclasses and objects give one column per
        field, plain tuples columns ``_1, _2, ...``, anything else one column ``value``. An item that does not
        fit the schema (a field it lacks, a value of another type) fails the job naming the sink and the
        record, unless the sink stage has ``on_error(Sinks.dead_letter(name))``. With no items and no
        schema there is nothing to infer columns from, and nothing is written.

        Examples
        --------
        >>> Sinks.files("/tmp/out", format="csv", header=True).params["options"]
        {'header': True}
        >>> Sinks.files("/tmp/out", schema="id INT").params["schema"]
        'id INT'
        """
        params: dict[str, Any] = {"path": _name(path, "Sinks.files(path)"),
                                  "format": _name(format, "Sinks.files(format)"),
                                  "mode": _name(mode, "Sinks.files(mode)"), "options": dict(options)}
        return Sink("files", {**params, **_schema(schema, "Sinks.files(schema)")})

    @staticmethod
    def kafka(bootstrap_servers: str, topic: str, **options: Any) -> Sink:
        """Writes records to a Kafka topic."""
        return Sink("kafka", {"bootstrap_servers": bootstrap_servers, "topic": topic, "options": dict(options)})

    @staticmethod
    def foreach_batch(fn: Callable[[Any, int], None], schema: DataTypeLike | None = None) -> Sink:
        """Calls ``fn(dataframe, batch_id)`` on the driver for each micro-batch; a batch job is one batch,
        id 0. ``dataframe`` holds the items as rows, made as :meth:`files` makes them (``schema`` the
        same); ``fn`` may run any Spark actions on it while it runs (the rows are computed once, before the
        call, and kept until it returns). An exception from ``fn`` fails the job naming the sink.

        Examples
        --------
        >>> Sinks.foreach_batch(lambda df, batch_id: df.show(), schema="n BIGINT").params
        {'schema': 'n BIGINT'}
        """
        if not callable(fn):
            raise TypeError(f"Sinks.foreach_batch(fn): fn must be callable, not {type(fn).__name__}")
        return Sink("foreach_batch", _schema(schema, "Sinks.foreach_batch(schema)"), {"fn": fn})

    @staticmethod
    def dead_letter(name: str) -> Sink:
        """Keeps records that a user function failed on, with the error; read with ``jet.get_list(name)``."""
        return Sink("dead_letter", {"name": _name(name, "Sinks.dead_letter(name)")})


def _schema(schema: DataTypeLike | None, argument: str) -> dict[str, str]:
    """A sink's ``schema=`` as its parameter: a DDL string as given, a DataType as Spark's JSON of it."""
    if schema is None:
        return {}
    if isinstance(schema, str):
        return {"schema": _name(schema, argument)}
    from pyspark.sql.types import DataType

    if not isinstance(schema, DataType):
        raise TypeError(f"{argument} must be a pyspark DataType or a DDL string, not {type(schema).__name__}")
    return {"schema": schema.json()}


def _name(value: Any, argument: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{argument} must be a non-empty string, not {value!r}")
    return value
