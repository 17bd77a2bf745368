"""Several stream sources in one job on the Spark epoch engine (docs/streaming.md, "Several stream
sources"): merged, each cut by its own ``items_per_batch``, against the brute-force stream reference
(rule 10 of :mod:`stream_reference`) and against counts taken straight from the inputs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from conftest import examples, run_job
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import run_stream_reference
from stream_strategies import StreamInput, stream_inputs
from test_streaming_sources import SCHEMA, files_stream, run_until

from jetspark import AggregateOperations, JobStatus, Pipeline, Sinks, Sources, WindowDefinition

WINDOWS = {
    "sliding": WindowDefinition.sliding(40, 10),
    "tumbling": WindowDefinition.tumbling(25),
    "session": WindowDefinition.session(12),
}
OPERATIONS = {"counting": AggregateOperations.counting(), "summing": AggregateOperations.summing("v")}


def tagged(stream: StreamInput, source: str) -> StreamInput:
    """``stream`` with each item's source as ``"src"``."""
    return StreamInput([[{**e, "src": source} for e in sub] for sub in stream.substreams], stream.items_per_batch,
                       stream.allowed_lag_ms)


def run_and_compare(jet: Any, p: Pipeline, *lists: str) -> dict[str, Any]:
    """Runs the finite stream ``p`` and asserts that each list and the late drops are the reference's;
    returns the job's metrics."""
    expected = run_stream_reference(p)
    job, got = run_job(jet, p, *lists)
    assert job.status is JobStatus.COMPLETED
    for name, items in zip(lists, got):
        assert as_multiset(items) == as_multiset(expected.outputs[name]), name
    metrics = job.metrics()
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())
    return metrics


@settings(max_examples=examples(4))
@given(first=stream_inputs(max_substreams=2, max_items=6), second=stream_inputs(max_substreams=2, max_items=6),
       window=st.sampled_from(sorted(WINDOWS)), keyed=st.booleans(), operation=st.sampled_from(sorted(OPERATIONS)))
def test_random_windows_over_two_merged_sources_match_the_reference(jet: Any, first: StreamInput, second: StreamInput,
                                                                     window: str, keyed: bool, operation: str) -> None:
    p = Pipeline.create()
    stage = tagged(first, "a").source(p).merge(tagged(second, "b").source(p)).filter(lambda e: e["v"] != 7)
    if keyed:
        stage = stage.grouping_key("k")
    stage.window(WINDOWS[window]).aggregate(OPERATIONS[operation]).write_to(Sinks.list("out"))
    run_and_compare(jet, p, "out")


def test_a_source_far_ahead_holds_back_nothing_of_a_slower_one(jet: Any) -> None:
    """Two sources, one 100 s ahead in event time and cut five times coarser, with an allowed lag of
    0.5 s: their merge coalesces both, so no event of the slow one is late, and each second's count is
    the count of the inputs' events in it."""
    slow = [[{"t": i * 100} for i in range(12)]]
    fast = [[{"t": 100_000 + i * 100} for i in range(12)]]
    p = Pipeline.create()
    a = p.read_from(Sources.items_stream(*slow, items_per_batch=1)).with_timestamps("t", allowed_lag_ms=500)
    b = p.read_from(Sources.items_stream(*fast, items_per_batch=5)).with_timestamps("t", allowed_lag_ms=500)
    a.merge(b).window(WindowDefinition.tumbling(1_000)).aggregate(AggregateOperations.counting()).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert job.metrics()["late_events_dropped"] == 0
    assert {(w.start, w.result) for w in got} == set(Counter(e["t"] // 1_000 * 1_000 for e in slow[0] + fast[0]).items())
    assert len(got) == len({w.start for w in got})


def test_sources_into_branches_of_their_own_each_keep_their_state(jet: Any) -> None:
    """Two sources, each into its own branch: one into a keyed rolling sum, the other straight into a
    list; each substream one key, so the running sums are the reference's whatever the interleaving."""
    first = StreamInput([[{"k": s, "v": v, "t": v} for v in range(s, 12, 2)] for s in range(2)], 2, 0)
    second = StreamInput([[{"k": 9, "v": v, "t": v} for v in range(5)]], 3, 0)
    p = Pipeline.create()
    first.source(p).grouping_key("k").rolling_aggregate(AggregateOperations.summing("v")).write_to(Sinks.list("sums"))
    second.source(p).map(lambda e: e["v"]).write_to(Sinks.list("items"))
    run_and_compare(jet, p, "sums", "items")


def test_a_streaming_dataframe_merged_with_an_items_stream_gives_both_their_items(jet: Any, tmp_path: Any) -> None:
    """A files stream (a new file in each of the first epochs, then none) merged with an items stream that
    outlasts it: Spark leaves the files source out of the later micro-batches, and every row and item
    arrives."""
    rows = [[{"s": 0, "k": 1, "v": b, "t": b}] for b in range(2)]
    df = files_stream(jet, str(tmp_path), rows, SCHEMA)
    items = [{"s": 5, "k": 2, "v": 10 + i, "t": i} for i in range(4)]
    p = Pipeline.create()
    from_files = p.read_from(Sources.dataframe(df)).without_timestamps().map(lambda r: r["v"])
    from_items = p.read_from(Sources.items_stream(items, items_per_batch=1)).without_timestamps().map(lambda e: e["v"])
    from_files.merge(from_items).write_to(Sinks.list("out"))
    metrics, (got,), _, _ = run_until(jet, p, 6, ("out",))
    assert sorted(got) == [0, 1, 10, 11, 12, 13]
    assert metrics["epochs"] >= 6
