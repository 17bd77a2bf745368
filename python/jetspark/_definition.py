"""What source and sink definitions share: a kind, JSON-able parameters, and values passed by reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Definition:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    #: Values the JVM receives by reference (a DataFrame, items, a callable), not as JSON.
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
