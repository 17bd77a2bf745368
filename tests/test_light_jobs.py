"""Light jobs run Python pipelines on the local engine inside the driver's JVM: results equal the
brute-force reference's, a failing callable names its stage, cancel stops the job (and neither leaves an
execution registered in the JVM), what the local engine cannot run fails at submit naming the vertex."""

from __future__ import annotations

import time

import pytest

from jetspark import (AggregateOperation, JobCancelledError, JobConfig, JobFailedError, JobStatus, Pipeline,
                      KeyedWindowResult, PipelineDefinitionError, Sinks, Sources, WindowDefinition)
from jetspark import AggregateOperations as ops
from jetspark import _protocol
from reference import as_multiset, as_sequence, run_reference


def run_light(jet, p: Pipeline, *lists: str) -> dict[str, list]:
    """Runs ``p`` as a light job to completion; returns (and clears) the lists it wrote."""
    jet.new_light_job(p).join(timeout=120)
    out = {name: jet.get_list(name) for name in lists}
    for name in lists:
        jet.clear_list(name)
    return out


def wait_until_no_light_execution(jet, timeout: float = 0.5) -> None:
    """Asserts that the JVM's local engine soon has no execution registered: an execution leaves the
    registry as its job ends, which ``join`` may see a moment before. The wait is shorter than the
    interval of the light job checker (1 s), which would remove a leaked one: the execution must go by
    itself."""
    deadline = time.monotonic() + timeout
    while (count := _protocol.light_executions(jet._bridge)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert count == 0, f"{count} light job executions still registered {timeout} s after their jobs ended"


def test_a_python_chain_equals_the_reference(jet):
    p = Pipeline.create()
    (p.read_from(Sources.items(list(range(-50, 250)))).map(lambda x: None if x % 11 == 0 else x * 3)
     .filter(lambda x: x % 2 == 0).flat_map(lambda x: [x, str(x)]).write_to(Sinks.list("light-chain")))
    assert as_multiset(run_light(jet, p, "light-chain")["light-chain"]) == as_multiset(run_reference(p)["light-chain"])


def test_aggregation_by_key_and_global_equal_the_reference(jet):
    words = [f"w{i % 17}" for i in range(0, 900, 7)] + ["x"] * 5
    p = Pipeline.create()
    stage = p.read_from(Sources.items(words))
    stage.grouping_key(lambda w: w[:2]).aggregate(ops.counting()).write_to(Sinks.list("light-counts"))
    (stage.map(len).aggregate(ops.all_of(ops.summing(lambda n: n), ops.max_by(lambda n: n)))
     .write_to(Sinks.list("light-total")))
    stage.rebalance(lambda w: w).grouping_key(lambda w: w).aggregate(ops.to_list()).write_to(Sinks.list("light-lists"))
    got = run_light(jet, p, "light-counts", "light-total", "light-lists")
    expected = run_reference(p)
    for name in got:
        assert as_multiset(got[name]) == as_multiset(expected[name]), name


def test_sort_delivers_the_reference_order(jet):
    items = [(i * 37) % 101 - 50 for i in range(300)]
    p = Pipeline.create(preserve_order=True)
    p.read_from(Sources.items(items)).rebalance(lambda x: x % 7).sort(key=lambda x: abs(x), reverse=True)\
        .write_to(Sinks.list("light-sorted"))
    got = run_light(jet, p, "light-sorted")["light-sorted"]
    expected = run_reference(p)["light-sorted"]
    # Equal keys (x and -x) may come in either order: compare the keys in order, the items as multisets.
    assert [abs(x) for x in got] == [abs(x) for x in expected]
    assert as_multiset(got) == as_multiset(expected)
    assert as_sequence([abs(x) for x in got]) == as_sequence(sorted((abs(x) for x in items), reverse=True))


def test_sort_then_a_list_sink_gives_a_sorted_list_without_preserve_order(jet):
    # As in Jet: the sort's one processor feeds the list sink (over a map too) in order.
    names = ["joe", "bob", "john", "alice", "zoe", "carl", "bob", "mia", "ann", "ted", "kim", "ed"] * 5
    p = Pipeline.create()
    sorted_names = p.read_from(Sources.items(names)).rebalance().map(str.title).sort()
    sorted_names.write_to(Sinks.list("light-sorted-names"))
    sorted_names.map(len).write_to(Sinks.list("light-sorted-lengths"))
    got = run_light(jet, p, "light-sorted-names", "light-sorted-lengths")
    assert got["light-sorted-names"] == sorted(n.title() for n in names)
    assert got["light-sorted-lengths"] == [len(n) for n in sorted(n.title() for n in names)]


def test_distinct_and_merge_equal_the_reference(jet):
    p = Pipeline.create()
    a = p.read_from(Sources.items([i % 13 for i in range(100)]))
    b = p.read_from(Sources.items([{"k": i % 4} for i in range(20)])).map(lambda d: d["k"] * 100)
    a.merge(b).distinct().write_to(Sinks.list("light-distinct"))
    assert as_multiset(run_light(jet, p, "light-distinct")["light-distinct"]) == \
        as_multiset(run_reference(p)["light-distinct"])


def test_a_failing_callable_fails_the_job_naming_the_stage(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2, 0, 4])).map(lambda x: 12 // x).set_name("twelve-by").write_to(Sinks.noop())
    with pytest.raises(JobFailedError) as reference_error:
        run_reference(p)
    job = jet.new_light_job(p)
    with pytest.raises(JobFailedError) as e:
        job.join(timeout=120)
    assert e.value.stage == "twelve-by" == reference_error.value.stage
    assert "ZeroDivisionError" in str(e.value)
    assert job.status is JobStatus.FAILED
    wait_until_no_light_execution(jet)


def test_a_failing_key_function_names_the_aggregation_stage(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([{"a": 1}, {"b": 2}])).grouping_key(lambda d: d["a"]).aggregate(ops.counting())\
        .set_name("by-a").write_to(Sinks.noop())
    with pytest.raises(JobFailedError) as e:
        jet.new_light_job(p).join(timeout=120)
    assert e.value.stage == "by-a" and "KeyError" in str(e.value)
    wait_until_no_light_execution(jet)


def test_a_chain_before_a_failing_key_keeps_the_keys_failures_apart(jet):
    # The chain and the extraction of the aggregation's key run in one call to Python per batch: the key's
    # failures still go to the aggregation's dead letters, or fail the job naming the aggregation.
    def pipeline(dead_letter: bool) -> Pipeline:
        p = Pipeline.create()
        stage = (p.read_from(Sources.items(list(range(-20, 40)))).map(lambda x: x - 7).filter(lambda x: x % 5 != 1)
                 .grouping_key(lambda x: 12 // (x % 4) % 3).aggregate(ops.summing(lambda x: x)).set_name("by-twelve"))
        (stage.on_error(Sinks.dead_letter("light-key-letters")) if dead_letter else stage)\
            .write_to(Sinks.list("light-key-sums"))
        return p

    routed = pipeline(dead_letter=True)
    got = run_light(jet, routed, "light-key-sums", "light-key-letters")
    expected = run_reference(routed)
    assert got["light-key-letters"] and as_multiset(got["light-key-sums"]) == as_multiset(expected["light-key-sums"])
    assert as_multiset((d.record, d.stage, d.error.split(":")[0]) for d in got["light-key-letters"]) == \
        as_multiset(expected["dead_letter:light-key-letters"])
    with pytest.raises(JobFailedError) as e:
        jet.new_light_job(pipeline(dead_letter=False)).join(timeout=120)
    assert e.value.stage == "by-twelve" and "ZeroDivisionError" in str(e.value)
    jet.clear_list("light-key-sums")


def test_cancel_stops_the_job(jet):
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(100_000)))).map(lambda x: time.sleep(0.001) or x).write_to(Sinks.noop())
    job = jet.new_light_job(p)
    with pytest.raises(TimeoutError):
        job.join(timeout=0.2)
    assert job.status is JobStatus.RUNNING
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=60)
    assert job.status is JobStatus.CANCELLED
    wait_until_no_light_execution(jet)


