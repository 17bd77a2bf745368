"""Pipeline sinks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jetspark._definition import Definition

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
    def files(path: str, format: str = "parquet", mode: str = "append") -> Sink:
        """Writes with ``df.write.format(format).mode(mode).save(path)`` (typed items)."""
        return Sink("files", {"path": _name(path, "Sinks.files(path)"), "format": format, "mode": mode})

    @staticmethod
    def kafka(bootstrap_servers: str, topic: str, **options: Any) -> Sink:
        """Writes records to a Kafka topic."""
        return Sink("kafka", {"bootstrap_servers": bootstrap_servers, "topic": topic, "options": dict(options)})

    @staticmethod
    def foreach_batch(fn: Callable[[Any, int], None]) -> Sink:
        """Calls ``fn(dataframe, batch_id)`` for each micro-batch (once for a batch job)."""
        if not callable(fn):
            raise TypeError(f"Sinks.foreach_batch(fn): fn must be callable, not {type(fn).__name__}")
        return Sink("foreach_batch", {}, {"fn": fn})

    @staticmethod
    def dead_letter(name: str) -> Sink:
        """Keeps records that a user function failed on, with the error; read with ``jet.get_list(name)``."""
        return Sink("dead_letter", {"name": _name(name, "Sinks.dead_letter(name)")})


def _name(value: Any, argument: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{argument} must be a non-empty string, not {value!r}")
    return value
