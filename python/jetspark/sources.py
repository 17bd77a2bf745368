"""Pipeline sources."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["SimpleEvent", "Source", "Sources"]


class SimpleEvent(NamedTuple):
    """An event of :meth:`Sources.rate_stream`: its timestamp (ms) and its sequence number."""

    timestamp: int
    sequence: int


@dataclass(frozen=True)
class Source:
    """A source definition; ``is_stream`` tells whether reading it gives a stream stage."""

    kind: str
    is_stream: bool
    params: dict[str, Any] = field(default_factory=dict)
    #: Values the JVM receives by reference (a DataFrame, the items).
    objects: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.kind}({shown})"

    def to_spec(self, objects: list[Any]) -> dict[str, Any]:
        refs = {}
        for name, value in self.objects.items():
            objects.append(value)
            refs[name] = len(objects) - 1
        return {"kind": self.kind, "stream": self.is_stream, "params": dict(self.params), "refs": refs}


class Sources:
    """Factories of sources (Jet's ``Sources``).

    Examples
    --------
    >>> Sources.items([1, 2, 3]).is_stream
    False
    >>> Sources.items_stream([1, 2], [3], items_per_batch=2).params["partitions"]
    2
    """

    @staticmethod
    def items(items: Iterable[Any]) -> Source:
        """A batch of the given items, in that order (one substream)."""
        values = list(items)
        return Source("items", False, {"count": len(values)}, {"items": values})

    @staticmethod
    def dataframe(df: Any) -> Source:
        """Any Spark DataFrame; a streaming DataFrame gives a stream stage."""
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame):
            raise TypeError(f"Sources.dataframe(df): df must be a pyspark DataFrame, not {type(df).__name__}")
        return Source("dataframe", bool(df.isStreaming), {"columns": list(df.columns)}, {"df": df})

    @staticmethod
    def files(path: str, format: str = "parquet", **options: Any) -> Source:
        """A batch read as ``spark.read.format(format).options(**options).load(path)``."""
        if not isinstance(path, str) or not path:
            raise ValueError("Sources.files(path): path must be a non-empty string")
        return Source("files", False, {"path": path, "format": format, "options": dict(options)})

    @staticmethod
    def items_stream(*partitions: Iterable[Any], items_per_batch: int = 1) -> Source:
        """A finite stream: each positional list is one substream, delivered in order,
        ``items_per_batch`` items of each per micro-batch; the job completes when all are exhausted."""
        if not partitions:
            raise ValueError("Sources.items_stream needs at least one partition (a list of items)")
        if not isinstance(items_per_batch, int) or items_per_batch <= 0:
            raise ValueError(f"Sources.items_stream(items_per_batch): must be a positive int, not {items_per_batch!r}")
        values = [list(p) for p in partitions]
        return Source("items_stream", True, {"partitions": len(values), "items_per_batch": items_per_batch},
                      {"partitions": values})

    @staticmethod
    def rate_stream(items_per_second: int, partitions: int = 1) -> Source:
        """An unbounded stream of :class:`SimpleEvent` at a fixed rate."""
        if items_per_second <= 0 or partitions <= 0:
            raise ValueError("Sources.rate_stream: items_per_second and partitions must be positive")
        return Source("rate_stream", True, {"items_per_second": items_per_second, "partitions": partitions})

    @staticmethod
    def kafka(bootstrap_servers: str, topic: str, **options: Any) -> Source:
        """Records ``key, value, topic, partition, offset, timestamp``; each Kafka partition is a substream."""
        return Source("kafka", True, {"bootstrap_servers": bootstrap_servers, "topic": topic, "options": dict(options)})
