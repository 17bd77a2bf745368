"""What a stage call records in its pipeline: one transform (a :class:`Node`) with its arguments, each
checked as the call is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jetspark._extractors import Extractor
from jetspark.aggregate import AggregateOperation
from jetspark.sinks import Sink
from jetspark.window import WindowDefinition

@dataclass
class Node:
    """One recorded transform. ``inputs[i]`` feeds input ordinal ``i``; ``rebalance[i]`` is None (local
    edge), ``"round_robin"`` or a key :class:`Extractor` (design doc 008: the flag sits on the receiving
    transform's input); ``keys[i]`` is the grouping key of input ``i`` for keyed transforms."""

    id: int
    op: str
    is_stream: bool
    inputs: list[int] = field(default_factory=list)
    rebalance: list[Any] = field(default_factory=list)
    keys: list[Extractor | None] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    local_parallelism: int | None = None
    on_error: Sink | None = None

    def label(self) -> str:
        return self.name or f"{self.op}#{self.id}"


def checked_callable(fn: Any, argument: str) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"{argument} must be callable, not {type(fn).__name__}")
    return fn


def checked_operation(op: Any, argument: str) -> AggregateOperation:
    if not isinstance(op, AggregateOperation):
        raise TypeError(f"{argument} must be an AggregateOperation (see AggregateOperations), not {type(op).__name__}")
    return op


def checked_dead_letter_sink(sink: Any) -> Sink:
    if not isinstance(sink, Sink) or sink.kind != "dead_letter":
        raise TypeError("on_error(sink): sink must be Sinks.dead_letter(name)")
    return sink


def checked_window(w: Any) -> WindowDefinition:
    if not isinstance(w, WindowDefinition):
        raise TypeError(f"window(window_definition): expected a WindowDefinition, not {type(w).__name__}")
    return w