def test_dataframe_and_files_sources_are_collected_and_equal_the_reference(jet, tmp_path):
    df = jet.spark.createDataFrame([(k % 4, k, f"n{k}") for k in range(40)], "k int, v int, name string").repartition(3)
    path = str(tmp_path / "rows")
    df.write.parquet(path)
    p = Pipeline.create()
    rows = p.read_from(Sources.dataframe(df))
    rows.grouping_key("k").aggregate(ops.all_of(ops.summing("v"), ops.max_by("v"))).write_to(Sinks.list("light-df-by-k"))
    rows.filter(lambda r: r.v % 3 == 0).map(lambda r: (r.name, r.v * 2)).write_to(Sinks.list("light-df-mapped"))
    got = run_light(jet, p, "light-df-by-k", "light-df-mapped")
    expected = run_reference(p)
    for name in got:
        assert as_multiset(got[name]) == as_multiset(expected[name]), name
    # The files source reads what the DataFrame wrote: the same rows (a Row's fields by name).
    files = Pipeline.create()
    files.read_from(Sources.files(path)).map(lambda r: (r.k, r.v, r.name)).write_to(Sinks.list("light-files"))
    assert sorted(run_light(jet, files, "light-files")["light-files"]) == sorted((k % 4, k, f"n{k}") for k in range(40))


