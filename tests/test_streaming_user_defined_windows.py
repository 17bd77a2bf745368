"""Windows of user-defined operations (``AggregateOperation.of``, alone or in an ``all_of``) on streams:
Python runs them, their frames or sessions kept from one epoch to the next (docs/streaming.md, "Windows").

Every expected output comes from :func:`stream_reference.run_stream_reference`: the final windows, the early
results of each epoch (a period of 1 ms: at every epoch's end but the first and the last), the late drops and
the dead letters, late events among them.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import AT_EVERY_EPOCH_MS, run_stream_reference
from stream_strategies import StreamInput, paused_stream_inputs, stream_inputs

from jetspark import AggregateOperation, AggregateOperations, JobConfig, JobStatus, Pipeline, Sinks, WindowDefinition

WINDOWS = {
    "sliding": lambda: WindowDefinition.sliding(40, 10),
    "tumbling": lambda: WindowDefinition.tumbling(25),
    "session": lambda: WindowDefinition.session(12),
}


def squares(deduct: bool = False) -> AggregateOperation:
    return AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"] * e["v"], combine=lambda a, b: a + b,
                                 deduct=(lambda a, b: a - b) if deduct else None)


OPERATIONS = {
    "squares": squares,
    "deducting squares": lambda: squares(deduct=True),
    # No combine: a tumbling window only (rule window-needs-combine).
    "values": lambda: AggregateOperation.of(list, lambda a, e: [*a, e["v"]], export=lambda a: tuple(sorted(a))),
    "all_of": lambda: AggregateOperations.all_of(AggregateOperations.counting(), squares(),
                                                 AggregateOperations.summing("v")),
}


def windowed(stream: StreamInput, window: str, operation: AggregateOperation, keyed: bool, early: bool) -> tuple[Pipeline, Any]:
    """``stream`` through a filter into ``window`` of ``operation`` (with early results at every epoch's end
    where ``early``), to the list ``out``; returns the pipeline and the window's stage."""
    p = Pipeline.create()
    stage = stream.source(p).filter(lambda e: e["v"] != 7)
    if keyed:
        stage = stage.grouping_key("k")
    definition = WINDOWS[window]()
    if early:
        definition = definition.set_early_results_period(AT_EVERY_EPOCH_MS)
    windowed_stage = stage.window(definition).aggregate(operation).set_name("window")
    windowed_stage.write_to(Sinks.list("out"))
    return p, windowed_stage


def run_and_compare(jet: Any, p: Pipeline, dead_letters: str | None = None, idle_timeout_ms: int = 60_000) -> dict[str, Any]:
    """Runs ``p`` to completion; asserts that its final windows, early results, late drops and (where
    named) dead letters are the reference's; returns the job's metrics."""
    expected = run_stream_reference(p, partition_idle_timeout_ms=idle_timeout_ms)
    lists = ["out"] + ([dead_letters] if dead_letters else [])
    for name in lists:
        jet.clear_list(name)
    job = jet.new_job(p, JobConfig(partition_idle_timeout_ms=idle_timeout_ms))
    job.join(timeout=300)
    assert job.status is JobStatus.COMPLETED
    got = jet.get_list("out")
    assert as_multiset([r for r in got if not r.is_early]) == as_multiset(expected.outputs["out"])
    assert as_multiset([r for r in got if r.is_early]) == as_multiset(
        [r for stage in expected.early.values() for epoch in stage for r in epoch])
    if dead_letters:
        letters = [(d.record, d.stage, d.error.split(":")[0]) for d in jet.get_list(dead_letters)]
        assert as_multiset(letters) == as_multiset(expected.outputs[f"dead_letter:{dead_letters}"])
    for name in lists:
        jet.clear_list(name)
    metrics = job.metrics()
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())
    return metrics


@settings(max_examples=examples(5))
@given(stream=stream_inputs(max_substreams=3, max_items=8), window=st.sampled_from(sorted(WINDOWS)),
       operation=st.sampled_from(sorted(OPERATIONS)), keyed=st.booleans(), early=st.booleans())
def test_random_user_defined_windows_match_the_reference(jet: Any, stream: StreamInput, window: str, operation: str,
                                                         keyed: bool, early: bool) -> None:
    if operation == "values":
        window = "tumbling"
    p, _ = windowed(stream, window, OPERATIONS[operation](), keyed, early)
    run_and_compare(jet, p)


@settings(max_examples=examples(3))
@given(stream=paused_stream_inputs(max_items=6), window=st.sampled_from(sorted(WINDOWS)), keyed=st.booleans(),
       m=st.integers(3, 5))
def test_late_events_and_failing_records_of_a_user_defined_window_are_its_dead_letters(
        jet: Any, stream: StreamInput, window: str, keyed: bool, m: int) -> None:
    """A user-defined sum that fails on the values ``v % m == 0``, its failures routed to a dead-letter
    sink: those records and the late events are its dead letters (``LateEvent``), and a window's result
    leaves the failed records out; some substreams stall and go idle (a 1 ms idle timeout)."""
    failing = AggregateOperation.of(lambda: 0, lambda a, e: a + 60 // (e["v"] % m), combine=lambda a, b: a + b)
    p, stage = windowed(stream, window, failing, keyed, early=True)
    stage.on_error(Sinks.dead_letter("bad"))
    run_and_compare(jet, p, dead_letters="bad", idle_timeout_ms=AT_EVERY_EPOCH_MS)


@pytest.mark.parametrize("window", sorted(WINDOWS))
def test_a_long_skewed_stream_gives_the_references_windows(jet: Any, window: str) -> None:
    """Three substreams, one 100 s ahead, every fifth item of it and every fourth of another out of order,
    cut into 10 epochs: windows close epoch after epoch while later ones still need their frames."""
    substreams = [[{"s": 0, "k": i % 3, "v": i, "t": 100_000 + i * 7 - (30 if i % 5 == 4 else 0)} for i in range(30)],
                  [{"s": 1, "k": i % 3, "v": i, "t": i * 9} for i in range(30)],
                  [{"s": 2, "k": i % 3, "v": i, "t": 50 + i * 5 - (40 if i % 4 == 3 else 0)} for i in range(25)]]
    p, _ = windowed(StreamInput(substreams, 3, 5), window, squares(), keyed=True, early=False)
    run_and_compare(jet, p)


def test_a_window_behind_the_watermark_drops_its_late_event_and_counts_it(jet: Any) -> None:
    """Hand-worked: one substream, one item per epoch, no allowed lag. Items at 3, 30 and 12: after the
    epoch of 30 the watermark is 30, which closes the tumbling window [0, 25); 12 belongs there, so it is
    late. The windows: [0, 25) with 3 alone, [25, 50) with 30."""
    items = [{"s": 0, "k": 0, "v": v, "t": t} for v, t in ((2, 3), (3, 30), (4, 12))]
    p, _ = windowed(StreamInput([items], 1, 0), "tumbling", squares(), keyed=False, early=False)
    run_stream_expected = run_stream_reference(p)
    assert sorted((r.start, r.end, r.result) for r in run_stream_expected.outputs["out"]) == [(0, 25, 4), (25, 50, 9)]
    metrics = run_and_compare(jet, p)
    assert metrics["late_events_dropped"] == 1
