"""Windows over a batch of timestamped items on both engines (``add_timestamps`` then
``window(w).aggregate(op)``; the tests taking ``run`` run on the Spark engine and as light jobs): a batch is one epoch ending with a watermark of +infinity, so nothing is
late and every non-empty window is emitted once, complete. Expected results come from the brute-force
windows of tests/reference.py, or are worked out by hand on the timeline drawn above a test."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from conftest import examples, run_job, start
from hypothesis import HealthCheck, assume, given, settings
from reference import as_multiset, run_reference
from strategies import batch_pipelines
from test_batch_engine_random import mismatches_on_engine

from jetspark import AggregateOperations as ops
from jetspark import (AggregateOperation, JobFailedError, JoinClause, KeyedWindowResult, Pipeline, Sinks,
                      Sources, WindowDefinition, WindowResult)


@pytest.fixture
def run(jet, engine):
    """Runs a pipeline on each engine in turn; returns what its list sinks got, by name (and clears them)."""
    def go(p: Pipeline, *lists: str) -> dict[str, list[Any]]:
        return dict(zip(lists, run_job(jet, p, *lists, engine=engine)[1]))
    return go


def unordered_lists(results: list[Any]) -> list[Any]:
    """Results whose list values (to_list) are sorted: the order of items inside a frame that several
    processors accumulated is not promised without preserve_order."""
    def fix(value: Any) -> Any:
        return sorted(value, key=repr) if isinstance(value, list) else value
    return [type(r)(**{**r.__dict__, "result": fix(r.result)}) for r in results]


def assert_matches_reference(run, p: Pipeline, *sinks: str) -> None:
    expected, actual = run_reference(p), run(p, *sinks)
    for name in sinks:
        assert expected[name], f"{name}: a test that expects no window proves little"
        assert as_multiset(unordered_lists(actual[name])) == as_multiset(unordered_lists(expected[name])), name


# Events of three keys over [-25, 60): negative times and gaps longer than a window included.
EVENTS = [{"k": k, "t": t, "v": v} for k, t, v in [
    ("a", -25, 1), ("b", -3, 7), ("a", 0, 2), ("a", 4, -5), ("c", 9, 3), ("b", 10, 4), ("a", 10, 8),
    ("c", 19, 6), ("b", 20, 1), ("a", 21, 9), ("a", 29, 0), ("c", 30, 2), ("a", 59, 4), ("b", 44, 5),
]]


@pytest.mark.parametrize("op_name", ["counting", "summing", "averaging", "max_by", "min_by", "to_list", "top_n"])
@pytest.mark.parametrize("keyed", [True, False])
def test_sliding_windows_match_the_brute_force_windows(run, op_name, keyed):
    # sliding(20, 5): each event falls into four windows; counting/summing/averaging slide by deducting
    # the trailing frame, the others (max_by, min_by, to_list, top_n) by two stacks of frames.
    op = {"counting": ops.counting(), "summing": ops.summing("v"), "averaging": ops.averaging("v"),
          "max_by": ops.max_by(lambda e: (e["v"], e["t"])), "min_by": ops.min_by(lambda e: (e["v"], e["t"])),
          "to_list": ops.to_list(), "top_n": ops.top_n(2, lambda e: (e["v"], e["t"]))}[op_name]
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    grouped = stage.grouping_key("k") if keyed else stage
    grouped.window(WindowDefinition.sliding(20, 5)).aggregate(op).write_to(Sinks.list("w"))
    assert_matches_reference(run, p, "w")


def test_a_keyed_tumbling_count_by_hand(run):
    #  t:    -25 ... -3  0    4    9  10       19 20 21       29 30 ...  44 ... 59
    #  a:     x          x    x       x           x         x             ·      x
    #  b:           x                 x           x                       x
    #  windows of 10 aligned to 0: [-30,-20) [-10,0) [0,10) [10,20) [20,30) [30,40) [40,50) [50,60)
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).filter(lambda e: e["k"] != "c").add_timestamps("t").grouping_key("k")
     .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()).write_to(Sinks.list("w")))
    got = run(p, "w")["w"]
    assert sorted(got, key=lambda r: (r.key, r.end)) == [
        KeyedWindowResult(-30, -20, "a", 1), KeyedWindowResult(0, 10, "a", 2), KeyedWindowResult(10, 20, "a", 1),
        KeyedWindowResult(20, 30, "a", 2), KeyedWindowResult(50, 60, "a", 1),
        KeyedWindowResult(-10, 0, "b", 1), KeyedWindowResult(10, 20, "b", 1), KeyedWindowResult(20, 30, "b", 1),
        KeyedWindowResult(40, 50, "b", 1),
    ]


def test_sessions_merge_overlapping_spans_but_not_touching_ones(run):
    # session(10): an event at t spans [t, t+10).
    #   x: 0 [0,10)  5 [5,15)           -> one session [0,15)
    #   y: 0 [0,10)  10 [10,20)         -> touching: two sessions [0,10) and [10,20)
    #   z: 0 [0,10)  14 [14,24)  then 9 [9,19) bridges both -> one session [0,24) of three events
    events = [("x", 0), ("x", 5), ("y", 0), ("y", 10), ("z", 0), ("z", 14), ("z", 9)]
    p = Pipeline.create()
    (p.read_from(Sources.items(events)).add_timestamps(lambda e: e[1]).grouping_key(lambda e: e[0])
     .window(WindowDefinition.session(10)).aggregate(ops.counting()).write_to(Sinks.list("s")))
    got = run(p, "s")["s"]
    assert sorted(got, key=lambda r: (r.key, r.start)) == [
        KeyedWindowResult(0, 15, "x", 2), KeyedWindowResult(0, 10, "y", 1), KeyedWindowResult(10, 20, "y", 1),
        KeyedWindowResult(0, 24, "z", 3),
    ]


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("op_name", ["counting", "summing", "max_by", "to_list"])
def test_sessions_match_the_brute_force_sessions(run, keyed, op_name):
    op = {"counting": ops.counting(), "summing": ops.summing("v"), "max_by": ops.max_by(lambda e: (e["v"], e["t"])),
          "to_list": ops.to_list()}[op_name]
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps(lambda e: e["t"])
    (stage.grouping_key("k") if keyed else stage).window(WindowDefinition.session(10)).aggregate(op) \
        .write_to(Sinks.list("s"))
    assert_matches_reference(run, p, "s")


def test_single_stage_windows_after_a_keyed_rebalance_give_the_same_windows(run, jet):
    # rebalance(key) before a keyed window makes it single-stage (design doc 008): the events, not
    # frames, cross the shuffle; the windows must not change.
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    stage.rebalance("k").grouping_key("k").window(WindowDefinition.sliding(30, 10)).aggregate(ops.summing("v")) \
        .write_to(Sinks.list("one"))
    stage.grouping_key("k").window(WindowDefinition.sliding(30, 10)).aggregate(ops.summing("v")) \
        .write_to(Sinks.list("two"))
    plan = p.explain()
    assert "window aggregate sliding(30ms, slide 10ms) by field 'k', single stage" in plan
    assert "window aggregate sliding(30ms, slide 10ms) by field 'k', stage 1 of 2: accumulate" in plan
    assert_matches_reference(run, p, "one", "two")


def test_filters_may_stand_between_timestamps_and_window_and_windows_of_windows(run):
    # A second window over window results, which carry their time (see the test below).
    p = Pipeline.create()
    counts = (p.read_from(Sources.items(EVENTS)).add_timestamps("t").filter(lambda e: e["v"] > 0)
              .grouping_key("k").window(WindowDefinition.tumbling(10)).aggregate(ops.counting()))
    counts.write_to(Sinks.list("counts"))
    counts.window(WindowDefinition.tumbling(40)).aggregate(ops.summing("result")).write_to(Sinks.list("per40"))
    assert_matches_reference(run, p, "counts", "per40")


def test_early_results_are_ignored_in_a_batch(run):
    # One epoch, one final watermark: every window is complete when emitted, none is early.
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    stage.window(WindowDefinition.tumbling(20).set_early_results_period(1)).aggregate(ops.counting()) \
        .write_to(Sinks.list("w"))
    got = run(p, "w")["w"]
    assert sorted(got, key=lambda r: r.end) == [
        WindowResult(-40, -20, 1), WindowResult(-20, 0, 1), WindowResult(0, 20, 6), WindowResult(20, 40, 4),
        WindowResult(40, 60, 2)]


def test_datetime_timestamps_are_converted_to_milliseconds(run, jet):
    # Aware datetimes from a callable, and Spark TimestampType columns of a DataFrame source (naive
    # local times in Python, as df.collect() gives them).
    base = dt.datetime(2024, 5, 1, 12, 0, 0)
    times = [base + dt.timedelta(milliseconds=ms) for ms in (0, 400, 999, 1000, 2500)]
    base_ms = int(base.timestamp()) * 1000  # a whole second: exact as a float

    p = Pipeline.create()
    df = jet.spark.createDataFrame([(t, i) for i, t in enumerate(times)], "at timestamp, n int")
    p.read_from(Sources.dataframe(df)).add_timestamps("at").window(WindowDefinition.tumbling(1000)) \
        .aggregate(ops.counting()).write_to(Sinks.list("df"))
    utc = [t.astimezone(dt.timezone.utc) for t in times]
    p.read_from(Sources.items(utc)).add_timestamps(lambda t: t).window(WindowDefinition.tumbling(1000)) \
        .aggregate(ops.counting()).write_to(Sinks.list("aware"))
    expected = [WindowResult(base_ms, base_ms + 1000, 3), WindowResult(base_ms + 1000, base_ms + 2000, 1),
                WindowResult(base_ms + 2000, base_ms + 3000, 1)]
    got = run(p, "df", "aware")
    assert sorted(got["df"], key=lambda r: r.end) == expected
    assert sorted(got["aware"], key=lambda r: r.end) == expected


def test_a_timestamp_that_is_not_a_time_fails_the_job_naming_the_stage_that_reads_it(jet, engine):
    # add_timestamps reads each item's time, once (Jet's addTimestamps); the window only reads it back.
    p = Pipeline.create()
    p.read_from(Sources.items([{"t": "noon"}])).add_timestamps("t").set_name("stamp").map(lambda e: e) \
        .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()).write_to(Sinks.noop())
    with pytest.raises(JobFailedError) as e:
        start(jet, p, engine).join(timeout=300)
    assert e.value.stage == "stamp" and "noon" in str(e.value)


def test_a_map_that_drops_the_timestamp_field_keeps_each_items_time(run):
    # The map leaves (k, v) only: the window reads the t that add_timestamps read from the original item.
    #  t:   -25 | -3 | 0  4  9  10  10  19 | 20  21  29  30 | 44  59
    #  k:    a  | b  | a  a  c  b   a   c  | b   a   a   c  | b   a
    #  v:    1  | 7  | 2 -5  3  4   8   6  | 1   9   0   2  | 5   4
    #  tumbling(20): [-40,-20)   [-20,0)   [0,20)            [20,40)          [40,60)
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").map(lambda e: (e["k"], e["v"]))
     .grouping_key(lambda kv: kv[0]).window(WindowDefinition.tumbling(20)).aggregate(ops.summing(lambda kv: kv[1]))
     .write_to(Sinks.list("sums")))
    got = run(p, "sums")["sums"]
    assert sorted(got, key=lambda r: (r.key, r.end)) == [
        KeyedWindowResult(-40, -20, "a", 1), KeyedWindowResult(0, 20, "a", 5), KeyedWindowResult(20, 40, "a", 9),
        KeyedWindowResult(40, 60, "a", 4),
        KeyedWindowResult(-20, 0, "b", 7), KeyedWindowResult(0, 20, "b", 4), KeyedWindowResult(20, 40, "b", 1),
        KeyedWindowResult(40, 60, "b", 5),
        KeyedWindowResult(0, 20, "c", 9), KeyedWindowResult(20, 40, "c", 2),
    ]


def test_every_output_of_a_flat_map_keeps_the_time_of_its_input(run):
    # An event with v > 0 becomes the v items 0..v-1, which know nothing of time: each is counted in
    # its event's window, so a window counts the positive v of its events.
    #  tumbling(20): [-40,-20) 1 | [-20,0) 7 | [0,20) 2+3+4+8+6 | [20,40) 1+9+2 | [40,60) 5+4
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").flat_map(lambda e: range(max(e["v"], 0)))
     .window(WindowDefinition.tumbling(20)).aggregate(ops.counting()).write_to(Sinks.list("counts")))
    got = run(p, "counts")["counts"]
    assert sorted(got, key=lambda r: r.end) == [
        WindowResult(-40, -20, 1), WindowResult(-20, 0, 7), WindowResult(0, 20, 23), WindowResult(20, 40, 12),
        WindowResult(40, 60, 9)]


def test_items_keep_their_times_through_maps_filters_peeks_rebalances_and_merges(run):
    #  items --add_timestamps(t)--> map(v, k) --\
    #                                            merge --> peek --> filter --> rebalance(k) --> window by k
    #  items --add_timestamps(t+100)--> flat_map --/      (each branch's items keep their own times)
    p = Pipeline.create()
    source = p.read_from(Sources.items(EVENTS))
    plain = source.add_timestamps("t").map(lambda e: {"key": e["k"], "n": e["v"]})
    later = source.add_timestamps(lambda e: e["t"] + 100).flat_map(lambda e: [{"key": e["k"], "n": 1}] * 2)
    merged = plain.merge(later).peek().filter(lambda x: x["n"] != 0).rebalance("key")
    merged.grouping_key("key").window(WindowDefinition.sliding(30, 10)).aggregate(ops.summing("n")) \
        .write_to(Sinks.list("sums"))
    merged.window(WindowDefinition.session(15)).aggregate(ops.counting()).write_to(Sinks.list("sessions"))
    assert_matches_reference(run, p, "sums", "sessions")


def test_a_window_result_is_timed_at_its_last_instant(run):
    # Jet's rule: a result's time is end - 1, so a cascade of windows puts each result in the outer window
    # that contains its own. t: 5 | 15 15 | 25
    #  tumbling(10) counts: [0,10) 1 at 9 | [10,20) 2 at 19 | [20,30) 1 at 29
    #  tumbling(20) of those: [0,20) 1 + 2 = 3 | [20,40) 1   (timed at `end` it would be 1 | 3)
    p = Pipeline.create()
    counts = (p.read_from(Sources.items([5, 15, 15, 25])).add_timestamps(lambda t: t)
              .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()))
    counts.window(WindowDefinition.tumbling(20)).aggregate(ops.summing("result")).write_to(Sinks.list("per20"))
    assert sorted(run(p, "per20")["per20"], key=lambda r: r.end) == [WindowResult(0, 20, 3), WindowResult(20, 40, 1)]


def test_window_results_keep_their_time_through_a_map(run):
    # A result's time is kept by a map that turns it into a plain number.
    p = Pipeline.create()
    counts = (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k")
              .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()))
    counts.map(lambda r: r.result).window(WindowDefinition.tumbling(40)).aggregate(ops.summing(lambda n: n)) \
        .write_to(Sinks.list("per40"))
    assert_matches_reference(run, p, "per40")


# Jet's stateful stages keep the time of the input item on what they emit for it (JetEventFunctionAdapter).
#  t:   -25 | -3 | 0  4  9  10  10  19 | 20  21  29  30 | 44  59      (encounter order: EVENTS)
#  k:    a  | b  | a  a  c  b   a   c  | b   a   a   c  | b   a
#  v:    1  | 7  | 2 -5  3  4   8   6  | 1   9   0   2  | 5   4
#  tumbling(20): [-40,-20)   [-20,0)   [0,20)            [20,40)          [40,60)
# Without preserve_order a stateful stage's per-key order is not promised (the items cross four parallel
# processors on the way): there the windows count what the stage emitted, with it they add it up.

@pytest.mark.parametrize("preserve_order", [False, True])
def test_each_output_of_a_keyed_map_stateful_keeps_its_items_time(run, preserve_order):
    # The n-th item of a key becomes (key, n), which knows nothing of time; an item that fails goes to the
    # dead letters, without its time, and leaves the state as it was.
    #  a: n 1 | 2 3 4 | 5 6 | 7     b: 1 | (v=4 fails) | 2 | 3     c: 1 2 | 3
    def number(n: int, k: str, e: dict[str, Any]) -> tuple[int, Any]:
        if e["v"] == 4 and k == "b":
            raise ValueError("four")
        return n + 1, (k, n + 1)

    p = Pipeline.create(preserve_order=preserve_order)
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k").map_stateful(lambda: 0, number)
     .on_error(Sinks.dead_letter("bad"))
     .grouping_key(lambda kn: kn[0]).window(WindowDefinition.tumbling(20))
     .aggregate(ops.summing(lambda kn: kn[1]) if preserve_order else ops.counting())
     .write_to(Sinks.list("sums")))
    got = run(p, "sums", "bad")
    sums = {("a", -20): 1, ("a", 20): 9, ("a", 40): 11, ("a", 60): 7, ("b", 0): 1, ("b", 40): 2, ("b", 60): 3,
            ("c", 20): 3, ("c", 40): 3}
    counts = {("a", -20): 1, ("a", 20): 3, ("a", 40): 2, ("a", 60): 1, ("b", 0): 1, ("b", 40): 1, ("b", 60): 1,
              ("c", 20): 2, ("c", 40): 1}
    expected = [KeyedWindowResult(end - 20, end, k, r) for (k, end), r in (sums if preserve_order else counts).items()]
    assert sorted(got["sums"], key=lambda r: (r.key, r.end)) == sorted(expected, key=lambda r: (r.key, r.end))
    assert [d.record for d in got["bad"]] == [{"k": "b", "t": 10, "v": 4}]
    assert as_multiset(run_reference(p)["sums"]) == as_multiset(expected)


@pytest.mark.parametrize("preserve_order", [False, True])
def test_each_running_result_of_a_rolling_aggregate_keeps_its_items_time(run, preserve_order):
    # Running sums of v per key, each at its item's time; a global window adds them up (or counts them).
    #  a: 1 | 3 -2 6 | 15 15 | 19    b: 7 | 11 | 12 | 17    c: 3 9 | 11
    #  [-40,-20) 1   [-20,0) 7   [0,20) 3-2+6+11+3+9 = 30   [20,40) 12+15+15+11 = 53   [40,60) 19+17 = 36
    p = Pipeline.create(preserve_order=preserve_order)
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t").grouping_key("k").rolling_aggregate(ops.summing("v"))
     .window(WindowDefinition.tumbling(20)).aggregate(ops.summing(lambda kv: kv[1]) if preserve_order else ops.counting())
     .write_to(Sinks.list("sums")))
    results = [1, 7, 30, 53, 36] if preserve_order else [1, 1, 6, 4, 2]
    expected = [WindowResult(end - 20, end, r) for end, r in zip([-20, 0, 20, 40, 60], results)]
    assert sorted(run(p, "sums")["sums"], key=lambda r: r.end) == expected
    assert as_multiset(run_reference(p)["sums"]) == as_multiset(expected)


@pytest.mark.parametrize("preserve_order", [False, True])
@pytest.mark.parametrize("inner", [False, True])
def test_each_output_of_a_hash_join_keeps_its_left_items_time(run, preserve_order, inner):
    # Each event times its weight (a: 10, b: 100; c has none: 1, or dropped by the inner join); the
    # enriching items' own times (far outside every window) are not used. The mapper fails on b at 44.
    #  a: 10 | 50 | 90 | 40     b: 700 | 400 | 100 | (fails)     c: 9 | 2
    weights = [{"k": "a", "t": 1000, "w": 10}, {"k": "b", "t": -1000, "w": 100}]

    def weigh(e: dict[str, Any], r: dict[str, Any] | None) -> tuple[str, int]:
        if e["t"] == 44:
            raise ValueError("44")
        return e["k"], e["v"] * (r["w"] if r else 1)

    p = Pipeline.create(preserve_order=preserve_order)
    stamped = p.read_from(Sources.items(EVENTS)).add_timestamps("t")
    join = stamped.inner_hash_join if inner else stamped.hash_join
    (join(p.read_from(Sources.items(weights)), JoinClause.on("k", "k"), weigh).on_error(Sinks.dead_letter("bad"))
     .grouping_key(lambda kv: kv[0]).window(WindowDefinition.tumbling(20)).aggregate(ops.summing(lambda kv: kv[1]))
     .write_to(Sinks.list("sums")))
    got = run(p, "sums", "bad")
    expected = [
        KeyedWindowResult(-40, -20, "a", 10), KeyedWindowResult(0, 20, "a", 50), KeyedWindowResult(20, 40, "a", 90),
        KeyedWindowResult(40, 60, "a", 40),
        KeyedWindowResult(-20, 0, "b", 700), KeyedWindowResult(0, 20, "b", 400), KeyedWindowResult(20, 40, "b", 100),
    ] + ([] if inner else [KeyedWindowResult(0, 20, "c", 9), KeyedWindowResult(20, 40, "c", 2)])
    assert sorted(got["sums"], key=lambda r: (r.key, r.end)) == expected
    assert [d.record[0]["t"] for d in got["bad"]] == [44]  # (left, right): what the mapper was given
    assert as_multiset(run_reference(p)["sums"]) == as_multiset(expected)


def test_each_output_of_a_hash_join2_keeps_its_left_items_time(run):
    # Two enriching sides, each with times of its own that no window reads: the weight of a key (a: 10,
    # b: 100) times its sign (a: -1); c matches neither and the inner join drops it.
    #  a: -10 | -50 | -90 | -40     b: 700 | 400 | 100 | 500
    weights = [{"k": "a", "t": 1000, "w": 10}, {"k": "b", "t": -1000, "w": 100}, {"k": "c", "t": 5, "w": 1}]
    signs = [{"key": "a", "t": 2000, "s": -1}, {"key": "b", "t": -2000, "s": 1}]
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t")
     .inner_hash_join2(p.read_from(Sources.items(weights)), JoinClause.on("k", "k"),
                       p.read_from(Sources.items(signs)), JoinClause.on("k", "key"),
                       lambda e, w, sign: (e["k"], e["v"] * w["w"] * sign["s"]))
     .grouping_key(lambda kv: kv[0]).window(WindowDefinition.tumbling(20)).aggregate(ops.summing(lambda kv: kv[1]))
     .write_to(Sinks.list("sums")))
    expected = [
        KeyedWindowResult(-40, -20, "a", -10), KeyedWindowResult(0, 20, "a", -50), KeyedWindowResult(20, 40, "a", -90),
        KeyedWindowResult(40, 60, "a", -40),
        KeyedWindowResult(-20, 0, "b", 700), KeyedWindowResult(0, 20, "b", 400), KeyedWindowResult(20, 40, "b", 100),
        KeyedWindowResult(40, 60, "b", 500),
    ]
    assert sorted(run(p, "sums")["sums"], key=lambda r: (r.key, r.end)) == expected
    assert as_multiset(run_reference(p)["sums"]) == as_multiset(expected)


def test_a_rolling_aggregate_with_a_python_operation_before_a_window_keeps_each_items_time(jet, engine):
    # Such an operation runs in Python; what it emits for an item keeps the item's time, as in Jet and the
    # reference, so the window counts each running result where its item was. Counts do not depend on the
    # order the running results come in.
    p = Pipeline.create()
    (p.read_from(Sources.items(EVENTS)).add_timestamps("t")
     .rolling_aggregate(AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"])).set_name("running")
     .window(WindowDefinition.tumbling(20)).aggregate(ops.counting()).write_to(Sinks.list("counts")))
    expected = run_reference(p)["counts"]
    assert expected
    _, (got,) = run_job(jet, p, "counts", engine=engine)
    assert as_multiset(got) == as_multiset(expected)


def test_explain_shows_timestamps_and_both_window_stages(jet):
    #  items(1) -> addTimestamps(4) --local--> windowAggregate-accumulate(4) ==by k==> windowAggregate-combine(4)
    #                               ==all-to-one==> windowAggregate-2 (session, 1)
    p = Pipeline.create()
    stage = p.read_from(Sources.items(EVENTS)).add_timestamps("t", allowed_lag_ms=5)
    stage.grouping_key("k").window(WindowDefinition.sliding(20, 5)).aggregate(ops.counting()).write_to(Sinks.noop())
    stage.window(WindowDefinition.session(7)).aggregate(ops.counting()).write_to(Sinks.noop())
    plan = p.explain(parallelism=4)
    assert "addTimestamps  [parallelism 4]  add timestamps from field 't', lag 5ms" in plan
    assert "windowAggregate-accumulate  [parallelism 4]  window aggregate sliding(20ms, slide 5ms) by field 'k', " \
           "stage 1 of 2: accumulate" in plan
    assert "windowAggregate-accumulate:0 -> windowAggregate-combine:0  partitioned by field 'k' (key extracted upstream)" in plan
    assert "windowAggregate-2  [parallelism 1]  window aggregate session(timeout 7ms) (global), single stage" in plan
    assert "addTimestamps:1 -> windowAggregate-2:0  all-to-one" in plan


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(batch_pipelines(max_steps=3, allowed=frozenset({"window", "map", "filter", "flat_map", "to_kv"}),
                       preserve_order=False))
def test_random_window_pipelines_match_the_reference(jet, generated):
    assume(any("add_timestamps" in step for step in generated.steps))
    problems = mismatches_on_engine(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


@pytest.mark.parametrize("window", [WindowDefinition.sliding(6, 2), WindowDefinition.tumbling(3)])
@pytest.mark.parametrize("keyed", [True, False])
def test_windows_over_a_long_span_come_out_in_slices_and_still_match(run, window, keyed):
    # Times span thousands of slides: after the last item the engine raises the watermark in steps (each
    # emitting a slice of the windows) before the end; no window may be lost or doubled at a step.
    items = [{"k": i % 3, "t": (i * 37) % 4001 - 500, "v": i} for i in range(600)]
    p = Pipeline.create()
    stage = p.read_from(Sources.items(items)).add_timestamps("t")
    (stage.grouping_key("k") if keyed else stage).window(window).aggregate(ops.summing("v")).write_to(Sinks.list("w"))
    stage.rebalance("k").grouping_key("k").window(window).aggregate(ops.max_by("v")).write_to(Sinks.list("single"))
    assert_matches_reference(run, p, "w", "single")
