"""What a window of an operation with a user-defined part (:meth:`AggregateOperation.of`) holds while it
runs in Python, on a batch (:mod:`jetspark.worker.custom_windows`) and on a stream
(:mod:`jetspark.worker.stream_windows`): per key, its frames or its sessions, and the sliding of frames
into windows.

Windows are aligned to 0 and cover ``[end - size, end)``. Sliding into windows goes through a key's frames
in time order. A tumbling window is its one frame: its result is the frame's, and the operation needs no
``combine`` (Jet's rule). A longer window combines the frames it spans, leading frame in, trailing frame
out: with ``deduct`` one running accumulator, which deducts the trailing frame; without, two stacks of
frames with their combinations (``FrameQueue`` in the JVM); either way amortized O(1) combines per slide,
whatever the number of frames per window.

Sessions are Jet's: an item's span ``[ts, ts + timeout)`` joins every session it overlaps (spans that only
touch do not), merging them into one whose accumulators combine, oldest first; the item is then
accumulated into it. Merging needs ``combine``; the planner refuses a session window (and a sliding one
longer than its slide) over an operation without one, before the job starts (rule
``window-needs-combine``), as Jet does.

Failures: a record whose ``accumulate`` raises is a dead letter once (where the stage routes failures to
a dead-letter sink; otherwise it fails the job), and counts in none of its windows; its time still puts
it in its frame or session, as it puts a record that succeeds: a window whose records all failed has the
result of an accumulator that accumulated nothing. A failing ``create``, ``combine``, ``deduct`` or
``finish`` fails the job naming the stage and the window, frame or session (key and bounds).
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jetspark._items import loads_key
from jetspark.worker.custom_aggregations import Output, StageCalls
from jetspark.worker.event_time import out_of_range
from jetspark.worker.steps import StepFailedError

#: Results per Arrow batch: a partition's windows leave a slice at a time, not all in one batch.
BATCH_ROWS = 1024

#: The watermark before any (the JVM's ``Long.MinValue``).
_NO_WATERMARK = -2**63


@dataclass
class StreamWindowState:
    """What a window on a stream keeps from one epoch to the next (:mod:`jetspark.worker.epoch_state`):
    its frames or sessions per key, the highest ``watermark`` it has had, the end of the last window the
    watermark closed (``closed_end``: a sliding or tumbling window's; None before any), and when early
    results are next due (``early_at``, the epochs' time; None before the first epoch)."""

    table: dict[bytes, Any] = field(default_factory=dict)
    watermark: int = _NO_WATERMARK
    closed_end: int | None = None
    early_at: int | None = None



def held_windows(operation: Any, calls: StageCalls, window: Mapping[str, Any], keyed: bool) -> Frames | Sessions:
    """What a window of ``operation`` holds (``window``: the definition's spec): its frames, for a sliding or
    tumbling window, or its sessions; a call that fails names its key where the window is ``keyed``."""

    def about(key: bytes, what: str, start: int, end: int) -> _About:
        return _About(key if keyed else None, what, start, end)

    if window["kind"] == "sliding":
        return Frames(operation, calls, window["size_ms"], window["slide_ms"], about)
    return Sessions(operation, calls, window["timeout_ms"], about)


def _require_in_range(calls: StageCalls, item: Any, ts: int, first_start: int, last_end: int, what: str) -> None:
    """Fails the stage on ``item`` where a window that holds it cannot be represented in 64 bits, as the
    JVM's windows do: Python's ints would carry it on, into a result no other path gives."""
    problem = out_of_range(ts, first_start, last_end, what)
    if problem is not None:
        raise StepFailedError(f"stage '{calls.stage}' failed on record {item!r}: WindowOutOfRangeException: {problem}")


class _About:
    """The window, frame or session a call of the operation is about, put into words only when the call
    fails: every window and frame has one, and unpickling its key for each would cost more than most
    calls."""

    __slots__ = ("key", "what", "start", "end")

    def __init__(self, key: bytes | None, what: str, start: int, end: int) -> None:
        self.key, self.what, self.start, self.end = key, what, start, end

    def __str__(self) -> str:
        bounds = f"<{self.what} [{self.start}, {self.end})"
        return f"{bounds} of key {loads_key(self.key)!r}>" if self.key is not None else f"{bounds}>"


About = Callable[[bytes, str, int, int], _About]


class Frames:
    """Per key, the accumulators of its frames by frame end (a frame is ``[end - slide, end)``)."""

    def __init__(self, op: Any, calls: StageCalls, size: int, slide: int, about: About) -> None:
        self.op, self.calls, self.size, self.slide, self.about = op, calls, size, slide, about
        self.table: dict[bytes, dict[int, Any]] = {}
        self.described = f"sliding windows of {size} ms by {slide} ms"

    def add(self, key: bytes, ts: int, item: Any, values: list[bytes], out: Output) -> None:
        end = (ts // self.slide + 1) * self.slide
        _require_in_range(self.calls, item, ts, end - self.size, end - self.slide + self.size, self.described)
        frames = self.table.setdefault(key, {})
        if end not in frames:
            frames[end] = self.calls.of_group("create", self.about(key, "frame", end - self.slide, end), self.op.create)
        _, frames[end] = self.calls.accumulated(self.op, frames[end], item, values, out, key)

    def combine_in(self, key: bytes, end: int, partial: Any) -> None:
        """Adds another partition's accumulator of a frame (unpickled here: ours to keep)."""
        frames = self.table.setdefault(key, {})
        if end not in frames:
            frames[end] = partial
        else:
            mine = frames[end]
            frames[end] = self.calls.of_group("combine", self.about(key, "frame", end - self.slide, end),
                                              lambda: self.op.combine(mine, partial))

    def by_key(self) -> Iterator[tuple[bytes, list[tuple[int, Any]]]]:
        while self.table:
            key, frames = self.table.popitem()
            yield key, list(frames.items())

    def late_on_stream(self, ts: int, state: StreamWindowState) -> bool:
        """Whether an event at ``ts`` is late on a stream: a watermark of an epoch before closed its frame."""
        return state.closed_end is not None and (ts // self.slide + 1) * self.slide <= state.closed_end

    def closed_on_stream(self, state: StreamWindowState) -> Iterator[tuple[bytes, int, int, Any]]:
        """The windows that ``state``'s new watermark closes (ending at or before it); moves ``closed_end``."""
        upto = state.watermark // self.slide * self.slide
        closed = self.windows(after=state.closed_end, upto=upto)
        state.closed_end = upto
        return closed

    def open_on_stream(self, state: StreamWindowState, keep: bool = False) -> Iterator[tuple[bytes, int, int, Any]]:
        """Every window not closed yet (dropped as given, unless ``keep``)."""
        return self.windows(after=state.closed_end, keep=keep)

    def windows(self, after: int | None = None, upto: int | None = None, keep: bool = False
                ) -> Iterator[tuple[bytes, int, int, Any]]:
        """The non-empty windows ``(key, start, end, accumulator)`` with ``after < end <= upto`` (None: no
        bound), a key's in increasing end order. Unless ``keep``, the frames that no window after ``upto``
        holds are dropped as their key's windows are given: every frame, where ``upto`` is None."""
        for key in list(self.table):
            frames = self.table[key]
            yield from self._windows_of(key, frames, after, upto)
            if keep:
                continue
            if upto is not None:
                # The next window ends at upto + slide: it holds the frames ending after upto + slide - size.
                for end in [end for end in frames if end <= upto + self.slide - self.size]:
                    del frames[end]
            if upto is None or not frames:
                del self.table[key]

    def _windows_of(self, key: bytes, frames: dict[int, Any], after: int | None, upto: int | None
                    ) -> Iterator[tuple[bytes, int, int, Any]]:
        size, slide = self.size, self.slide
        ends = sorted(frames)
        if size == slide:
            for end in ends:
                if (after is None or end > after) and (upto is None or end <= upto):
                    yield key, end - size, end, frames[end]
            return
        window: _Deducting | _TwoStacks = (_Deducting(self.op, self.calls) if self.op.deduct is not None
                                           else _TwoStacks(self.op, self.calls))
        i, end = 0, ends[0] if after is None else max(ends[0], after + slide)
        while upto is None or end <= upto:
            about = self.about(key, "window", end - size, end)
            while window and window.oldest_end <= end - size:
                window.drop_oldest(about)
            while i < len(ends) and ends[i] <= end:
                window.push(ends[i], frames[ends[i]], about)
                i += 1
            if not window:  # no frame in this window: on to the next window that has one
                if i == len(ends):
                    return
                end = ends[i]
                continue
            yield key, end - size, end, window.aggregate(about)
            end += slide


class _Deducting:
    """The frames of the current window with one running accumulator: combine the leading frame in,
    deduct the trailing one. An empty window starts again from ``create()``, so deduct's rounding (of
    floats) never outlives a gap."""

    def __init__(self, op: Any, calls: StageCalls) -> None:
        self.op, self.calls = op, calls
        self.frames: deque[tuple[int, Any]] = deque()
        self.running: Any = None

    def __bool__(self) -> bool:
        return bool(self.frames)

    @property
    def oldest_end(self) -> int:
        return self.frames[0][0]

    def push(self, end: int, acc: Any, about: _About) -> None:
        if not self.frames:
            self.running = self.calls.of_group("create", about, self.op.create)
        running = self.running
        self.running = self.calls.of_group("combine", about, lambda: self.op.combine(running, acc))
        self.frames.append((end, acc))

    def drop_oldest(self, about: _About) -> None:
        _, acc = self.frames.popleft()
        running = self.running
        self.running = self.calls.of_group("deduct", about, lambda: self.op.deduct(running, acc)) if self.frames else None

    def aggregate(self, about: _About) -> Any:
        return copy.deepcopy(self.running)  # the running accumulator goes on to the next window


class _TwoStacks:
    """The frames of the current window in two stacks, for operations that cannot deduct. New frames go
    on the back, which keeps their combination; the front holds older frames, oldest on top, each with
    the combination of itself and every newer frame of the front. A drop pops the front; when it is
    empty, the back moves over once, computing those combinations. Frames' accumulators are never
    changed (every combine has a copy or an accumulator of our own on its left)."""

    def __init__(self, op: Any, calls: StageCalls) -> None:
        self.op, self.calls = op, calls
        self.front: list[tuple[int, Any]] = []  # top (last) = oldest
        self.back: list[tuple[int, Any]] = []  # first = oldest
        self.back_combined: Any = None

    def __bool__(self) -> bool:
        return bool(self.front or self.back)

    @property
    def oldest_end(self) -> int:
        return self.front[-1][0] if self.front else self.back[0][0]

    def push(self, end: int, acc: Any, about: _About) -> None:
        self.back.append((end, acc))
        if len(self.back) == 1:
            self.back_combined = copy.deepcopy(acc)
        else:
            mine = self.back_combined
            self.back_combined = self.calls.of_group("combine", about, lambda: self.op.combine(mine, acc))

    def drop_oldest(self, about: _About) -> None:
        if not self.front:
            newer = None
            for end, acc in reversed(self.back):
                # combine(older, newer): frames combine in time order
                combined = acc if newer is None else self.calls.of_group(
                    "combine", about, lambda: self.op.combine(copy.deepcopy(acc), newer))
                self.front.append((end, combined))
                newer = combined
            self.back, self.back_combined = [], None
        self.front.pop()

    def aggregate(self, about: _About) -> Any:
        if not self.front:
            return copy.deepcopy(self.back_combined)
        oldest = copy.deepcopy(self.front[-1][1])
        if not self.back:
            return oldest
        back = self.back_combined
        return self.calls.of_group("combine", about, lambda: self.op.combine(oldest, back))


class Sessions:
    """Per key, its sessions ``[start, end, accumulator]``: disjoint, in start order (and so in end
    order)."""

    def __init__(self, op: Any, calls: StageCalls, timeout: int, about: About) -> None:
        self.op, self.calls, self.timeout, self.about = op, calls, timeout, about
        self.described = f"sessions of timeout {timeout} ms"
        self.table: dict[bytes, list[list[Any]]] = {}

    def add(self, key: bytes, ts: int, item: Any, values: list[bytes], out: Output) -> None:
        _require_in_range(self.calls, item, ts, ts, ts + self.timeout, self.described)
        sessions = self.table.setdefault(key, [])
        start, end = ts, ts + self.timeout
        # The sessions the span overlaps: those starting before its end and ending after its start.
        high = bisect_left(sessions, end, key=lambda s: s[0])
        low = high
        while low > 0 and sessions[low - 1][1] > ts:
            low -= 1
        joined = sessions[low:high]
        if joined:
            start, end = min(start, joined[0][0]), max(end, joined[-1][1])
            about = self.about(key, "session", start, end)
            acc = joined[0][2]
            for newer in joined[1:]:
                older = acc
                acc = self.calls.of_group("combine", about, lambda: self.op.combine(older, newer[2]))
        else:
            acc = self.calls.of_group("create", self.about(key, "session", start, end), self.op.create)
        _, acc = self.calls.accumulated(self.op, acc, item, values, out, key)
        sessions[low:high] = [[start, end, acc]]

    def late_on_stream(self, ts: int, state: StreamWindowState) -> bool:
        """Whether an event at ``ts`` is late on a stream: below the watermark of an epoch before."""
        return ts < state.watermark

    def closed_on_stream(self, state: StreamWindowState) -> Iterator[tuple[bytes, int, int, Any]]:
        """The sessions that ``state``'s new watermark closes (ending before it)."""
        return self.windows(before=state.watermark)

    def open_on_stream(self, state: StreamWindowState, keep: bool = False) -> Iterator[tuple[bytes, int, int, Any]]:
        """Every session (dropped as given, unless ``keep``)."""
        return self.windows(keep=keep)

    def windows(self, before: int | None = None, keep: bool = False) -> Iterator[tuple[bytes, int, int, Any]]:
        """The sessions ``(key, start, end, accumulator)`` ending before ``before`` (None: every one), a
        key's in end order; unless ``keep``, dropped as they are given."""
        for key in list(self.table):
            sessions = self.table[key]
            given = [s for s in sessions if before is None or s[1] < before]
            for start, end, acc in given:
                yield key, start, end, acc
            if not keep:
                del sessions[:len(given)]  # disjoint, in end order: those ending first
                if not sessions:
                    del self.table[key]
