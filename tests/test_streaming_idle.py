"""Idle substreams and early results on the epoch engine (issue 24; docs/streaming.md, rules 6 and 8).

Idleness and early-results periods are wall-clock, measured on the epochs' times, which are at least 1 ms
apart. With ``partition_idle_timeout_ms=1`` a substream that delivers nothing in an epoch (its places
there are ``Sources.PAUSE``) is idle at that epoch's end, and an early-results period of 1 ms is due at
every epoch end: both deterministic, as the stream reference models them. Expected outputs come from
:func:`stream_reference.run_stream_reference`, or are worked out by hand from the rules where it says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import AT_EVERY_EPOCH_MS, NEVER_IN_A_TEST_MS, StreamRun, epoch_watermarks, run_stream_reference
from stream_strategies import StreamInput, paused_stream_inputs

from jetspark import AggregateOperations, JobConfig, JobStatus, Pipeline, Sinks, Sources, WindowDefinition

P = Sources.PAUSE

WINDOWS = {
    "sliding": lambda: WindowDefinition.sliding(40, 10),
    "tumbling": lambda: WindowDefinition.tumbling(25),
    "session": lambda: WindowDefinition.session(12),
}


def windowed(stream: StreamInput, window: Any, keyed: bool = False, operation: Any = None) -> Pipeline:
    """``stream`` through a filter into ``window`` (a definition), counting unless told, to the list ``out``."""
    p = Pipeline.create()
    stage = stream.source(p).filter(lambda e: e["v"] != 7)
    if keyed:
        stage = stage.grouping_key("k")
    stage.window(window).aggregate(operation or AggregateOperations.counting()).write_to(Sinks.list("out"))
    return p


def run(jet: Any, p: Pipeline, idle_timeout_ms: int) -> tuple[list[Any], dict[str, Any]]:
    """Runs ``p`` to completion with that idle timeout; returns what list ``out`` got and the job's metrics."""
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(partition_idle_timeout_ms=idle_timeout_ms))
    job.join(timeout=300)
    assert job.status is JobStatus.COMPLETED
    got = jet.get_list("out")
    jet.clear_list("out")
    return got, job.metrics()


def run_and_compare(jet: Any, p: Pipeline, idle_timeout_ms: int) -> tuple[StreamRun, list[Any], dict[str, Any]]:
    """Runs ``p`` and asserts that its final windows, early results and late drops are the reference's."""
    expected = run_stream_reference(p, partition_idle_timeout_ms=idle_timeout_ms)
    got, metrics = run(jet, p, idle_timeout_ms)
    assert as_multiset([r for r in got if not r.is_early]) == as_multiset(expected.outputs["out"])
    assert as_multiset([r for r in got if r.is_early]) == as_multiset(
        [r for stage in expected.early.values() for epoch in stage for r in epoch])
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())
    return expected, got, metrics


@settings(max_examples=examples(3))
@given(stream=paused_stream_inputs(max_items=6), window=st.sampled_from(sorted(WINDOWS)), keyed=st.booleans(),
       early_ms=st.sampled_from([AT_EVERY_EPOCH_MS, NEVER_IN_A_TEST_MS]))
def test_random_streams_with_idle_substreams_match_the_reference(jet: Any, stream: StreamInput, window: str,
                                                                 keyed: bool, early_ms: int) -> None:
    """Single-stage windows (early results make sliding and tumbling windows single-stage; a period of 60 s
    gives none in a test): the reference has no two-stage window over idle substreams."""
    p = windowed(stream, WINDOWS[window]().set_early_results_period(early_ms), keyed)
    run_and_compare(jet, p, AT_EVERY_EPOCH_MS)


def test_the_reference_leaves_idle_substreams_out_by_hand() -> None:
    """Rule 3 of the reference, worked out by hand (lag 0, one place per epoch, 1 ms timeout): substream 1
    is idle after epochs 1 and 2, substream 0 after epoch 2; with both idle the watermark is the higher of
    theirs; when they deliver again it does not go back."""
    marks = epoch_watermarks([[5, 6, P, 8, 9, 10], [1, P, P, 2, 3, 4]], 1, 0, quiet_epochs_idle=True)
    assert marks.idle == [[False, False], [False, True], [True, True], [False, False], [False, False], [False, False]]
    assert marks.coalesced == [1, 6, 6, 6, 6, float("inf")]
    assert epoch_watermarks([[5, 6, P, 8, 9, 10], [1, P, P, 2, 3, 4]], 1, 0).coalesced == [1, 1, 1, 2, 3, float("inf")]


def item(s: int, t: int) -> dict[str, int]:
    return {"s": s, "k": 0, "v": 1, "t": t}