def test_a_source_above_the_row_limit_is_refused_naming_the_limit(jet):
    p = Pipeline.create()
    p.read_from(Sources.dataframe(jet.spark.range(11))).set_name("eleven").write_to(Sinks.noop())
    with pytest.raises(PipelineDefinitionError, match="stage 'eleven'.*more than 10 rows.*light_job_max_source_rows") as e:
        jet.new_light_job(p, JobConfig(light_job_max_source_rows=10))
    assert e.value.stage == "eleven"
    run_light(jet, p)  # within the default limit
    exact = Pipeline.create()
    exact.read_from(Sources.dataframe(jet.spark.range(11))).write_to(Sinks.list("light-exact"))
    jet.new_light_job(exact, JobConfig(light_job_max_source_rows=11)).join(timeout=120)
    assert sorted(r.id for r in jet.get_list("light-exact")) == list(range(11))
    jet.clear_list("light-exact")


def test_what_light_jobs_do_not_run_yet_is_refused_at_submit_naming_the_vertex(jet):
    # Dead letters of a stream's timestamps.
    p = Pipeline.create()
    (p.read_from(Sources.items_stream([{"t": 1}])).with_timestamps("t", allowed_lag_ms=0).set_name("refused")
     .on_error(Sinks.dead_letter("light-refused")).write_to(Sinks.noop()))
    with pytest.raises(NotImplementedError, match="vertex 'refused[^']*' .*the local engine does not run this yet"):
        jet.new_light_job(p)


def test_a_streaming_dataframe_is_refused_naming_the_stage(jet):
    p = Pipeline.create()
    p.read_from(Sources.dataframe(jet.spark.readStream.format("rate").load())).with_native_timestamps(0) \
        .set_name("ticks").write_to(Sinks.noop())
    with pytest.raises(PipelineDefinitionError, match="stage 'ticks'.*batches only"):
        jet.new_light_job(p)


def test_console_sink_prints_after_join(jet, capsys):
    p = Pipeline.create()
    p.read_from(Sources.items(["hello light"])).write_to(Sinks.console())
    jet.new_light_job(p).join(timeout=120)
    assert "hello light" in capsys.readouterr().out


def test_the_callback_server_listens_on_loopback_only(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([1])).map(lambda x: x).write_to(Sinks.noop())
    jet.new_light_job(p).join(timeout=120)
    server = jet.spark.sparkContext._gateway._callback_server
    assert server.server_socket.getsockname()[0] == "127.0.0.1"


def test_a_small_job_has_ended_when_its_start_returns(jet):
    # Run on the calling thread for up to a minute: this job ends well within that, so the start returns it
    # ended, with nothing left to join.
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(50)))).map(lambda x: x * 2).write_to(Sinks.list("light-small"))
    job = jet.new_light_job(p, JobConfig(light_job_start_us=60_000_000))
    assert job.status is JobStatus.COMPLETED and job.late_events == 0
    assert sorted(jet.get_list("light-small")) == [x * 2 for x in range(50)]
    job.join()
    jet.clear_list("light-small")
    wait_until_no_light_execution(jet)
    with pytest.raises(ValueError, match="light_job_start_us"):
        JobConfig(light_job_start_us=-1)


