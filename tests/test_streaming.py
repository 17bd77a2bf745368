"""Streams on Spark: the epoch engine (issue 24, docs/streaming.md) against the brute-force stream reference.

Every expected output comes from :func:`stream_reference.run_stream_reference`, which cuts the same input
into the same epochs and applies the rules of docs/streaming.md by brute force; results compare as
multisets (a stream's windows come out in the order their epochs close them, not in one order).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples, run_job
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import run_stream_reference
from stream_strategies import StreamInput, stream_inputs

from jetspark import (AggregateOperations, JobConfig, JobStatus, Pipeline, ProcessingGuarantee, Sinks,
                      Sources, WindowDefinition)
from jetspark.errors import JobFailedError, PipelineDefinitionError

WINDOWS = {
    "sliding": WindowDefinition.sliding(40, 10),
    "tumbling": WindowDefinition.tumbling(25),
    "session": WindowDefinition.session(12),
}
OPERATIONS = {
    "counting": AggregateOperations.counting(),
    "summing": AggregateOperations.summing("v"),
    "max_by": AggregateOperations.max_by("v"),
}


def windowed(stream: StreamInput, window: str, keyed: bool, operation: str, then_map: bool = False,
             filtered: bool = True) -> Pipeline:
    """``stream`` through a filter (unless not ``filtered``: the window reads the source straight), maybe
    a map, and a window to the list ``out``."""
    p = Pipeline.create()
    stage = stream.source(p)
    if filtered:
        stage = stage.filter(lambda e: e["v"] != 7)
    if then_map:
        stage = stage.map(lambda e: {**e, "v": e["v"] * 2})
    if keyed:
        stage = stage.grouping_key("k")
    stage.window(WINDOWS[window]).aggregate(OPERATIONS[operation]).write_to(Sinks.list("out"))
    return p


def run_and_compare(jet: Any, p: Pipeline) -> tuple[dict[str, Any], list[Any]]:
    """Runs ``p`` on the epoch engine and asserts its output and late drops equal the reference's;
    returns the job's metrics and output."""
    expected = run_stream_reference(p)
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert as_multiset(got) == as_multiset(expected.outputs["out"])
    metrics = job.metrics()
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())
    return metrics, got


@settings(max_examples=examples(5))
@given(stream=stream_inputs(max_substreams=3, max_items=8), window=st.sampled_from(sorted(WINDOWS)),
       keyed=st.booleans(), operation=st.sampled_from(sorted(OPERATIONS)), steps=st.sampled_from(["none", "filter", "map"]))
def test_random_stream_windows_match_the_reference(jet: Any, stream: StreamInput, window: str, keyed: bool,
                                                   operation: str, steps: str) -> None:
    run_and_compare(jet, windowed(stream, window, keyed, operation, then_map=steps == "map", filtered=steps != "none"))


def in_order(substreams: int, items: int, step: int, skew_ms: int = 0) -> list[list[dict[str, int]]]:
    """``substreams`` in-order substreams of ``items`` items ``step`` ms apart, substream ``s`` starting
    ``s * skew_ms`` ms later."""
    return [[{"s": s, "k": i % 3, "v": i, "t": s * skew_ms + i * step} for i in range(items)] for s in range(substreams)]


@pytest.mark.parametrize("window", ["sliding", "session"])
def test_the_cut_of_the_micro_batches_does_not_change_the_final_windows(jet: Any, window: str) -> None:
    substreams = in_order(3, 14, 4)
    outputs = []
    for per_batch in (1, 7, 100):
        p = windowed(StreamInput(substreams, per_batch, 0), window, keyed=True, operation="summing")
        metrics, got = run_and_compare(jet, p)
        assert metrics["late_events_dropped"] == 0
        outputs.append(as_multiset(got))
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0]  # windows were emitted at all


