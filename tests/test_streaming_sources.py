"""Stream sources and event time on the Spark epoch engine (issue 24, docs/streaming.md "Sources"):
``Sources.rate_stream``, ``Sources.dataframe`` of a streaming DataFrame (one substream, or one per value of
a ``substream`` column), ``with_native_timestamps`` and ``with_ingestion_timestamps``.

A streaming DataFrame here is a directory of JSON files read with ``maxFilesPerTrigger=1``: file ``b`` is
epoch ``b``, and :func:`stream_reference.run_stream_reference` gets the same rows as explicit epochs. Such a
stream does not end, so each job is cancelled once it has run every file's epoch, and only the windows its
watermark passed by then are compared. The rate stream and ingestion time depend on the wall clock: their
tests check what the spec fixes exactly (sequences, the timestamps of the rate stream's items, window
counts against the events written, watermarks that never go back).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import AT_EVERY_EPOCH_MS, NEVER_IN_A_TEST_MS, run_stream_reference
from stream_strategies import StreamInput, stream_inputs

from jetspark import (AggregateOperations, JobConfig, JobStatus, Pipeline, SimpleEvent, Sinks, Sources,
                      WindowDefinition)

SCHEMA = "s INT, k INT, v INT, t BIGINT"


def wait_for(condition: Callable[[], bool], timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the stream job did not get there in time"
        time.sleep(0.05)


def run_until(jet: Any, p: Pipeline, epochs: int, sinks: tuple[str, ...], trigger_interval_ms: int = 0,
              watch: Callable[[dict[str, Any]], None] = lambda metrics: None,
              idle_timeout_ms: int = NEVER_IN_A_TEST_MS) -> tuple[dict[str, Any], list[list[Any]], float, float]:
    """Runs the unending stream pipeline ``p`` until it has done ``epochs`` epochs, then cancels it; its
    metrics then, what each sink got, and the wall clock (ms) before it started and after it ended.
    ``watch`` sees the metrics each time they are read."""
    for name in sinks:
        jet.clear_list(name)
    before = time.time() * 1000
    job = jet.new_job(p, JobConfig(trigger_interval_ms=trigger_interval_ms, partition_idle_timeout_ms=idle_timeout_ms))

    def done() -> bool:
        metrics = job.metrics()
        watch(metrics)
        return job.status is JobStatus.FAILED or metrics.get("epochs", 0) >= epochs

    wait_for(done)
    metrics = job.metrics()
    job.cancel()
    with pytest.raises(Exception, match="cancelled"):
        job.join(timeout=120)
    after = time.time() * 1000
    assert job.status is JobStatus.CANCELLED
    got = [jet.get_list(name) for name in sinks]
    for name in sinks:
        jet.clear_list(name)
    return metrics, got, before, after


def run_epochs(jet: Any, p: Pipeline, epochs: int, idle_timeout_ms: int = NEVER_IN_A_TEST_MS) -> tuple[dict[str, Any], list[Any]]:
    """:func:`run_until` a files stream has run ``epochs`` epochs, one a file; its metrics and list ``out``."""
    metrics, (got,), _, _ = run_until(jet, p, epochs, ("out",), idle_timeout_ms=idle_timeout_ms)
    assert metrics["epochs"] == epochs  # one file per epoch, and no epoch without a file
    return metrics, got


def files_stream(jet: Any, directory: str, epochs: list[list[dict[str, Any]]], schema: str = SCHEMA) -> Any:
    """A streaming DataFrame over one JSON file per epoch (written now, read oldest first, one a trigger)."""
    for b, rows in enumerate(epochs):
        path = os.path.join(directory, f"epoch-{b:04d}.json")
        with open(path, "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
        os.utime(path, (1_000_000 + b * 10, 1_000_000 + b * 10))  # the file source reads by modification time
    return jet.spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(directory)


def cut(stream: StreamInput) -> list[list[dict[str, int]]]:
    """The rows of each epoch as ``items_stream`` would cut the same substreams (rule 1)."""
    k = stream.items_per_batch
    count = max(1, *(-(-len(s) // k) for s in stream.substreams))
    return [[item for s in stream.substreams for item in s[b * k:(b + 1) * k]] for b in range(count)]


def as_rows(epochs: list[list[dict[str, Any]]]) -> list[list[Any]]:
    from pyspark.sql import Row

    return [[Row(**row) for row in rows] for rows in epochs]


def dataframe_pipeline(df: Any, substream: str | None, lag: int, window: Any, keyed: bool,
                       operation: Any = None) -> Pipeline:
    p = Pipeline.create()
    stage = (p.read_from(Sources.dataframe(df, substream=substream)).with_timestamps("t", allowed_lag_ms=lag)
             .filter(lambda r: r["v"] != 7))
    if keyed:
        stage = stage.grouping_key("k")
    stage.window(window).aggregate(operation or AggregateOperations.summing("v")).write_to(Sinks.list("out"))
    return p


WINDOWS = {"sliding": WindowDefinition.sliding(40, 10), "tumbling": WindowDefinition.tumbling(25),
           "session": WindowDefinition.session(12)}


@settings(max_examples=examples(2), deadline=None)
@given(stream=stream_inputs(max_substreams=3, max_items=5), window=st.sampled_from(sorted(WINDOWS)),
       keyed=st.booleans(), by_substream=st.booleans(),
       idle_timeout_ms=st.sampled_from([AT_EVERY_EPOCH_MS, NEVER_IN_A_TEST_MS]))
def test_random_files_streams_match_the_reference_cut_by_their_files(jet: Any, stream: StreamInput, window: str,
                                                                    keyed: bool, by_substream: bool,
                                                                    idle_timeout_ms: int) -> None:
    """Substreams of different lengths: with the 1 ms timeout, one whose rows ran out (or a file without
    it) is idle, and the others' watermark moves on without it."""
    epochs = cut(stream)
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        df = files_stream(jet, directory, epochs)
        p = dataframe_pipeline(df, "s" if by_substream else None, stream.allowed_lag_ms, WINDOWS[window], keyed)
        expected = run_stream_reference(p, epochs=as_rows(epochs), partition_idle_timeout_ms=idle_timeout_ms)
        metrics, got = run_epochs(jet, p, len(epochs), idle_timeout_ms)
    assert as_multiset(got) == as_multiset(expected.outputs["out"])
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())