def test_dead_letters_keep_the_failed_records_and_the_rest_flows_on(jet):
    p = Pipeline.create()
    (p.read_from(Sources.items(list(range(-5, 20)))).map(lambda x: 60 // (x % 4)).set_name("sixty-by")
     .on_error(Sinks.dead_letter("light-letters")).write_to(Sinks.list("light-quotients")))
    got = run_light(jet, p, "light-quotients", "light-letters")
    expected = run_reference(p)
    assert as_multiset(got["light-quotients"]) == as_multiset(expected["light-quotients"])
    assert sorted((d.record, d.stage, d.error.split(":")[0]) for d in got["light-letters"]) == \
        sorted(expected["dead_letter:light-letters"])


def test_map_stateful_keeps_a_state_per_key_in_encounter_order(jet):
    items = [(i % 3, i) for i in range(120)]
    p = Pipeline.create(preserve_order=True)
    (p.read_from(Sources.items(items)).grouping_key(lambda kv: kv[0])
     .map_stateful(lambda: 0, lambda total, key, kv: (total + kv[1], (key, total + kv[1])))
     .write_to(Sinks.list("light-running")))
    got = run_light(jet, p, "light-running")["light-running"]
    expected = run_reference(p)["light-running"]
    assert as_multiset(got) == as_multiset(expected)
    for key in range(3):
        assert [x for x in got if x[0] == key] == [x for x in expected if x[0] == key]


def _sliding_counts(events: list[dict], size: int, slide: int) -> list[KeyedWindowResult]:
    """Brute force: every window [end - size, end) with end a multiple of ``slide``, per key, that holds events."""
    results = []
    for key in sorted({e["k"] for e in events}):
        times = [e["t"] for e in events if e["k"] == key]
        ends = range((min(times) // slide + 1) * slide, (max(times) // slide + 1) * slide + size, slide)
        for end in ends:
            count = sum(end - size <= t < end for t in times)
            if count:
                results.append(KeyedWindowResult(end - size, end, key, count))
    return results


#: Counting, built in and as a user-defined operation (whose windows run in the driver's Python).
COUNTINGS = [pytest.param(ops.counting, id="built-in"),
             pytest.param(lambda: AggregateOperation.of(lambda: 0, lambda acc, e: acc + 1, combine=lambda a, b: a + b),
                          id="AggregateOperation.of")]


@pytest.mark.parametrize("counting", COUNTINGS)
def test_an_items_stream_with_event_time_gives_the_windows_of_its_events(jet, counting):
    # Three substreams, each in time order, a lag longer than any disorder between them: nothing is late.
    substreams = [[{"k": f"k{(t + s) % 3}", "t": t} for t in range(s, 300, 7)] for s in range(3)]
    p = Pipeline.create()
    stream = p.read_from(Sources.items_stream(*substreams, items_per_batch=5)).with_timestamps("t", allowed_lag_ms=1000)
    (stream.filter(lambda e: e["t"] % 2 == 0).grouping_key("k").window(WindowDefinition.sliding(40, 10))
     .aggregate(counting()).write_to(Sinks.list("light-stream-windows")))
    stream.map(lambda e: e["t"]).write_to(Sinks.list("light-stream-times"))
    job = jet.new_light_job(p)
    job.join(timeout=120)
    assert job.late_events == 0
    got = {name: jet.get_list(name) for name in ("light-stream-windows", "light-stream-times")}
    jet.clear_list("light-stream-windows")
    jet.clear_list("light-stream-times")
    events = [e for s in substreams for e in s]
    assert as_multiset(got["light-stream-windows"]) == \
        as_multiset(_sliding_counts([e for e in events if e["t"] % 2 == 0], 40, 10))
    assert sorted(got["light-stream-times"]) == sorted(e["t"] for e in events)


@pytest.mark.parametrize("counting", COUNTINGS)
def test_an_event_behind_the_watermark_of_its_stream_is_dropped(jet, counting):
    # One substream read by one processor: its watermark reaches each window in order with its events.
    # The event at t=5 comes after t=200, with a lag of 10: its windows were emitted at watermark 190.
    events = [{"k": "a", "t": t} for t in range(0, 201, 10)] + [{"k": "a", "t": 5}, {"k": "a", "t": 205}]
    p = Pipeline.create()
    (p.read_from(Sources.items_stream(events)).with_timestamps("t", allowed_lag_ms=10).set_local_parallelism(1)
     .grouping_key("k").window(WindowDefinition.tumbling(20)).aggregate(counting())
     .write_to(Sinks.list("light-stream-late")))
    job = jet.new_light_job(p)
    job.join(timeout=120)
    on_time = [e for e in events if e["t"] != 5]
    assert as_multiset(jet.get_list("light-stream-late")) == as_multiset(_sliding_counts(on_time, 20, 20))
    assert job.late_events == 1  # dropped, and counted
    jet.clear_list("light-stream-late")


def test_a_late_event_of_a_user_defined_window_goes_to_its_dead_letters_where_it_has_them(jet):
    # As the previous test, the window's stage routing its failures: the late event is its dead letter
    # (as on the Spark engine), and still counted.
    counting = AggregateOperation.of(lambda: 0, lambda acc, e: acc + 1, combine=lambda a, b: a + b)
    events = [{"k": "a", "t": t} for t in range(0, 201, 10)] + [{"k": "a", "t": 5}, {"k": "a", "t": 205}]
    p = Pipeline.create()
    (p.read_from(Sources.items_stream(events)).with_timestamps("t", allowed_lag_ms=10).set_local_parallelism(1)
     .grouping_key("k").window(WindowDefinition.tumbling(20)).aggregate(counting).set_name("counts")
     .on_error(Sinks.dead_letter("light-late-letters")).write_to(Sinks.list("light-late-counts")))
    job = jet.new_light_job(p)
    job.join(timeout=120)
    on_time = [e for e in events if e["t"] != 5]
    assert as_multiset(jet.get_list("light-late-counts")) == as_multiset(_sliding_counts(on_time, 20, 20))
    [letter] = jet.get_list("light-late-letters")
    assert (letter.record, letter.stage, letter.error.split(":")[0]) == ({"k": "a", "t": 5}, "counts", "LateEvent")
    assert job.late_events == 1
    jet.clear_list("light-late-counts")
    jet.clear_list("light-late-letters")


def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


@pytest.mark.parametrize("counting", COUNTINGS)
def test_a_rate_stream_closes_windows_as_its_time_passes_and_gives_early_results_before(jet, counting):
    # 100 events a second, due every 10 ms from the job's start (their timestamps): a closed 200 ms window
    # holds 20 of them, except the first (the job starts within it). A 2 s window, its early results every
    # 100 ms: partial counts, marked early, while it is open.
    p = Pipeline.create()
    events = p.read_from(Sources.rate_stream(100)).with_native_timestamps(0)
    events.window(WindowDefinition.tumbling(200)).aggregate(counting()).write_to(Sinks.list("light-rate"))
    (events.window(WindowDefinition.tumbling(2000).set_early_results_period(100)).aggregate(counting())
     .write_to(Sinks.list("light-rate-early")))
    job = jet.new_light_job(p)
    try:
        _until(lambda: len(jet.get_list("light-rate")) >= 4 and len(jet.get_list("light-rate-early")) >= 2)
    finally:
        job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=60)
    closed = sorted(jet.get_list("light-rate"), key=lambda r: r.start)
    assert all(r.end - r.start == 200 and not r.is_early for r in closed)
    assert [r.result for r in closed[1:]] == [20] * (len(closed) - 1)
    early = [r for r in jet.get_list("light-rate-early") if r.is_early]
    assert early and all(0 < r.result <= 200 for r in early)
    jet.clear_list("light-rate")
    jet.clear_list("light-rate-early")


@pytest.mark.parametrize("counting", COUNTINGS)
def test_early_results_keep_coming_in_real_time_while_no_event_does(jet, counting):
    # One event a second, so the watermark moves once a second; a window's early results are due every
    # 100 ms of real time all the same: six of them come within three seconds of the first.
    p = Pipeline.create()
    (p.read_from(Sources.rate_stream(1)).with_native_timestamps(0)
     .window(WindowDefinition.tumbling(600_000).set_early_results_period(100)).aggregate(counting())
     .write_to(Sinks.list("light-early-idle")))
    job = jet.new_light_job(p)
    try:
        _until(lambda: any(r.is_early for r in jet.get_list("light-early-idle")))
        first = time.monotonic()
        _until(lambda: sum(r.is_early for r in jet.get_list("light-early-idle")) >= 6)
        assert time.monotonic() - first < 3.0
    finally:
        job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=60)
    jet.clear_list("light-early-idle")