def test_a_substream_100_s_ahead_loses_nothing(jet: Any) -> None:
    """Jet's coalescing: the watermark is the minimum over the substreams, so the one 100 s behind holds
    it back and none of its events is late; the windows are those of every event."""
    ahead = [{"s": 0, "k": i % 2, "v": 1, "t": 100_000 + i * 200} for i in range(20)]
    behind = [{"s": 1, "k": i % 2, "v": 1, "t": i * 200} for i in range(20)]
    p = windowed(StreamInput([ahead, behind], 5, 500), "sliding", keyed=True, operation="counting", filtered=False)
    expected_all = len(ahead + behind) * 4  # every event lies in size/slide = 4 windows
    metrics, got = run_and_compare(jet, p)
    assert metrics["late_events_dropped"] == 0
    assert sum(r.result for r in got) == expected_all


def test_an_event_behind_the_coalesced_watermark_is_dropped_and_counted(jet: Any) -> None:
    # Epoch 0 raises both substreams past 100; epoch 1 brings an event at 5, whose frame [0, 10) closed.
    substreams = [[{"s": 0, "k": 0, "v": 1, "t": 100}, {"s": 0, "k": 0, "v": 1, "t": 5}],
                  [{"s": 1, "k": 0, "v": 1, "t": 120}, {"s": 1, "k": 0, "v": 1, "t": 130}]]
    metrics, _ = run_and_compare(jet, windowed(StreamInput(substreams, 1, 0), "tumbling", keyed=True, operation="counting"))
    assert metrics["late_events_dropped"] == 1


def test_a_stream_job_returns_at_once_and_reports_its_epochs(jet: Any) -> None:
    stream = StreamInput(in_order(2, 6, 10), 2, 0)
    p = windowed(stream, "tumbling", keyed=False, operation="counting")
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(trigger_interval_ms=50))
    assert job.status in (JobStatus.STARTING, JobStatus.RUNNING)  # new_job did not wait for the stream
    job.join(timeout=300)
    assert job.status is JobStatus.COMPLETED
    metrics = job.metrics()
    assert metrics["epochs"] == 3  # 6 items per substream, 2 per epoch
    assert metrics["watermark"] == 2**63 - 1  # the final watermark: every substream is done
    assert metrics["vertices"]["list-sink"]["items_in"] == len(jet.get_list("out"))
    jet.clear_list("out")


def test_metrics_count_each_vertex_and_end_at_the_final_watermark(jet: Any) -> None:
    # 2 substreams of 10 items, v = 0..9: the filter drops v == 7 from each.
    p = windowed(StreamInput(in_order(2, 10, 10), 3, 0), "tumbling", keyed=False, operation="counting")
    expected = run_stream_reference(p)
    job, (got,) = run_job(jet, p, "out")
    vertices = job.metrics()["vertices"]
    assert len(got) == len(expected.outputs["out"])
    source, chain = vertices["itemsStream-source"], vertices["filter"]
    first, last, sink = vertices["windowAggregate-accumulate"], vertices["windowAggregate-combine"], vertices["list-sink"]
    assert (source["items_in"], source["items_out"]) == (0, 20)
    assert (chain["items_in"], chain["items_out"]) == (20, 18)
    assert first["items_in"] == 18 and last["items_out"] == len(got)
    assert (sink["items_in"], sink["items_out"]) == (len(got), len(got))
    assert last["items_in"] == first["items_out"]
    for figures in vertices.values():
        assert figures["watermark"] == 2**63 - 1  # every partition done
        assert "watermark_lag_ms" not in figures
    # State: the source's watermarks and the windows' frames; none in a stateless chain or a sink.
    assert source["state_bytes"] > 0 and first["state_bytes"] > 0 and last["state_bytes"] > 0
    assert chain["state_bytes"] == sink["state_bytes"] == 0


