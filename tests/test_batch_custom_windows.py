"""Windows of user-defined operations (``AggregateOperation.of``, alone or inside ``all_of``) on the
Spark batch engine (and, in the tests taking ``run``, as light jobs), which runs them in Python (``python/jetspark/worker/custom_windows.py``) in the stages the
planner chose. Expected results come from the brute-force windows of tests/reference.py, or by hand from
the timeline drawn above a test. The operations' results do not depend on the order of a window's items
(sums, counts, sorted lists): a frame-based engine combines frames in time order, the reference
accumulates each window's items in encounter order."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import examples, run_job
from hypothesis import HealthCheck, given, settings
from reference import as_multiset, run_reference
from strategies import batch_pipelines
from test_batch_engine_random import mismatches_on_engine

from jetspark import AggregateOperation, JobFailedError, KeyedWindowResult, Pipeline, PipelineDefinitionError, Sinks
from jetspark import AggregateOperations as ops
from jetspark import Sources, WindowDefinition, WindowResult

# Events of three keys over [-25, 60): negative times, equal times and gaps longer than a window.
EVENTS = [{"k": k, "t": t, "v": v} for k, t, v in [
    ("a", -25, 1), ("b", -3, 7), ("a", 0, 2), ("a", 4, -5), ("c", 9, 3), ("b", 10, 4), ("a", 10, 8),
    ("c", 19, 6), ("b", 20, 1), ("a", 21, 9), ("a", 29, 0), ("c", 30, 2), ("a", 59, 4), ("b", 44, 5),
    ("c", 30, -2), ("b", 11, 3),
]]

#: Sum of squares: combines, so sliding windows run in two stages; no deduct: frames slide in two stacks.
SQUARES = AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"] ** 2, combine=lambda a, b: a + b)
#: The same with deduct: a running accumulator slides by deducting the trailing frame.
SQUARES_DEDUCT = AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"] ** 2, combine=lambda a, b: a + b,
                                       deduct=lambda a, b: a - b)
#: Values in a list, sorted when finished: cannot combine, so only in tumbling windows (one stage).
SORTED = AggregateOperation.of(list, lambda a, e: a + [e["v"]], finish=sorted)
#: (count, sum) in a list that accumulate, combine and deduct change in place (self-contained lambdas: a
#: worker cannot import this module).
IN_PLACE = AggregateOperation.of(
    lambda: [0, 0], lambda a, e: a.__setitem__(slice(None), [a[0] + 1, a[1] + e["v"]]) or a,
    combine=lambda a, b: a.__setitem__(slice(None), [a[0] + b[0], a[1] + b[1]]) or a,
    deduct=lambda a, b: a.__setitem__(slice(None), [a[0] - b[0], a[1] - b[1]]) or a, export=tuple)
#: The same, with a finish that changes its argument (negates it): no other window may see that.
FINISH_IN_PLACE = AggregateOperation.of(
    lambda: [0, 0], lambda a, e: a.__setitem__(slice(None), [a[0] + 1, a[1] + e["v"]]) or a,
    combine=lambda a, b: a.__setitem__(slice(None), [a[0] + b[0], a[1] + b[1]]) or a,
    deduct=lambda a, b: a.__setitem__(slice(None), [a[0] - b[0], a[1] - b[1]]) or a,
    finish=lambda a: a.__setitem__(slice(None), [-a[0], -a[1]]) or tuple(a))
FINISH_IN_PLACE_NO_DEDUCT = AggregateOperation.of(FINISH_IN_PLACE.functions["create"],
                                                  FINISH_IN_PLACE.functions["accumulate"],
                                                  combine=FINISH_IN_PLACE.functions["combine"],
                                                  finish=FINISH_IN_PLACE.functions["finish"])


@pytest.fixture
def run(jet, engine):
    """Runs a pipeline on each engine in turn (a Spark job, a light job); returns what its list sinks got,
    by name (and clears them)."""
    def go(p: Pipeline, *lists: str) -> dict[str, list[Any]]:
        return dict(zip(lists, run_job(jet, p, *lists, engine=engine)[1]))
    return go


def window_pipeline(window: WindowDefinition, op: AggregateOperation, keyed: bool = True, global_too: bool = False
                    ) -> Pipeline:
    """The window ``w`` of ``op`` by key (or global) into the list "w"; with ``global_too`` also the global
    window "all" into the list "all", from the same stamped items (one job runs both)."""
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    (stage.grouping_key("k") if keyed else stage).window(window).aggregate(op).set_name("w").write_to(Sinks.list("w"))
    if global_too:
        stage.window(window).aggregate(op).set_name("all").write_to(Sinks.list("all"))
    return p


def assert_matches_reference(run, p: Pipeline, *sinks: str) -> dict[str, list[Any]]:
    expected, actual = run_reference(p), run(p, *sinks)
    for name in sinks:
        assert expected[name], f"{name}: a test that expects no window proves little"
        assert as_multiset(actual[name]) == as_multiset(expected[name]), name
    return actual


CASES = {
    "tumbling, no combine (one stage)": (WindowDefinition.tumbling(10), SORTED, "single stage"),
    "tumbling, combine (two stages)": (WindowDefinition.tumbling(10), SQUARES, "stage 2 of 2"),
    "sliding, two stacks": (WindowDefinition.sliding(20, 5), SQUARES, "stage 2 of 2"),
    "sliding, deduct": (WindowDefinition.sliding(20, 5), SQUARES_DEDUCT, "stage 2 of 2"),
    "sliding, in place": (WindowDefinition.sliding(15, 5), IN_PLACE, "stage 2 of 2"),
    "sliding, deduct, finish in place": (WindowDefinition.sliding(15, 5), FINISH_IN_PLACE, "stage 2 of 2"),
    "sliding, two stacks, finish in place": (WindowDefinition.sliding(15, 5), FINISH_IN_PLACE_NO_DEDUCT, "stage 2 of 2"),
    "session": (WindowDefinition.session(5), SQUARES, "single stage"),
    "session, in place": (WindowDefinition.session(10), IN_PLACE, "single stage"),
    "all_of with built-ins, sliding": (WindowDefinition.sliding(20, 10),
                                       ops.all_of(SQUARES, ops.counting(), ops.max_by(lambda e: (e["v"], e["t"]))),
                                       "stage 2 of 2"),
    "all_of with built-ins, tumbling, no combine": (WindowDefinition.tumbling(20),
                                                    ops.all_of(ops.summing("v"), SORTED, ops.top_n(2, "v")),
                                                    "single stage"),
    "all_of with deducting parts, session": (WindowDefinition.session(3), ops.all_of(SQUARES_DEDUCT, IN_PLACE),
                                             "single stage"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_custom_windows_keyed_and_global_match_the_brute_force_windows(run, case):
    window, op, stages = CASES[case]
    p = window_pipeline(window, op, global_too=True)
    plan = p.explain(parallelism=2).splitlines()
    for vertex in ("w", "all"):  # each of the engine's paths is taken
        assert any(line.strip().startswith(vertex) and stages in line for line in plan), plan
    assert_matches_reference(run, p, "w", "all")


def test_keyed_sliding_sums_of_squares_by_hand(run):
    #  sliding(10, 5), key "b" only:   t = -3 (v 7), 10 (v 4), 11 (v 3), 20 (v 1), 44 (v 5)
    #  frames (end): 0 ← 49 | 15 ← 16 + 9 = 25 | 25 ← 1 | 45 ← 25
    #  windows [end-10, end):  [-10,0) 49  [-5,5) 49  [5,15) 25  [10,20) 25  [15,25) 1  [20,30) 1
    #                          [35,45) 25  [40,50) 25        (none between: no frame there)
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).filter(lambda e: e["k"] == "b").add_timestamps("t").grouping_key("k")
     .window(WindowDefinition.sliding(10, 5)).aggregate(SQUARES).write_to(Sinks.list("w")))
    got = run(p, "w")["w"]
    assert sorted(got, key=lambda r: r.end) == [
        KeyedWindowResult(-10, 0, "b", 49), KeyedWindowResult(-5, 5, "b", 49), KeyedWindowResult(5, 15, "b", 25),
        KeyedWindowResult(10, 20, "b", 25), KeyedWindowResult(15, 25, "b", 1), KeyedWindowResult(20, 30, "b", 1),
        KeyedWindowResult(35, 45, "b", 25), KeyedWindowResult(40, 50, "b", 25)]


def test_global_sessions_merge_overlapping_spans_by_hand(run):
    #  session(5), every key:  spans [t, t+5)
    #  -25 | -3 0 4 | 9 10 11 | 19 20 21 | 29 30 30 | 44 | 59        (-3+5 = 2 > 0: merged; 4+5 = 9: touches 9, apart)
    #  sessions: [-25,-20) [-3,9) [9,16) [19,26) [29,35) [44,49) [59,64)
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").window(WindowDefinition.session(5))
     .aggregate(ops.all_of(ops.counting(), AggregateOperation.of(list, lambda a, e: a + [e["v"]],
                                                                 combine=lambda a, b: a + b, finish=sorted)))
     .write_to(Sinks.list("w")))
    got = run(p, "w")["w"]
    assert sorted(got, key=lambda r: r.end) == [
        WindowResult(-25, -20, (1, [1])), WindowResult(-3, 9, (3, [-5, 2, 7])), WindowResult(9, 16, (4, [3, 3, 4, 8])),
        WindowResult(19, 26, (3, [1, 6, 9])), WindowResult(29, 35, (3, [-2, 0, 2])), WindowResult(44, 49, (1, [5])),
        WindowResult(59, 64, (1, [4]))]


@pytest.mark.parametrize("window", [WindowDefinition.sliding(20, 5), WindowDefinition.session(4),
                                    WindowDefinition.tumbling(10)])
def test_a_record_whose_accumulate_fails_is_a_dead_letter_once_and_in_none_of_its_windows(run, window):
    #  v % 4 == 0 fails: (b, 10, 4), (a, 10, 8), (a, 29, 0), (a, 59, 4), in every window they fall in (once
    #  each: a sliding window's records fall in four windows); their frames and sessions stay, as their
    #  times put them there ([50, 60) of key "a" holds nothing else: it still has a result, []).
    def accumulate(acc: list, e: dict) -> list:
        acc.append(e["v"])  # in place, before failing: the engine must not keep it
        if e["v"] % 4 == 0:
            raise ValueError(f"a multiple of four: {e['v']}")
        return acc

    collect = AggregateOperation.of(list, accumulate, combine=lambda a, b: a + b, finish=sorted)
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k").window(window).aggregate(collect)
     .set_name("collect").on_error(Sinks.dead_letter("fours")).write_to(Sinks.list("w")))
    expected = run_reference(p)
    got = run(p, "w", "fours")
    assert as_multiset(got["w"]) == as_multiset(expected["w"])
    assert sorted(d.record["v"] for d in got["fours"]) == [0, 4, 4, 8]
    assert sorted(repr(d.record) for d in got["fours"]) == sorted(repr(r) for r, _, _ in expected["dead_letter:fours"])
    assert {(d.stage, d.error.split(":")[0]) for d in got["fours"]} == {("collect", "ValueError")}


def test_a_record_whose_accumulate_fails_without_a_dead_letter_sink_fails_the_job_naming_it(run):
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").window(WindowDefinition.sliding(20, 10))
     .aggregate(AggregateOperation.of(lambda: 0, lambda a, e: a + 12 // e["v"], combine=lambda a, b: a + b))
     .set_name("twelve-by").write_to(Sinks.list("w")))
    with pytest.raises(JobFailedError) as e:
        run(p, "w")
    assert e.value.stage == "twelve-by"
    assert "'v': 0" in str(e.value) and "ZeroDivisionError" in str(e.value)


@pytest.mark.parametrize("window", [WindowDefinition.sliding(20, 10), WindowDefinition.session(5),
                                    WindowDefinition.tumbling(10)])
def test_a_failing_finish_fails_the_job_naming_the_stage_and_the_window(run, window):
    #  Key "a": 3 at t 12 and -3 at t 13 share every window (and the session): their sum is 0, and 1/0 fails.
    inverse = AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"], combine=lambda a, b: a + b,
                                    finish=lambda a: 1 / a)
    p = Pipeline.create()
    (p.read_from(Sources.items([{"k": "a", "t": 12, "v": 3}, {"k": "a", "t": 13, "v": -3}, {"k": "b", "t": 1, "v": 1}]))
     .add_timestamps("t").grouping_key("k").window(window).aggregate(inverse).set_name("inverse")
     .write_to(Sinks.list("w")))
    with pytest.raises(JobFailedError) as e:
        run(p, "w")
    assert e.value.stage == "inverse"
    assert "window [" in str(e.value) and "of key 'a'" in str(e.value) and "finish" in str(e.value)
    assert "ZeroDivisionError" in str(e.value)


def test_a_failing_combine_fails_the_job_naming_the_stage_and_the_window(run):
    #  Frames [0, 5) and [5, 10) of key "a" meet in the window [0, 10) of sliding(10, 5).
    bad = AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"], combine=lambda a, b: a + b if a == 0 else 1 // 0)
    p = Pipeline.create()
    (p.read_from(Sources.items([{"k": "a", "t": 1, "v": 1}, {"k": "a", "t": 6, "v": 2}])).add_timestamps("t")
     .grouping_key("k").window(WindowDefinition.sliding(10, 5)).aggregate(bad).set_name("bad-combine")
     .write_to(Sinks.list("w")))
    with pytest.raises(JobFailedError) as e:
        run(p, "w")
    assert e.value.stage == "bad-combine"
    assert "window [0, 10) of key 'a'" in str(e.value) and "combine" in str(e.value)


@pytest.mark.parametrize("window", [WindowDefinition.sliding(20, 5), WindowDefinition.session(5)])
def test_a_window_that_cannot_combine_what_it_needs_is_refused_before_any_job_starts(jet, window):
    # Jet's rule: a sliding window combines its frames, an event that bridges two sessions merges them.
    p = window_pipeline(window, SORTED, keyed=True)
    with pytest.raises(PipelineDefinitionError, match="'w' breaks rule 'window-needs-combine'"):
        p.explain()
    job = jet.new_job(p)
    with pytest.raises(PipelineDefinitionError) as e:
        job.join(timeout=300)
    assert e.value.stage == "w" and e.value.rule == "window-needs-combine", str(e.value)
    assert "combine" in str(e.value)
    with pytest.raises(PipelineDefinitionError, match="window-needs-combine"):
        run_reference(p)


def test_a_custom_window_after_a_window_reads_the_time_its_results_carry(run):
    # Built-in counts per 10 ms, then user-defined windows of those results: each count carries its
    # window's time to the next window, as the reference says (which time of its window that is, the two
    # agree on).
    p = Pipeline.create()
    counts = (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k")
              .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()))
    squares_of_counts = AggregateOperation.of(lambda: 0, lambda a, r: a + r.result ** 2, combine=lambda a, b: a + b)
    counts.grouping_key(lambda r: r.key).window(WindowDefinition.tumbling(30)).aggregate(squares_of_counts) \
        .write_to(Sinks.list("keyed"))
    # and a custom window after a custom window
    sums = (p.read_from(Sources.items(EVENTS)).add_timestamps("t").window(WindowDefinition.tumbling(10))
            .aggregate(SQUARES_DEDUCT))
    sums.window(WindowDefinition.tumbling(30)).aggregate(
        AggregateOperation.of(list, lambda a, r: a + [r.result], combine=lambda a, b: a + b, finish=sorted)) \
        .write_to(Sinks.list("cascade"))
    assert_matches_reference(run, p, "keyed", "cascade")


def test_a_custom_window_after_a_map_reads_the_time_the_item_had(run):
    # map turns the item into its value alone: the window reads the time add_timestamps read before it.
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").map(lambda e: e["v"] * 10)
     .window(WindowDefinition.sliding(20, 10))
     .aggregate(AggregateOperation.of(lambda: 0, lambda a, x: a + x, combine=lambda a, b: a + b))
     .write_to(Sinks.list("w")))
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").map(lambda e: {"key": e["k"], "x": e["v"]})
     .grouping_key("key").window(WindowDefinition.session(5)).aggregate(ops.all_of(AggregateOperation.of(
         lambda: 0, lambda a, d: a + d["x"], combine=lambda a, b: a + b), ops.counting()))
     .write_to(Sinks.list("sessions")))
    got = assert_matches_reference(run, p, "w", "sessions")
    #  [-30, -10): t -25 (v 1)   [-20, 0): t -3 (v 7)   [-10, 10): t -3, 0, 4, 9 (v 7, 2, -5, 3)
    by_end = {r.end: r.result for r in got["w"]}
    assert (by_end[-10], by_end[0], by_end[10]) == (10, 70, 70)


def test_a_window_after_a_rolling_aggregate_of_a_user_defined_operation_reads_its_items_times(run):
    # Each running total keeps the time of the item it was emitted for, as Jet's rolling aggregation keeps
    # its item's timestamp, also where the operation runs in Python; the record that fails (v == 0, at
    # t 29) is a dead letter and emits nothing. Running totals depend on each key's order (preserve_order);
    # the window's sums and counts do not depend on the order within a window.
    def add(total: int, e: dict) -> int:
        if e["v"] == 0:
            raise ValueError("zero")
        return total + e["v"]

    p = Pipeline.create(preserve_order=True)
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k")
     .rolling_aggregate(AggregateOperation.of(lambda: 0, add)).set_name("running").on_error(Sinks.dead_letter("zeros"))
     .window(WindowDefinition.tumbling(10)).aggregate(ops.all_of(ops.counting(), ops.summing(lambda kv: kv[1])))
     .write_to(Sinks.list("w")))
    got = run(p, "w", "zeros")
    assert as_multiset(got["w"]) == as_multiset(run_reference(p)["w"])
    assert [(d.record, d.stage) for d in got["zeros"]] == [({"k": "a", "t": 29, "v": 0}, "running")]
    #  [0, 10): the running totals of a at t 0 and 4 (1 + 2, then -5: 3, -2) and of c at t 9 (3)
    assert WindowResult(0, 10, (3, 4)) in got["w"]


def test_a_rebalanced_keyed_window_runs_in_one_stage_and_still_matches(run):
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    stage.rebalance("k").grouping_key("k").window(WindowDefinition.sliding(20, 5)).aggregate(SQUARES_DEDUCT) \
        .set_name("rebalanced").write_to(Sinks.list("w"))
    plan = p.explain(parallelism=2).splitlines()
    assert any(line.strip().startswith("rebalanced ") and line.endswith("single stage") for line in plan), plan
    assert_matches_reference(run, p, "w")


def test_a_window_whose_records_all_failed_still_has_the_result_of_an_empty_accumulator(run):
    #  t: 1 (v 4, fails)  |  12 (v 1)        tumbling(10): [0, 10) holds only the failed record
    failing = AggregateOperation.of(lambda: 0, lambda a, e: a + 1 // (e["v"] % 4), finish=lambda a: ("total", a))
    p = Pipeline.create()
    (p.read_from(Sources.items([{"t": 1, "v": 4}, {"t": 12, "v": 1}])).add_timestamps("t")
     .window(WindowDefinition.tumbling(10)).aggregate(failing).set_name("f")
     .on_error(Sinks.dead_letter("all-failed")).write_to(Sinks.list("w")))
    expected, got = run_reference(p), run(p, "w", "all-failed")  # (run clears every list it reads)
    assert sorted(got["w"], key=lambda r: r.end) == sorted(expected["w"], key=lambda r: r.end) == [
        WindowResult(0, 10, ("total", 0)), WindowResult(10, 20, ("total", 1))]
    assert [d.record for d in got["all-failed"]] == [{"t": 1, "v": 4}]


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(batch_pipelines(max_steps=2, allowed=frozenset({"custom_window", "map", "filter", "flat_map", "failing_map"}),
                       preserve_order=False, first=("custom_window",)))
def test_random_custom_window_pipelines_match_the_reference(jet, generated):
    problems = mismatches_on_engine(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


def test_a_custom_window_reads_a_dataframes_rows_as_python_rows_and_a_typed_window_feeds_one(jet, run):
    # The user-defined part needs Python items: the rows arrive as Rows. Counts that the JVM takes from
    # the rows themselves (a typed window) carry their time on into a user-defined window.
    df = jet.spark.createDataFrame([(e["k"], e["t"], e["v"]) for e in EVENTS], "k STRING, t BIGINT, v BIGINT")
    p = Pipeline.create()
    stamped = p.read_from(Sources.dataframe(df)).add_timestamps("t")
    stamped.grouping_key("k").window(WindowDefinition.sliding(20, 10)).aggregate(SQUARES).write_to(Sinks.list("rows"))
    counts = p.read_from(Sources.dataframe(df)).add_timestamps("t").window(WindowDefinition.tumbling(10)) \
        .aggregate(ops.counting())
    counts.window(WindowDefinition.tumbling(20)).aggregate(
        AggregateOperation.of(list, lambda a, r: a + [r.result], combine=lambda a, b: a + b, finish=sorted)) \
        .write_to(Sinks.list("of_counts"))
    job, (rows, of_counts) = run_job(jet, p, "rows", "of_counts")
    expected = run_reference(p)
    assert as_multiset(rows) == as_multiset(expected["rows"]) and rows
    assert as_multiset(of_counts) == as_multiset(expected["of_counts"]) and of_counts
    assert job.metrics()["typed_windows"]  # the counts were read from the rows in the JVM
