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
        """Writes each item to the Kafka ``topic`` as one record, through Spark's Kafka connector (bundled
        with jetspark). At least once: an epoch written again (after a failure) writes its records again;
        under ``EXACTLY_ONCE``, each epoch's records go out in one Kafka transaction with the epoch's
        number, and a replayed epoch already committed writes nothing (docs/kafka.md).

        Parameters
        ----------
        bootstrap_servers : str
            The brokers to start from, ``host:port[,host:port...]``.
        topic : str
            The topic written to.
        **options
            ``key=``: the record's key of an item (a function; without it, records have no key);
            ``value=``: its value (a function; without it, the item itself). The others are options of
            Spark's Kafka sink, such as ``kafka.*`` producer properties.

        Keys and values become bytes: bytes as they are, text as UTF-8, None as null, anything else as
        JSON. An item whose key or value fails fails the job naming the sink, or, with
        ``on_error(Sinks.dead_letter(name))`` on the sink stage, goes there.

        Examples
        --------
        >>> Sinks.kafka("127.0.0.1:9092", "counts", key=lambda r: r.key).params["topic"]
        'counts'
        """
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers:
            raise ValueError("Sinks.kafka(bootstrap_servers): must be a non-empty string such as 'host:9092'")
        if not isinstance(topic, str) or not topic:
            raise ValueError("Sinks.kafka(topic): must be a non-empty string")
        given = {name: options.pop(name, None) for name in ("key", "value")}
        functions = {name: fn for name, fn in given.items() if fn is not None}
        for name, fn in functions.items():
            if not callable(fn):
                raise TypeError(f"Sinks.kafka({name}): must be callable, not {type(fn).__name__}")
        return Sink("kafka", {"bootstrap_servers": bootstrap_servers, "topic": topic,
                              "options": {k: str(v) for k, v in options.items()}}, functions)

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
