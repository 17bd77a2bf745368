"""Hypothesis strategies of stream inputs: several substreams of an ``items_stream`` and how it is cut.

Expected outputs come from :func:`stream_reference.run_stream_reference` on a pipeline built over
:meth:`StreamInput.source`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from jetspark import Pipeline, Sources

__all__ = ["StreamInput", "paused_stream_inputs", "stream_inputs"]


@dataclass(frozen=True)
class StreamInput:
    """Substreams of items ``{"s": substream, "k": key, "v": value, "t": timestamp in ms}``, delivered
    ``items_per_batch`` of each per epoch, their watermark ``allowed_lag_ms`` behind."""

    substreams: list[list[dict[str, int]]]
    items_per_batch: int
    allowed_lag_ms: int

    def source(self, pipeline: Pipeline) -> Any:
        """The stream stage that reads this input, timestamped by its ``"t"`` field."""
        return (pipeline.read_from(Sources.items_stream(*self.substreams, items_per_batch=self.items_per_batch))
                .with_timestamps("t", allowed_lag_ms=self.allowed_lag_ms))


@st.composite
def stream_inputs(draw: Callable[[Any], Any], max_substreams: int = 3, max_items: int = 15) -> StreamInput:
    """One to ``max_substreams`` substreams (some may be empty) of up to ``max_items`` items. Each
    substream's timestamps mostly rise by small steps from a start of its own (0, or ahead of the others
    by 40 ms or a second: skew); about one item in five is behind its substream's latest timestamp by up
    to 60 ms (out of order, late where the lag does not cover it). Keys 0 to 2. The cut: 1, 2, 3, 7 or 100
    items per batch; the allowed lag: 0, 5, 30 or 100 ms. Hypothesis simplifies towards one in-order
    substream without skew, one item per batch and no lag."""
    substreams = []
    for s in range(draw(st.integers(1, max_substreams))):
        latest = draw(st.sampled_from([0, 40, 1_000]))
        items = []
        for _ in range(draw(st.integers(0, max_items))):
            if draw(st.integers(0, 4)) == 4:
                ts = latest - draw(st.integers(1, 60))
            else:
                latest += draw(st.integers(0, 15))
                ts = latest
            items.append({"s": s, "k": draw(st.integers(0, 2)), "v": draw(st.integers(-5, 20)), "t": ts})
        substreams.append(items)
    return StreamInput(substreams, draw(st.sampled_from([1, 2, 3, 7, 100])), draw(st.sampled_from([0, 5, 30, 100])))


@st.composite
def paused_stream_inputs(draw: Callable[[Any], Any], max_substreams: int = 3, max_items: int = 8) -> StreamInput:
    """:func:`stream_inputs` with stalls: in some substreams, runs of ``Sources.PAUSE`` of one to three
    epochs' worth of places (``items_per_batch`` each, so a substream delivers nothing in those epochs, when
    the run starts at an epoch's first place), at a random place, sometimes at the end (a substream that
    stalls, then is done). Hypothesis simplifies towards no pause."""
    stream = draw(stream_inputs(max_substreams=max_substreams, max_items=max_items))
    substreams = []
    for items in stream.substreams:
        items = list(items)
        for _ in range(draw(st.integers(0, 2))):
            at = draw(st.integers(0, len(items)))
            items[at:at] = [Sources.PAUSE] * (stream.items_per_batch * draw(st.integers(1, 3)))
        substreams.append(items)
    return StreamInput(substreams, stream.items_per_batch, stream.allowed_lag_ms)
