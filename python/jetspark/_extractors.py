"""Key, timestamp and value extractors: a field name, a Spark Column, or a Python callable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

__all__ = ["Extractor", "ExtractorLike", "extractor", "optional_extractor"]

#: What the API accepts wherever it takes a key, timestamp or value.
ExtractorLike = Union[str, "Column", Callable[[Any], Any]]  # noqa: F821  (Column: pyspark, imported lazily)


@dataclass(frozen=True)
class Extractor:
    """A normalized extractor. ``kind`` is ``"field"`` (evaluated in the JVM on typed items),
    ``"column"`` (a Spark Column, evaluated in the JVM) or ``"python"`` (a callable, run in a Python
    worker)."""

    kind: str
    value: Any

    def describe(self) -> str:
        if self.kind == "field":
            return repr(self.value)
        if self.kind == "column":
            return str(self.value)
        return getattr(self.value, "__qualname__", type(self.value).__name__)

    def to_spec(self, objects: list[Any]) -> dict[str, Any]:
        """The JSON-able description handed to the JVM; non-JSON values go to ``objects`` by reference."""
        if self.kind == "field":
            return {"kind": "field", "name": self.value}
        objects.append(self.value)
        return {"kind": self.kind, "ref": len(objects) - 1, "name": self.describe()}


def extractor(value: Any, argument: str) -> Extractor:
    """Normalizes ``value``; raises TypeError naming ``argument`` for anything else."""
    if isinstance(value, Extractor):
        return value
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{argument}: a field name must not be empty")
        return Extractor("field", value)
    if _is_column(value):
        return Extractor("column", value)
    if callable(value):
        return Extractor("python", value)
    raise TypeError(
        f"{argument} must be a field name (str), a pyspark Column or a callable, not {type(value).__name__}"
    )


def optional_extractor(value: Any, argument: str) -> Extractor | None:
    return None if value is None else extractor(value, argument)


def _is_column(value: Any) -> bool:
    try:
        from pyspark.sql import Column
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return False
    return isinstance(value, Column)