def test_each_substream_value_has_its_own_watermark(jet: Any) -> None:
    """Device "ahead" runs 100 s ahead of device "behind" in event time, in the same files, with a lag of
    0.5 s. Per device, the watermark is the least of theirs and nothing is late; as one substream, the
    watermark follows "ahead" and drops "behind"'s events."""
    epochs = [[{"s": s, "k": i % 2, "v": 1, "t": s * 100_000 + (b * 5 + i) * 200} for s in (1, 0) for i in range(5)]
              for b in range(3)]
    late = {}
    for substream in ("s", None):
        with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
            df = files_stream(jet, directory, epochs)
            p = dataframe_pipeline(df, substream, 500, WindowDefinition.sliding(2_000, 500), keyed=True,
                                   operation=AggregateOperations.counting())
            expected = run_stream_reference(p, epochs=as_rows(epochs))
            metrics, got = run_epochs(jet, p, len(epochs))
        assert as_multiset(got) == as_multiset(expected.outputs["out"])
        assert got  # the windows of "behind" that its own watermark passed
        late[substream] = metrics["late_events_dropped"]
        assert late[substream] == sum(expected.late_dropped.values())
    assert late["s"] == 0
    assert late[None] == 10  # every event of "behind" after the first epoch


# Device 0 delivers in every file, 1 000 ms on each time; device 1 only in files 0 and 3 (lag 0, tumbling
# 1 000 ms windows, counting per device). Rules 3 and 5 of the reference, by hand:
# - 60 s timeout: device 1 holds W at 500 until file 3, where W is 3 200 (its row then). Nothing is late:
#   device 1's [0, 1000) counts 500 and 700.
# - 1 ms timeout: device 1 is idle after files 1 and 2, so W follows device 0 (1 500, then 2 500). In
#   file 3 it is active again, and its row at 700 is late: its window closed at 1 000 <= 2 000.
IDLE_FILES = [[{"s": 0, "k": 0, "v": 1, "t": 500}, {"s": 1, "k": 1, "v": 1, "t": 500}],
              [{"s": 0, "k": 0, "v": 1, "t": 1_500}],
              [{"s": 0, "k": 0, "v": 1, "t": 2_500}],
              [{"s": 0, "k": 0, "v": 1, "t": 3_500}, {"s": 1, "k": 1, "v": 1, "t": 700},
               {"s": 1, "k": 1, "v": 1, "t": 3_200}]]


