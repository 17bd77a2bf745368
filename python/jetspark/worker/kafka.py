"""Kafka records on the workers: a source's rows made :class:`~jetspark.KafkaRecord` items
(:func:`record_maker`), and a sink's items made records' keys and values (:func:`records_function`).

Spark's Kafka connector reads and writes the records (docs/kafka.md); Python only turns bytes into
values and back.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from jetspark.errors import DeadLetter
from jetspark.worker.rows import sink_rows
from jetspark.worker.steps import PICKLE_PROTOCOL, StepFailedError

class KafkaRecord(NamedTuple):
    """A record of :meth:`jetspark.Sources.kafka`: its key and value (bytes, or as deserialized; a key may
    be None), where it was read, and its timestamp in ms since the epoch."""

    key: Any
    value: Any
    topic: str
    partition: int
    offset: int
    timestamp: int


#: The columns of a Kafka sink's rows: each record's key and value, as bytes.
RECORD_COLUMNS = ("key", "value")
#: The same as a DDL schema.
RECORD_SCHEMA = ", ".join(f"{column} BINARY" for column in RECORD_COLUMNS)

#: The deserializers of :meth:`jetspark.Sources.kafka` by name: kept as bytes, decoded as UTF-8 text, or
#: parsed as JSON (a callable given instead is handed the bytes).
DESERIALIZERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": lambda raw: raw,
    "string": lambda raw: raw.decode("utf-8"),
    "json": lambda raw: json.loads(raw),
}


def record_maker(key: Callable[[bytes], Any], value: Callable[[bytes], Any], stage: str) -> Callable[[Any], KafkaRecord]:
    """How a row of the connector (``key, value, topic, partition, offset, timestamp``, the last in ms) becomes a record,
    its key and value deserialized (a null stays None); a deserializer that raises fails the job naming
    the source ``stage`` and where the record was read."""

    def make(row: Any) -> KafkaRecord:
        try:
            k = None if row.key is None else key(row.key)
            v = None if row.value is None else value(row.value)
        except Exception as e:  # noqa: BLE001 - any failure is the record's
            raise StepFailedError(f"stage '{stage}' could not deserialize the record at offset {row.offset} of "
                                  f"{row.topic}/{row.partition}: {type(e).__name__}: {e}") from e
        return KafkaRecord(k, v, row.topic, row.partition, row.offset, row.timestamp)

    return make


def serialized(value: Any) -> bytes | None:
    """A key or value as a record's bytes: bytes as they are, text as UTF-8, None as null, else JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, allow_nan=False).encode("utf-8")


def records_function(key: Callable[[Any], Any] | None, value: Callable[[Any], Any] | None, stage: str,
                     dead_letter: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The Arrow map function from a Kafka sink's pickled items to rows of ``item``, ``failure`` and
    ``row`` (``key``, ``value``: binary), as :func:`jetspark.worker.rows.rows_function` gives a sink's rows:
    each item's key (``key(item)``, or none) and value (``value(item)``, or the item), serialized by
    :func:`serialized`; an item they fail on fails the job naming the sink, or, with ``dead_letter``,
    comes out as its dead letter."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        row_type = pa.struct([(column, pa.binary()) for column in RECORD_COLUMNS])
        for batch in batches:
            keys: list[bytes | None] = []
            values: list[bytes | None] = []
            letters: list[bytes] = []
            for raw in batch.column(0).to_pylist():
                item = pickle.loads(raw)
                try:
                    k = serialized(key(item)) if key is not None else None
                    v = serialized(value(item) if value is not None else item)
                except Exception as e:  # noqa: BLE001 - any failure is the record's
                    error = f"{type(e).__name__}: {e}"
                    if not dead_letter:
                        raise StepFailedError(f"stage '{stage}' failed on record {item!r}: {error}") from e
                    letters.append(pickle.dumps(DeadLetter(item, stage, error), protocol=PICKLE_PROTOCOL))
                    continue
                keys.append(k)
                values.append(v)
            yield sink_rows(pa.StructArray.from_arrays([pa.array(keys, pa.binary()), pa.array(values, pa.binary())],
                                                       fields=list(row_type)), letters, stage)

    return run
