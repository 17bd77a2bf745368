"""Pipeline sources."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from jetspark._definition import Definition
from jetspark.worker.kafka import DESERIALIZERS, KafkaRecord

__all__ = ["KafkaRecord", "SimpleEvent", "Source", "Sources"]

class SimpleEvent(NamedTuple):
    """An event of :meth:`Sources.rate_stream`: its timestamp (ms) and its sequence number."""

    timestamp: int
    sequence: int


@dataclass(frozen=True)
class Source(Definition):
    """A source definition; ``is_stream`` tells whether reading it gives a stream stage."""

    is_stream: bool = False

    def to_spec(self, objects: list[Any]) -> dict[str, Any]:
        return {**super().to_spec(objects), "stream": self.is_stream}


class _Pause:
    """The one :data:`Sources.PAUSE`: pickled as a reference to it, so it stays the one after a round trip."""

    def __repr__(self) -> str:
        return "Sources.PAUSE"

    def __reduce__(self) -> str:
        return "PAUSE"


#: In a substream of :meth:`Sources.items_stream`: takes an item's place in the cut and delivers nothing.
PAUSE = _Pause()


class Sources:
    """Factories of sources (Jet's ``Sources``).

    Examples
    --------
    >>> Sources.items([1, 2, 3]).is_stream
    False
    >>> Sources.items_stream([1, 2], [3], items_per_batch=2).params["partitions"]
    2
    """

    #: In a substream of :meth:`items_stream`: takes an item's place in the cut and delivers nothing, so
    #: the substream is silent in that micro-batch (docs/streaming.md, idle substreams).
    PAUSE = PAUSE

    @staticmethod
    def items(items: Iterable[Any]) -> Source:
        """A batch of the given items, in that order (one substream)."""
        values = list(items)
        return Source("items", is_stream=False, params={"count": len(values)},
                      objects={"items": values})

    @staticmethod
    def dataframe(df: Any, substream: str | None = None) -> Source:
        """Any Spark DataFrame; a streaming DataFrame gives a stream stage. A streaming DataFrame is one
        substream, unless ``substream`` names a column: then each distinct value of that column is a
        substream with a watermark of its own."""
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame):
            raise TypeError(f"Sources.dataframe(df): df must be a pyspark DataFrame, not {type(df).__name__}")
        params: dict[str, Any] = {"columns": list(df.columns)}
        if substream is not None:
            if not df.isStreaming:
                raise ValueError("Sources.dataframe(substream=...): only a streaming DataFrame has substreams")
            if substream not in df.columns:
                raise ValueError(f"Sources.dataframe(substream={substream!r}): no such column in {list(df.columns)}")
            params["substream"] = substream
        return Source("dataframe", is_stream=bool(df.isStreaming), params=params, objects={"df": df})

    @staticmethod
    def files(path: str, format: str = "parquet", **options: Any) -> Source:
        """A batch read as ``spark.read.format(format).options(**options).load(path)``."""
        if not isinstance(path, str) or not path:
            raise ValueError("Sources.files(path): path must be a non-empty string")
        return Source("files", is_stream=False, params={"path": path, "format": format, "options": dict(options)})

    @staticmethod
    def items_stream(*partitions: Iterable[Any], items_per_batch: int = 1) -> Source:
        """A finite stream: each positional list is one substream, delivered in order,
        ``items_per_batch`` items of each per micro-batch; the job completes when all are exhausted.
        :data:`Sources.PAUSE` in a substream holds an item's place in the cut and delivers nothing.

        >>> Sources.items_stream([1, Sources.PAUSE, 2]).params["partitions"]
        1
        """
        if not partitions:
            raise ValueError("Sources.items_stream needs at least one partition (a list of items)")
        if not isinstance(items_per_batch, int) or items_per_batch <= 0:
            raise ValueError(f"Sources.items_stream(items_per_batch): must be a positive int, not {items_per_batch!r}")
        values = [list(p) for p in partitions]
        return Source("items_stream", is_stream=True,
                      params={"partitions": len(values), "items_per_batch": items_per_batch},
                      objects={"partitions": values})

    @staticmethod
    def rate_stream(items_per_second: int, partitions: int = 1) -> Source:
        """An unbounded stream of :class:`SimpleEvent` at a fixed rate."""
        if items_per_second <= 0 or partitions <= 0:
            raise ValueError("Sources.rate_stream: items_per_second and partitions must be positive")
        return Source("rate_stream", is_stream=True,
                      params={"items_per_second": items_per_second, "partitions": partitions})

    @staticmethod
    def kafka(bootstrap_servers: str, topic: str | Iterable[str] | re.Pattern[str], **options: Any) -> Source:
        """A stream of :class:`KafkaRecord` read through Spark's Kafka connector (bundled with jetspark);
        each Kafka partition (of each topic) is a substream with its own watermark, and
        ``with_native_timestamps`` takes the records' timestamps.

        Parameters
        ----------
        bootstrap_servers : str
            The brokers to start from, ``host:port[,host:port...]``.
        topic : str, iterable of str, or re.Pattern
            A topic, several, or a compiled pattern that topics are subscribed by (new ones included).
        **options
            ``key_deserializer=`` and ``value_deserializer=``: ``"bytes"`` (the default: as read),
            ``"string"`` (UTF-8 text), ``"json"``, or a function of the bytes; a null key stays None. The
            others are options of Spark's Kafka source, such as ``startingOffsets="earliest"`` or
            ``kafka.*`` consumer properties. Offsets are kept in the job's checkpoint, not committed to a
            consumer group.

        Examples
        --------
        >>> Sources.kafka("127.0.0.1:9092", ["a", "b"], value_deserializer="json").params["topic"]
        'a,b'
        >>> Sources.kafka("127.0.0.1:9092", re.compile("sensors-.*")).params["subscription"]
        'subscribePattern'
        """
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers:
            raise ValueError("Sources.kafka(bootstrap_servers): must be a non-empty string such as 'host:9092'")
        if isinstance(topic, re.Pattern):
            subscription, topics = "subscribePattern", topic.pattern
        elif isinstance(topic, str):
            subscription, topics = "subscribe", topic
        else:
            subscription, topics = "subscribe", ",".join(topic)
        if not topics:
            raise ValueError("Sources.kafka(topic): name at least one topic")
        deserializers = {part: options.pop(part, "bytes") for part in ("key_deserializer", "value_deserializer")}
        params: dict[str, Any] = {"bootstrap_servers": bootstrap_servers, "topic": topics, "subscription": subscription,
                                  "options": {k: str(v) for k, v in options.items()}}
        objects: dict[str, Any] = {}
        for part, deserializer in deserializers.items():
            if callable(deserializer):
                objects[part] = deserializer
            elif deserializer in DESERIALIZERS:
                params[part] = deserializer
            else:
                raise ValueError(f"Sources.kafka({part}): one of {', '.join(DESERIALIZERS)} or a function of the "
                                 f"bytes, not {deserializer!r}")
        return Source("kafka", is_stream=True, params=params, objects=objects)