def test_metrics_count_a_stages_dead_letters_at_its_dead_letter_sink_not_among_its_items(jet: Any) -> None:
    # 2 substreams of 10 items, v = 0..9: 10 // (v % 4) fails on v = 0, 4, 8 of each, 6 dead letters.
    p = Pipeline.create()
    (StreamInput(in_order(2, 10, 10), 3, 0).source(p).map(lambda e: 10 // (e["v"] % 4)).set_name("divide")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    job, (got, letters) = run_job(jet, p, "out", "bad")
    vertices = job.metrics()["vertices"]
    assert (len(got), len(letters)) == (14, 6)
    assert (vertices["divide"]["items_in"], vertices["divide"]["items_out"]) == (20, 14)
    assert vertices["list-sink"]["items_in"] == vertices["list-sink"]["items_out"] == 14
    assert vertices["divide-dead-letter"]["items_in"] == vertices["divide-dead-letter"]["items_out"] == 6


def test_a_noop_sink_counts_every_window_it_drops(jet: Any) -> None:
    stream = StreamInput(in_order(2, 10, 10), 3, 0)
    expected = run_stream_reference(windowed(stream, "sliding", keyed=True, operation="counting"))
    p = Pipeline.create()
    stream.source(p).filter(lambda e: e["v"] != 7).grouping_key("k").window(WINDOWS["sliding"]).aggregate(
        OPERATIONS["counting"]).write_to(Sinks.noop())
    job, _ = run_job(jet, p)
    assert job.status is JobStatus.COMPLETED
    assert job.metrics()["items_written"] == len(expected.outputs["out"])


def test_metrics_while_a_stream_runs_show_an_epochs_watermark_and_its_lag(jet: Any, capsys: Any) -> None:
    stream = StreamInput(in_order(2, 12, 1_000), 2, 500)
    p = windowed(stream, "tumbling", keyed=False, operation="counting")
    (marks,) = run_stream_reference(p).watermarks.values()  # the one source's
    coalesced = marks.coalesced
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(name="watched", trigger_interval_ms=400, progress_interval_ms=100))
    seen = []
    while job.status is not JobStatus.COMPLETED and job.status is not JobStatus.FAILED:
        before = int(time.time() * 1000)
        figures = job.metrics().get("vertices", {}).get("itemsStream-source", {})
        after = int(time.time() * 1000)
        if "watermark_lag_ms" in figures:
            watermark = figures["watermark"]
            assert watermark in coalesced[:-1]  # W(b) of an epoch b but the last (then it is infinite)
            assert before - watermark <= figures["watermark_lag_ms"] <= after - watermark
            seen.append(watermark)
        time.sleep(0.05)
    job.join(timeout=300)
    assert seen and seen == sorted(seen)  # seen at least once, and never going back
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[jetspark watched] epoch")]
    assert progress and all(f"read {n:,} " not in line for line in progress for n in range(25, 100))  # 24 items
    assert any(f"watermark {w} (lag " in line for line in progress for w in seen)
    jet.clear_list("out")


def test_cancel_stops_a_stream_job(jet: Any) -> None:
    stream = StreamInput(in_order(1, 50, 10), 1, 0)
    job = jet.new_job(windowed(stream, "tumbling", keyed=False, operation="counting"), JobConfig(trigger_interval_ms=2_000))
    job.cancel()
    with pytest.raises(Exception, match="cancelled"):
        job.join(timeout=120)
    assert job.status is JobStatus.CANCELLED
    jet.clear_list("out")


@pytest.mark.parametrize("timed", [True, False])
def test_a_stream_without_windows_delivers_every_item_once(jet: Any, timed: bool) -> None:
    substreams = in_order(3, 5, 10)
    p = Pipeline.create()
    source = p.read_from(Sources.items_stream(*substreams, items_per_batch=2))
    stage = source.with_timestamps("t", allowed_lag_ms=0) if timed else source.without_timestamps()
    stage.flat_map(lambda e: [e["v"]] * (e["s"] + 1)).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert sorted(got) == sorted(e["v"] for sub in substreams for e in sub for _ in range(e["s"] + 1))


@pytest.mark.parametrize("step", ["map", "map_stateful"])
def test_a_failing_step_fails_the_stream_job_naming_its_stage(jet: Any, step: str) -> None:
    p = Pipeline.create()
    source = StreamInput(in_order(2, 4, 10), 1, 0).source(p)
    if step == "map":
        stage = source.map(lambda e: 1 // (e["v"] - 2))
    else:  # its state kept from epoch to epoch until it fails
        stage = source.map_stateful(lambda: 0, lambda n, e: (n + 1 // (e["v"] - 2), n))
    stage.set_name("divide").write_to(Sinks.list("out"))
    job = jet.new_job(p)
    with pytest.raises(JobFailedError, match="divide") as failure:
        job.join(timeout=300)
    assert failure.value.stage == "divide"
    assert job.status is JobStatus.FAILED
    jet.clear_list("out")


def test_early_results_come_at_epoch_ends_and_the_final_windows_stay_those_of_the_reference(jet: Any) -> None:
    """A window still open when an epoch ends is reported early (``is_early=True``) with what it holds so
    far; the complete results are the reference's."""
    substreams = in_order(2, 12, 5)  # epochs of 2 items per substream, 10 ms of event time each
    p = Pipeline.create()
    (StreamInput(substreams, 2, 0).source(p).grouping_key("k")
     .window(WindowDefinition.sliding(40, 10).set_early_results_period(1))
     .aggregate(AggregateOperations.counting()).write_to(Sinks.list("out")))
    expected = run_stream_reference(p)
    job, (got,) = run_job(jet, p, "out")
    final = [r for r in got if not r.is_early]
    early = [r for r in got if r.is_early]
    assert as_multiset(final) == as_multiset(expected.outputs["out"])
    assert early  # epochs end while windows of 40 ms are open
    complete = {(r.start, r.end, r.key): r.result for r in final}
    for r in early:  # a partial count of a window that later completes, never more than its final count
        assert 0 < r.result <= complete[(r.start, r.end, r.key)]


def failing_once(marker: str, value: int) -> Callable[[dict[str, int]], dict[str, int]]:
    """A step that raises on the first item of ``value`` it sees while the file ``marker`` does not exist
    (it creates it): a failure that a replay of the same epoch does not meet again."""

    def step(e: dict[str, int]) -> dict[str, int]:
        if e["v"] == value and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("injected once")
        return e

    return step


@pytest.mark.parametrize("sink", ["list", "files", "foreach_batch"])
def test_an_epoch_replayed_after_a_failure_is_written_once(jet: Any, sink: str, tmp_path: Any) -> None:
    """Epoch 1 (items 2 and 3 of each substream) fails after the sink under test wrote it: another sink's
    branch raises. A new job on the same checkpoint_dir replays epoch 1, and the sink holds each item once:
    the list and the files replace what the epoch wrote; the foreach_batch function gets the same batch id
    again."""
    substreams = in_order(2, 6, 10)  # two items a substream an epoch: epochs 0, 1, 2
    batches: dict[int, list[tuple[int, int]]] = {}
    files = str(tmp_path / "files")

    def build() -> Pipeline:
        p = Pipeline.create()
        source = StreamInput(substreams, 2, 0).source(p)
        values = source.map(lambda e: {"s": e["s"], "v": e["v"]})
        if sink == "list":
            values.write_to(Sinks.list("out"))
        elif sink == "files":
            values.write_to(Sinks.files(files, format="json"))
        else:
            values.write_to(Sinks.foreach_batch(
                lambda df, batch_id: batches.__setitem__(batch_id, [(r.s, r.v) for r in df.collect()])))
        source.map(failing_once(str(tmp_path / "failed"), 3)).write_to(Sinks.noop())
        return p

    def written() -> list[tuple[int, int]]:
        if sink == "list":
            return [(e["s"], e["v"]) for e in jet.get_list("out")]
        if sink == "files":
            return [(r.s, r.v) for r in jet.spark.read.json(files).collect()]
        return [item for epoch in batches.values() for item in epoch]

    jet.clear_list("out")
    config = JobConfig(checkpoint_dir=str(tmp_path / "checkpoint"))
    first = jet.new_job(build(), config)
    with pytest.raises(JobFailedError, match="injected once"):
        first.join(timeout=300)
    before = written()
    assert {(s, 2) for s in (0, 1)} <= set(before)  # epoch 1 was written before it failed
    second = jet.new_job(build(), config)
    second.join(timeout=300)
    assert sorted(written()) == sorted((e["s"], e["v"]) for sub in substreams for e in sub)
    if sink == "foreach_batch":
        assert sorted(batches) == [0, 1, 2]
    jet.clear_list("out")


@pytest.mark.parametrize("sink", ["files", "foreach_batch"])
def test_records_a_stream_s_rows_sink_cannot_take_go_to_its_dead_letter_sink(jet: Any, sink: str, tmp_path: Any) -> None:
    """Every fourth item's ``n`` is text, which the sink's schema (``n BIGINT``) does not take: those are
    the dead letters of the sink stage, epoch after epoch, and the sink writes the others."""
    items = [[{"n": i if i % 4 else str(i)} for i in range(s, 24, 2)] for s in range(2)]
    files, batches = str(tmp_path / "files"), []
    p = Pipeline.create()
    stage = p.read_from(Sources.items_stream(*items, items_per_batch=3)).without_timestamps()
    target = (Sinks.files(files, format="json", schema="n BIGINT") if sink == "files"
              else Sinks.foreach_batch(lambda df, _: batches.extend(r.n for r in df.collect()), schema="n BIGINT"))
    stage.write_to(target).set_name("rows").on_error(Sinks.dead_letter("bad"))
    job, (letters,) = run_job(jet, p, "bad")
    assert job.status is JobStatus.COMPLETED
    written = [r.n for r in jet.spark.read.json(files).collect()] if sink == "files" else batches
    assert sorted(written) == [i for i in range(24) if i % 4]
    assert sorted(letter.record["n"] for letter in letters) == sorted(str(i) for i in range(0, 24, 4))
    assert {letter.stage for letter in letters} == {"rows"}


def test_a_console_sink_prints_each_item_of_a_stream(jet: Any, capsys: Any) -> None:
    p = Pipeline.create()
    StreamInput(in_order(2, 5, 10), 2, 0).source(p).map(lambda e: f"item {e['s']}-{e['v']}").write_to(Sinks.console())
    job, _ = run_job(jet, p)
    assert job.status is JobStatus.COMPLETED
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("item ")]
    assert sorted(printed) == sorted(f"item {s}-{v}" for s in range(2) for v in range(5))


def test_exactly_once_refuses_a_console_sink_naming_it(jet: Any) -> None:
    p = Pipeline.create()
    StreamInput(in_order(1, 3, 10), 1, 0).source(p).write_to(Sinks.console()).set_name("show")
    job = jet.new_job(p, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE))
    with pytest.raises(PipelineDefinitionError, match="show.*exactly-once-sink") as failure:
        job.join(timeout=120)
    assert failure.value.stage == "show" and failure.value.rule == "exactly-once-sink"


def test_a_checkpoint_written_for_another_plan_is_refused_saying_what_differs(jet: Any, tmp_path: Any) -> None:
    """The same plan on a checkpoint whose stream completed completes at once, writing nothing again; another
    plan is refused."""
    config = JobConfig(checkpoint_dir=str(tmp_path / "checkpoint"))
    stream = StreamInput(in_order(1, 4, 10), 2, 0)
    jet.clear_list("out")
    written = jet.new_job(windowed(stream, "tumbling", keyed=True, operation="counting"), config)
    written.join(timeout=300)
    assert written.status is JobStatus.COMPLETED
    windows = jet.get_list("out")
    assert windows
    again = jet.new_job(windowed(stream, "tumbling", keyed=True, operation="counting"), config)
    again.join(timeout=120)
    assert again.status is JobStatus.COMPLETED and jet.get_list("out") == windows
    other = jet.new_job(windowed(stream, "session", keyed=True, operation="counting"), config)
    with pytest.raises(JobFailedError, match="written for another job") as failure:
        other.join(timeout=300)
    assert "tumbling" in str(failure.value) and "session" in str(failure.value)
    jet.clear_list("out")


def test_a_files_sink_a_stream_cannot_write_epoch_by_epoch_fails_when_the_job_starts_naming_it(jet: Any,
                                                                                             tmp_path: Any) -> None:
    """docs/streaming.md, "Sinks": a stream's files sink appends each epoch's files; another mode is refused.
    (Its dead letters run: test_records_a_stream_s_rows_sink_cannot_take_go_to_its_dead_letter_sink.)"""
    p = Pipeline.create()
    sink = Sinks.files(str(tmp_path / "out"), format="json", mode="overwrite")
    StreamInput(in_order(1, 3, 10), 1, 0).source(p).write_to(sink).set_name("files")
    job = jet.new_job(p)
    with pytest.raises(Exception, match="files") as failure:
        job.join(timeout=120)
    assert "does not run this yet" in str(failure.value)
    assert job.status is JobStatus.FAILED
