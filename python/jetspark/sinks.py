"""Pipeline sinks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Sink", "Sinks"]


@dataclass(frozen=True)
class Sink:
    """A sink definition."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    objects: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.kind}({shown})"

    def to_spec(self, objects: list[Any]) -> dict[str, Any]:
        refs = {}
        for name, value in self.objects.items():
            objects.append(value)
            refs[name] = len(objects) - 1
        return {"kind": self.kind, "params": dict(self.params), "refs": refs}


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