@pytest.mark.parametrize("idle_timeout_ms", [AT_EVERY_EPOCH_MS, NEVER_IN_A_TEST_MS])
def test_a_quiet_substream_value_is_idle_after_the_timeout_and_active_again_behind(jet: Any,
                                                                                   idle_timeout_ms: int) -> None:
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        p = dataframe_pipeline(files_stream(jet, directory, IDLE_FILES), "s", 0, WindowDefinition.tumbling(1_000),
                               keyed=True, operation=AggregateOperations.counting())
        expected = run_stream_reference(p, epochs=as_rows(IDLE_FILES), partition_idle_timeout_ms=idle_timeout_ms)
        metrics, got = run_epochs(jet, p, len(IDLE_FILES), idle_timeout_ms)
    idle = idle_timeout_ms == AT_EVERY_EPOCH_MS
    assert sorted((r.start, r.key, r.result) for r in got) == [(0, 0, 1), (0, 1, 1 if idle else 2), (1_000, 0, 1),
                                                               (2_000, 0, 1)]
    assert metrics["late_events_dropped"] == (1 if idle else 0)
    assert as_multiset(got) == as_multiset(expected.outputs["out"])
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())


def test_native_timestamps_of_a_dataframe_come_from_its_timestamp_column(jet: Any) -> None:
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    epochs = [[{"timestamp": (start + datetime.timedelta(milliseconds=ms)).isoformat(), "k": ms % 3, "v": ms}
               for ms in range(b * 50, b * 50 + 50, 7)] for b in range(3)]
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        df = files_stream(jet, directory, epochs, schema="k INT, timestamp TIMESTAMP, v INT")
        rows = jet.spark.read.schema("k INT, timestamp TIMESTAMP, v INT").json(directory).collect()
        by_file = [[r for r in rows if (r["v"] // 50) == b] for b in range(3)]  # file b holds v in [50b, 50b + 50)
        p = Pipeline.create()
        (p.read_from(Sources.dataframe(df)).with_native_timestamps(0).grouping_key("k")
         .window(WindowDefinition.tumbling(20)).aggregate(AggregateOperations.summing("v")).write_to(Sinks.list("out")))
        expected = run_stream_reference(p, epochs=by_file)
        metrics, got = run_epochs(jet, p, len(epochs))
    assert as_multiset(got) == as_multiset(expected.outputs["out"])
    assert {r.start for r in got} >= {int(start.timestamp() * 1000) + 20 * i for i in range(6)}  # in ms, as the rows say


def test_native_timestamps_need_a_timestamp_column(jet: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        df = files_stream(jet, directory, [[{"s": 0, "k": 0, "v": 1, "t": 5}]])
        p = Pipeline.create()
        p.read_from(Sources.dataframe(df)).with_native_timestamps(0).write_to(Sinks.list("out"))
        job = jet.new_job(p)
        with pytest.raises(Exception, match="column 'timestamp'"):
            job.join(timeout=120)
    assert job.status is JobStatus.FAILED


def rate_events(events: list[SimpleEvent], rate: int, partitions: int) -> dict[int, list[SimpleEvent]]:
    """The events of each substream, by the spec (docs/streaming.md "Sources"): the stream's item ``g`` is
    due at ``start + floor(g * 1000 / rate)``, in substream ``g mod partitions`` with sequence
    ``g div partitions``; with ``rate`` dividing 1000, ``g`` follows from the timestamp."""
    start = min(e.timestamp for e in events)
    by_substream: dict[int, list[SimpleEvent]] = {}
    for e in events:
        g = (e.timestamp - start) * rate // 1000
        by_substream.setdefault(g - e.sequence * partitions, []).append(e)
    return by_substream


def test_a_rate_stream_gives_each_substream_contiguous_sequences_and_windows_count_its_events(jet: Any) -> None:
    rate, partitions = 200, 2
    p = Pipeline.create()
    stage = p.read_from(Sources.rate_stream(rate, partitions=partitions)).with_native_timestamps(0)
    stage.write_to(Sinks.list("events"))
    stage.window(WindowDefinition.tumbling(100)).aggregate(AggregateOperations.counting()).write_to(Sinks.list("counts"))
    _, (events, counts), before, after = run_until(jet, p, 3, ("events", "counts"), trigger_interval_ms=300)
    assert events and all(isinstance(e, SimpleEvent) for e in events)
    assert before <= min(e.timestamp for e in events) and max(e.timestamp for e in events) <= after
    substreams = rate_events(events, rate, partitions)
    assert set(substreams) <= set(range(partitions))
    for s, own in substreams.items():
        assert [e.sequence for e in own] == list(range(len(own)))  # contiguous, unique, in order
        assert [e.timestamp for e in own] == sorted(e.timestamp for e in own)
    # Each complete window counts the events written in it, and none is missing up to the last. Windows
    # only up to the least of the substreams' last timestamps: where the job was cancelled between its two
    # sinks' writes of an epoch, "events" may lack that epoch, whose windows lie beyond that.
    complete = [w for w in counts if not w.is_early]
    written_up_to = min(own[-1].timestamp for own in substreams.values())
    checked = {w.start: w.result for w in complete if w.end <= written_up_to}
    assert checked, "no window was complete within the events written"
    in_window = Counter(e.timestamp // 100 * 100 for e in events)
    assert checked == {start: in_window[start] for start in range(min(checked), max(checked) + 100, 100)}


@pytest.mark.parametrize("source", ["rate", "files"])
def test_ingestion_time_puts_every_item_in_one_window_within_the_run(jet: Any, source: str) -> None:
    """Ingestion time is the wall clock where the source reads an item: no reference knows it, but every
    item read lies in exactly one tumbling window of the run's time, and the watermark never goes back."""
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        p = Pipeline.create()
        if source == "rate":
            read = p.read_from(Sources.rate_stream(100, partitions=2))
            ids: Callable[[Any], Any] = lambda e: (e.timestamp, e.sequence)
        else:
            epochs = [[{"s": i % 2, "k": b, "v": i, "t": 0} for i in range(5)] for b in range(6)]
            read = p.read_from(Sources.dataframe(files_stream(jet, directory, epochs), substream="s"))
            ids = lambda r: (r["k"], r["v"])
        stamped = read.with_ingestion_timestamps()
        stamped.write_to(Sinks.list("events"))
        stamped.window(WindowDefinition.tumbling(50)).aggregate(AggregateOperations.to_list()).write_to(Sinks.list("windows"))
        watermarks: list[int] = []

        def watch(metrics: dict[str, Any]) -> None:
            if metrics.get("watermark") is not None:
                watermarks.append(metrics["watermark"])

        _, (events, windows), before, after = run_until(jet, p, 4, ("events", "windows"), 100, watch)
    assert watermarks and watermarks == sorted(watermarks)
    assert before <= watermarks[0] and watermarks[-1] <= after
    in_windows = [ids(e) for w in windows for e in w.result]
    assert in_windows and len(in_windows) == len(set(in_windows))  # no item in two windows
    assert set(in_windows) <= {ids(e) for e in events}
    assert all(before - 50 < w.start and w.end <= after + 50 and w.end - w.start == 50 for w in windows)


def test_spark_s_own_rate_source_is_a_streaming_dataframe_like_any_other(jet: Any) -> None:
    """Spark's rate source numbers its rows 0, 1, 2, ... in column ``value``, with their time in column
    ``timestamp``, which ``with_native_timestamps`` reads; the windows count the rows written."""
    df = jet.spark.readStream.format("rate").option("rowsPerSecond", 50).option("numPartitions", 2).load()
    p = Pipeline.create()
    stage = p.read_from(Sources.dataframe(df)).with_native_timestamps(0)
    stage.map(lambda r: (r["value"], int(r["timestamp"].timestamp() * 1000))).write_to(Sinks.list("rows"))
    stage.window(WindowDefinition.tumbling(200)).aggregate(AggregateOperations.counting()).write_to(Sinks.list("counts"))
    _, (rows, counts), _, _ = run_until(jet, p, 3, ("rows", "counts"), trigger_interval_ms=300)
    values = sorted(v for v, _ in rows)
    assert values and values == list(range(len(values)))
    written_up_to = max(ts for _, ts in rows)
    in_window = Counter(ts // 200 * 200 for _, ts in rows)
    checked = {w.start: w.result for w in counts if w.end <= written_up_to}
    assert checked and all(in_window[start] == n for start, n in checked.items())


def test_a_substream_column_must_be_a_column_of_a_streaming_dataframe(jet: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        df = files_stream(jet, directory, [[{"s": 0, "k": 0, "v": 1, "t": 5}]])
        with pytest.raises(ValueError, match="no such column"):
            Sources.dataframe(df, substream="device")
    with pytest.raises(ValueError, match="only a streaming DataFrame"):
        Sources.dataframe(jet.spark.range(3), substream="id")


@pytest.mark.parametrize("case", ["items_stream native", "python time by substream"])
def test_what_the_sources_do_not_take_yet_fails_naming_the_vertex(jet: Any, case: str) -> None:
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        p = Pipeline.create()
        if case == "items_stream native":
            stage = p.read_from(Sources.items_stream([1, 2])).with_native_timestamps(0)
        else:
            df = files_stream(jet, directory, [[{"s": 0, "k": 0, "v": 1, "t": 5}]])
            stage = p.read_from(Sources.dataframe(df, substream="s")).with_timestamps(lambda r: r["t"], allowed_lag_ms=0)
        stage.write_to(Sinks.list("out"))
        job = jet.new_job(p)
        with pytest.raises(Exception, match="does not run this yet") as failure:
            job.join(timeout=120)
    assert "vertex '" in str(failure.value)
    assert job.status is JobStatus.FAILED


def test_a_dataframe_s_time_from_a_python_function_matches_the_reference(jet: Any) -> None:
    epochs = [[{"s": 0, "k": i % 2, "v": i, "t": b * 30 + i * 4} for i in range(6)] for b in range(3)]
    epochs[2].append({"s": 0, "k": 0, "v": 50, "t": 1})  # behind the watermark of epoch 1: late
    with tempfile.TemporaryDirectory(prefix="jetspark-files-stream-") as directory:
        p = Pipeline.create()
        (p.read_from(Sources.dataframe(files_stream(jet, directory, epochs))).with_timestamps(lambda r: r["t"] + 1, 2)
         .grouping_key("k").window(WindowDefinition.tumbling(10)).aggregate(AggregateOperations.summing("v"))
         .write_to(Sinks.list("out")))
        expected = run_stream_reference(p, epochs=as_rows(epochs))
        metrics, got = run_epochs(jet, p, len(epochs))
    assert as_multiset(got) == as_multiset(expected.outputs["out"])
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values()) == 1


# Rows read in the JVM: a streaming DataFrame of one substream, its time a column, read straight by a
# sliding or tumbling window whose key and values are columns, enters the window as rows, in as many
# tasks as its micro-batch has (docs/streaming.md, "Rows read in the JVM"). name -> (the operation, the
# part of a result that is the same whoever wins a tie: a pick's value, not which row holds it, and whether
# its frames are columns of numbers: counting and picks by an integer)
ROWS_OPERATIONS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any], bool]] = {
    "counting": (AggregateOperations.counting, lambda r: r, True),
    "summing": (lambda: AggregateOperations.summing("v"), lambda r: r, False),
    "max_by": (lambda: AggregateOperations.max_by("v"), lambda r: r and r["v"], True),
    "all_of": (lambda: AggregateOperations.all_of(AggregateOperations.counting(), AggregateOperations.min_by("v")),
               lambda r: (r[0], r[1] and r[1]["v"]), True),
    "all_of summing": (lambda: AggregateOperations.all_of(AggregateOperations.summing("v"), AggregateOperations.max_by("v")),
                       lambda r: (r[0], r[1] and r[1]["v"]), False),
}


def rows_pipeline(df: Any, lag: int, window: Any, keyed: bool, operation: Any) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.dataframe(df)).with_timestamps("t", allowed_lag_ms=lag)
    (stage.grouping_key("k") if keyed else stage).window(window).aggregate(operation).write_to(Sinks.list("out"))
    return p


def settled(results: list[Any], of_result: Callable[[Any], Any]) -> Counter[Any]:
    return Counter((getattr(r, "key", None), r.start, r.end, of_result(r.result)) for r in results)


@settings(max_examples=examples(40), deadline=None)
@given(stream=stream_inputs(max_substreams=3, max_items=6), window=st.sampled_from(["sliding", "tumbling"]),
       keyed=st.booleans(), op=st.sampled_from(sorted(ROWS_OPERATIONS)), parts=st.sampled_from([1, 3]))
def test_random_rows_read_in_the_jvm_match_the_reference_in_any_number_of_tasks(
        jet: Any, stream: StreamInput, window: str, keyed: bool, op: str, parts: int) -> None:
    """The reference reads the same rows as Python items, one epoch a file; the engine reads them as rows,
    each micro-batch in ``parts`` tasks (the parts of one substream: its watermark is the greatest of
    theirs, and an event is late by the watermark as of the epoch before)."""
    epochs = cut(stream)
    operation, of_result, columnar = ROWS_OPERATIONS[op]
    with tempfile.TemporaryDirectory(prefix="jetspark-rows-stream-") as directory:
        df = files_stream(jet, directory, epochs)
        p = rows_pipeline(df.repartition(parts) if parts > 1 else df, stream.allowed_lag_ms, WINDOWS[window], keyed,
                          operation())
        expected = run_stream_reference(p, epochs=as_rows(epochs))
        metrics, got = run_epochs(jet, p, len(epochs))
    assert metrics["typed_windows"] == ["windowAggregate-accumulate"], "the window did not read the rows in the JVM"
    assert metrics["columnar_windows"] == (metrics["typed_windows"] if columnar else [])
    assert settled(got, of_result) == settled(expected.outputs["out"], of_result)
    assert metrics["late_events_dropped"] == sum(expected.late_dropped.values())
    assert metrics["vertices"]["dataframe-source"]["items_out"] == sum(map(len, epochs))


def test_a_pick_over_rows_gives_the_row_python_would_have_read(jet: Any) -> None:
    """``max_by`` over rows read in the JVM gives the whole row as a Row, its fields by name; one task."""
    epochs = [[{"s": 0, "k": 1, "v": 3, "t": 2}, {"s": 0, "k": 1, "v": 9, "t": 4}], [{"s": 0, "k": 1, "v": 5, "t": 30}]]
    with tempfile.TemporaryDirectory(prefix="jetspark-rows-pick-") as directory:
        p = rows_pipeline(files_stream(jet, directory, epochs), 0, WindowDefinition.tumbling(10), True,
                          AggregateOperations.max_by("v"))
        metrics, got = run_epochs(jet, p, 2)
    # epoch 1 moves the watermark to 30: window [0, 10) of key 1 is complete, its greatest v the row at t=4
    assert [(r.key, r.start, r.end, r.result.asDict()) for r in got] == [(1, 0, 10, {"s": 0, "k": 1, "v": 9, "t": 4})]
    assert metrics["typed_windows"] == ["windowAggregate-accumulate"]


def test_late_rows_are_counted_one_by_one_against_the_watermark_of_the_epoch_before(jet: Any) -> None:
    """Epoch 0 moves the watermark to 100 (no lag); epoch 1's three rows of one key in frame [0, 10) are
    late, and so is epoch 2's; the row at t=101 is not. Counted per row, not per frame."""
    epochs = [[{"s": 0, "k": 1, "v": 1, "t": 100}],
              [{"s": 0, "k": 1, "v": 2, "t": 5}, {"s": 0, "k": 1, "v": 3, "t": 6}, {"s": 0, "k": 1, "v": 4, "t": 7}],
              [{"s": 0, "k": 1, "v": 5, "t": 101}, {"s": 0, "k": 1, "v": 6, "t": 9}, {"s": 0, "k": 1, "v": 7, "t": 200}]]
    with tempfile.TemporaryDirectory(prefix="jetspark-rows-late-") as directory:
        p = rows_pipeline(files_stream(jet, directory, epochs), 0, WindowDefinition.tumbling(10), True,
                          AggregateOperations.counting())
        metrics, got = run_epochs(jet, p, 3)
    assert metrics["typed_windows"] == ["windowAggregate-accumulate"]
    assert metrics["late_events_dropped"] == 4
    # the watermark reached 200: windows [100, 110) (two rows) is complete, [200, 210) is not
    assert sorted((r.key, r.start, r.end, r.result) for r in got) == [(1, 100, 110, 2)]


def test_late_rows_are_counted_one_by_one_in_the_first_epoch_after_a_restart(jet: Any, tmp_path: Any) -> None:
    """The job that read epoch 0 (the watermark to 100) ends; one started again on its checkpoint reads
    epoch 1, whose three rows in frame [0, 10) are late by the watermark the first job left behind."""
    directory, checkpoint = tmp_path / "files", tmp_path / "checkpoint"
    directory.mkdir()
    epochs = [[{"s": 0, "k": 1, "v": 1, "t": 100}],
              [{"s": 0, "k": 1, "v": 2, "t": 5}, {"s": 0, "k": 1, "v": 3, "t": 6}, {"s": 0, "k": 1, "v": 4, "t": 7}]]
    config = JobConfig(checkpoint_dir=str(checkpoint))
    late = []
    for b in range(2):
        p = rows_pipeline(files_stream(jet, str(directory), epochs[:b + 1]), 0, WindowDefinition.tumbling(10), True,
                          AggregateOperations.counting())
        job = jet.new_job(p, config)
        # Until the query committed epoch b: the next job goes on after it.
        wait_for(lambda: (checkpoint / "query" / "commits" / str(b)).exists())
        late.append(job.metrics()["late_events_dropped"])
        assert job.metrics()["typed_windows"] == ["windowAggregate-accumulate"]
        job.cancel()
        with pytest.raises(Exception, match="cancelled"):
            job.join(timeout=120)
    assert late == [0, 3]


def test_rows_that_a_python_step_reads_first_are_items(jet: Any) -> None:
    """A filter between the source and the window needs Python items: no window reads the rows."""
    with tempfile.TemporaryDirectory(prefix="jetspark-rows-filter-") as directory:
        epochs = [[{"s": 0, "k": 1, "v": 3, "t": 2}]]
        p = dataframe_pipeline(files_stream(jet, directory, epochs), None, 0, WINDOWS["tumbling"], True)
        metrics, _ = run_epochs(jet, p, 1)
    assert metrics["typed_windows"] == []