# Substream 0 runs ahead; substream 1 stalls after its first item (lag 0, one place per epoch). With
# the 1 ms timeout: W(0) = 10; substream 1 is idle after epochs 1 and 2, so W(1) = 101 and 0@30 in epoch
# 2 is late (30 < 101). When substream 1 delivers again in epoch 3, its items are late (12, 13 and 14 are
# below W = 101), and it holds W at 101 (W never goes back, and min(103, 12) is below it): 0@150 in epoch
# 5 is on time. Late: 4.
AHEAD = [item(0, 100), item(0, 101), item(0, 30), item(0, 103), item(0, 300), item(0, 150)]
RESUMES = [item(1, 10), P, P, item(1, 12), item(1, 13), item(1, 14)]
# Substream 1 never delivers again: idle after epochs 1 to 4 (done after 5), so W(4) = 300 and 0@150 in
# epoch 5 is late too. Late: 2.
NEVER_RESUMES = [item(1, 10), P, P, P, P, P]


@pytest.mark.parametrize(("stalled", "idle_timeout_ms", "late"), [
    (RESUMES, AT_EVERY_EPOCH_MS, 4), (NEVER_RESUMES, AT_EVERY_EPOCH_MS, 2),
    # The default timeout (60 s) outlasts the job: substream 1 holds the watermark back all along.
    (RESUMES, NEVER_IN_A_TEST_MS, 0)], ids=["resumes", "never-resumes", "never-idle"])
def test_an_idle_substream_stops_holding_the_watermark_back_until_it_delivers_again(
        jet: Any, stalled: list[Any], idle_timeout_ms: int, late: int) -> None:
    p = windowed(StreamInput([AHEAD, stalled], 1, 0), WindowDefinition.session(5))
    expected, _, metrics = run_and_compare(jet, p, idle_timeout_ms)
    assert metrics["late_events_dropped"] == late
    idle_after = [row[1] for row in expected.watermarks["source#0"].idle[:3]]
    assert idle_after == ([False, True, True] if idle_timeout_ms == AT_EVERY_EPOCH_MS else [False] * 3)


def test_idleness_travels_through_a_first_stage_to_the_second(jet: Any) -> None:
    """A two-stage tumbling window: the first stage of the stalled substream hears only that its sender
    is idle, so it is idle itself, and the second stage's watermark moves on with substream 0 alone.

    Worked out by hand from rules 5 and 8 (the reference has no two-stage window over idle substreams):
    substream 1 is idle after epochs 1 and 2, so the second stage's watermark is 101 after epoch 1 and
    stays at least that. Its first stage keeps frame [0, 25) (items 10 and 12) until its own watermark
    passes 25 in epoch 4, and frame [25, 50) (item 40) until the stream ends in that epoch: both reach the
    second stage behind its watermark, late, and count one each. Without idleness nothing is late."""
    ahead = [item(0, t) for t in (100, 101, 102, 103, 104)]
    stalled = [item(1, 10), P, P, item(1, 12), item(1, 40)]
    p = windowed(StreamInput([ahead, stalled], 1, 0), WindowDefinition.tumbling(25))
    got, metrics = run(jet, p, AT_EVERY_EPOCH_MS)
    assert [(r.start, r.end, r.result) for r in got] == [(100, 125, 5)]
    assert metrics["late_events_dropped"] == 2
    got, metrics = run(jet, p, NEVER_IN_A_TEST_MS)
    assert sorted((r.start, r.end, r.result) for r in got) == [(0, 25, 2), (25, 50, 1), (100, 125, 5)]
    assert metrics["late_events_dropped"] == 0


def in_order(substreams: int, items: int, step: int) -> list[list[dict[str, int]]]:
    return [[{"s": s, "k": i % 2, "v": i, "t": i * step} for i in range(items)] for s in range(substreams)]


@pytest.mark.parametrize(("window", "period_ms"), [
    ("sliding", AT_EVERY_EPOCH_MS), ("session", AT_EVERY_EPOCH_MS), ("tumbling", NEVER_IN_A_TEST_MS)])
def test_early_results_come_once_per_period(jet: Any, window: str, period_ms: int) -> None:
    """A period of 1 ms is due at every epoch end but the first (one period after the stage starts) and
    the last (which completes every window); one of 60 s at none of a short job's. Either way the final
    windows are the reference's, and every early result is the aggregate of what its window held then."""
    stream = StreamInput(in_order(2, 10, 5), 2, 0)  # 5 epochs, 10 ms of event time each
    p = windowed(stream, WINDOWS[window]().set_early_results_period(period_ms), keyed=True)
    expected, got, _ = run_and_compare(jet, p, NEVER_IN_A_TEST_MS)
    early_epochs = [b for b, results in enumerate(expected.early["window_aggregate#2"]) if results]
    assert early_epochs == ([1, 2, 3] if period_ms == AT_EVERY_EPOCH_MS else [])
    assert any(r.is_early for r in got) == (period_ms == AT_EVERY_EPOCH_MS)
