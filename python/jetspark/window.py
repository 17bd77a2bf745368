"""Window definitions and window results."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from jetspark.errors import PipelineDefinitionError

__all__ = ["KeyedWindowResult", "WindowDefinition", "WindowResult"]

K = TypeVar("K")
R = TypeVar("R")


@dataclass(frozen=True)
class WindowDefinition:
    """How a stream is cut into windows; immutable and validated on construction.

    Windows are aligned to timestamp 0 and cover ``[end - size, end)``: start inclusive, end exclusive.
    A sliding window hops by ``slide``; its ``size`` must be a whole number of slides, because results
    are computed from ``slide``-long frames (combine the leading frame, deduct the trailing one).
    A tumbling window is a sliding window whose slide equals its size. A session window lasts
    ``timeout`` past its last event; events whose ``[ts, ts + timeout)`` intervals overlap share a
    session (touching intervals do not).

    Examples
    --------
    >>> WindowDefinition.sliding(10_000, 1_000)
    WindowDefinition(kind='sliding', size_ms=10000, slide_ms=1000, timeout_ms=None, early_results_period_ms=None)
    >>> WindowDefinition.tumbling(60_000).slide_ms
    60000
    >>> WindowDefinition.session(30_000).set_early_results_period(1_000).early_results_period_ms
    1000
    >>> WindowDefinition.sliding(10, 3)
    Traceback (most recent call last):
    ...
    jetspark.errors.PipelineDefinitionError: WindowDefinition.sliding(10, 3): rule 'size is a multiple of slide' is broken: 10 is not a multiple of 3
    """

    kind: str
    size_ms: int | None = None
    slide_ms: int | None = None
    timeout_ms: int | None = None
    early_results_period_ms: int | None = None

    def __post_init__(self) -> None:
        where = self._call()
        for name in ("size_ms", "slide_ms", "timeout_ms", "early_results_period_ms"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise PipelineDefinitionError(
                    f"{where}: rule 'positive whole milliseconds' is broken: {name}={value!r}", where,
                    "positive whole milliseconds")
        if self.kind == "sliding":
            assert self.size_ms is not None and self.slide_ms is not None
            if self.size_ms % self.slide_ms != 0:
                # Frames are slide-long; a window must consist of whole frames.
                raise PipelineDefinitionError(
                    f"{where}: rule 'size is a multiple of slide' is broken: "
                    f"{self.size_ms} is not a multiple of {self.slide_ms}", where, "size is a multiple of slide")
        elif self.kind != "session":
            raise ValueError(f"unknown window kind {self.kind!r}")

    def _call(self) -> str:
        if self.kind == "session":
            return f"WindowDefinition.session({self.timeout_ms})"
        if self.size_ms == self.slide_ms:
            return f"WindowDefinition.tumbling({self.size_ms})"
        return f"WindowDefinition.{self.kind}({self.size_ms}, {self.slide_ms})"

    @staticmethod
    def tumbling(size_ms: int) -> WindowDefinition:
        """Back-to-back windows of ``size_ms``."""
        return WindowDefinition("sliding", size_ms=size_ms, slide_ms=size_ms)

    @staticmethod
    def sliding(size_ms: int, slide_ms: int) -> WindowDefinition:
        """Windows of ``size_ms`` every ``slide_ms``; ``size_ms`` must be a multiple of ``slide_ms``."""
        return WindowDefinition("sliding", size_ms=size_ms, slide_ms=slide_ms)

    @staticmethod
    def session(timeout_ms: int) -> WindowDefinition:
        """A window per burst of events, closed ``timeout_ms`` after its last event."""
        return WindowDefinition("session", timeout_ms=timeout_ms)

    def set_early_results_period(self, period_ms: int) -> WindowDefinition:
        """A copy that also emits the partial result of each open window every ``period_ms`` of wall
        time (those results have ``is_early=True``). Over a batch (``BatchStage.add_timestamps``) the
        period is ignored: the batch ends with one final watermark, so every window is emitted once,
        complete."""
        return replace(self, early_results_period_ms=period_ms)

    def to_spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "size_ms": self.size_ms, "slide_ms": self.slide_ms,
                "timeout_ms": self.timeout_ms, "early_results_period_ms": self.early_results_period_ms}


@dataclass(frozen=True)
class WindowResult(Generic[R]):
    """The result of a non-keyed window ``[start, end)``."""

    start: int
    end: int
    result: R
    is_early: bool = False


@dataclass(frozen=True)
class KeyedWindowResult(Generic[K, R]):
    """The result of one key's window ``[start, end)``."""

    start: int
    end: int
    key: K
    result: R
    is_early: bool = False
