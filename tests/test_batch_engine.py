"""The Spark batch engine runs Python pipelines: results equal plain Python's, failures name the stage,
dead letters keep the record and the error, order holds where preserve_order promises it. The tests taking
``run`` run each pipeline as a light job too."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from conftest import examples, run_job

from jetspark import (DeadLetter, JobCancelledError, JobConfig, JobFailedError, JobStatus, JoinClause, Pipeline, Sinks,
                      Sources, WindowDefinition)
from jetspark import AggregateOperations as ops


@pytest.fixture
def run(jet, engine):
    """Runs a pipeline to completion on each engine in turn (a Spark job, a light job) and returns a
    function reading (and clearing) its lists."""
    def go(p: Pipeline, *lists: str) -> list | tuple:
        _, out = run_job(jet, p, *lists, engine=engine)
        return out[0] if len(out) == 1 else tuple(out)
    return go


def test_a_python_chain_gives_what_plain_python_gives(run):
    items = list(range(-50, 150))
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).map(lambda x: None if x % 11 == 0 else x * 3)
     .filter(lambda x: x % 2 == 0).flat_map(lambda x: [x, x + 1]).write_to(Sinks.list("chain")))
    expected = [y for x in items if x % 11 != 0 and (x * 3) % 2 == 0 for y in (x * 3, x * 3 + 1)]
    assert Counter(run(p, "chain")) == Counter(expected)


def test_preserve_order_delivers_the_source_order_to_the_sink(run, jet):
    assert jet.spark.sparkContext.defaultParallelism >= 2  # otherwise order would hold by accident
    items = [f"e{i}" for i in range(300)]
    p = Pipeline.create(preserve_order=True)
    p.read_from(Sources.items(items)).map(str.upper).filter(lambda s: not s.endswith("7")).write_to(Sinks.list("o"))
    assert run(p, "o") == [s.upper() for s in items if not s.endswith("7")]


def test_merge_and_rebalance_keep_every_item(run):
    p = Pipeline.create()
    a = p.read_from(Sources.items(range(100))).rebalance().map(lambda x: ("a", x))
    b = p.read_from(Sources.items(range(50))).map(lambda x: ("b", x))
    a.merge(b).write_to(Sinks.list("m"))
    assert Counter(run(p, "m")) == Counter([("a", x) for x in range(100)] + [("b", x) for x in range(50)])


def test_a_failing_user_function_fails_the_job_naming_the_stage(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2, 0, 4])).map(lambda x: 12 // x).set_name("twelve-by").write_to(Sinks.noop())
    job = jet.new_job(p, JobConfig(name="divides"))
    with pytest.raises(JobFailedError) as e:
        job.join(timeout=300)
    assert e.value.stage == "twelve-by"
    assert "failed on record 0" in str(e.value) and "ZeroDivisionError" in str(e.value)
    assert job.status is JobStatus.FAILED


def test_a_dead_letter_stage_keeps_bad_records_with_their_error_and_the_rest_completes(run, jet):
    p = Pipeline.create()
    (p.read_from(Sources.items([1, 2, 0, 4, 0])).map(lambda x: x - 1).map(lambda x: 12 // (x + 1)).set_name("twelve-by")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("good")))
    job = jet.new_job(p)
    job.join(timeout=300)
    good, bad = jet.get_list("good"), jet.get_list("bad")
    jet.clear_list("good"), jet.clear_list("bad")
    assert Counter(good) == Counter([12, 6, 3])
    # The record as it entered the failing stage (x - 1), the stage, and the error.
    assert bad == [DeadLetter(-1, "twelve-by", "ZeroDivisionError: integer division or modulo by zero")] * 2
    vertices = job.metrics()["vertices"]
    chain = next(v for name, v in vertices.items() if "twelve-by" in name)
    assert (chain["items_in"], chain["items_out"], chain["dead_letters"]) == (5, 3, 2)


def test_metrics_count_items_in_and_out_of_every_vertex(jet):
    p = Pipeline.create()
    p.read_from(Sources.items(range(10))).filter(lambda x: x < 7).write_to(Sinks.noop())
    job = jet.new_job(p)
    job.join(timeout=300)
    vertices = job.metrics()["vertices"]
    assert vertices["items-source"]["items_out"] == 10
    assert vertices["filter"]["items_in"] == 10 and vertices["filter"]["items_out"] == 7
    assert vertices["noop-sink"]["items_in"] == vertices["noop-sink"]["items_out"] == 7
    assert job.status is JobStatus.COMPLETED


def test_a_stage_read_by_two_edges_runs_once(jet):
    # The aggregation's results go to a sink and to a map: computed once and kept for both readers, so
    # every vertex counts each of its items once, and the user's functions run once per item.
    keys = {x % 5 for x in range(50)}
    p = Pipeline.create()
    totals = p.read_from(Sources.items(range(50))).grouping_key(lambda x: x % 5).aggregate(ops.counting()).set_name("totals")
    totals.write_to(Sinks.list("fan-totals"))
    totals.map(lambda kv: kv[1]).set_name("counts").write_to(Sinks.list("fan-counts"))
    job, (got_totals, got_counts) = run_job(jet, p, "fan-totals", "fan-counts")
    assert sorted(got_totals) == sorted((k, 10) for k in keys) and sorted(got_counts) == [10] * len(keys)
    vertices = job.metrics()["vertices"]
    assert vertices["totals-combine"]["items_out"] == len(keys)
    assert vertices["counts"]["items_in"] == vertices["counts"]["items_out"] == len(keys)


def test_the_console_sink_prints_items_on_the_driver(run, capsys):
    p = Pipeline.create(preserve_order=True)
    p.read_from(Sources.items(["a", "b"])).map(str.upper).write_to(Sinks.console())
    run(p)
    assert capsys.readouterr().out.splitlines()[-2:] == ["A", "B"]


def test_a_sink_that_cannot_write_fails_the_job_naming_it(jet):
    # No broker listens on the discard port: the Kafka producer gives up waiting for the topic's metadata.
    p = Pipeline.create()
    (p.read_from(Sources.items([1]))
     .write_to(Sinks.kafka("127.0.0.1:9", "events", **{"kafka.max.block.ms": "1000"})).set_name("to-kafka"))
    with pytest.raises(JobFailedError, match="'to-kafka'.*writing records to Kafka topic events"):
        jet.new_job(p).join(timeout=300)


def test_cancel_stops_a_running_job(jet):
    p = Pipeline.create()
    p.read_from(Sources.items(range(4))).map(lambda x: time.sleep(60) or x).write_to(Sinks.noop())
    job = jet.new_job(p)
    deadline = time.time() + 60
    while job.status is not JobStatus.RUNNING and time.time() < deadline:
        time.sleep(0.05)
    threading.Timer(1.0, job.cancel).start()
    with pytest.raises(JobCancelledError):
        job.join(timeout=120)
    assert job.status is JobStatus.CANCELLED


# ---- aggregations -------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jetspark import AggregateOperation  # noqa: E402

records = st.lists(st.fixed_dictionaries({"k": st.integers(0, 4), "v": st.integers(-10**12, 10**12)}), max_size=60)


def group(items, key):
    groups: dict = {}
    for x in items:
        groups.setdefault(key(x), []).append(x)
    return groups


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records)
def test_keyed_aggregations_equal_a_plain_python_group_by(run, items):
    p = Pipeline.create()
    stage = p.read_from(Sources.items(items))
    stage.grouping_key("k").aggregate(ops.summing("v")).write_to(Sinks.list("sum"))
    stage.grouping_key(lambda e: e["k"] % 2).aggregate(ops.counting()).write_to(Sinks.list("count"))
    stage.grouping_key("k").aggregate(ops.all_of(ops.max_by("v"), ops.to_list())).write_to(Sinks.list("max"))
    got_sum, got_count, got_max = run(p, "sum", "count", "max")
    assert sorted(got_sum) == sorted((k, sum(x["v"] for x in xs)) for k, xs in group(items, lambda x: x["k"]).items())
    assert sorted(got_count) == sorted((k, len(xs)) for k, xs in group(items, lambda x: x["k"] % 2).items())
    # max_by: the greatest value (any item holding it when values tie); to_list: every item of the key
    # (in some order: no preserve_order here).
    expected_max = {k: max(x["v"] for x in xs) for k, xs in group(items, lambda x: x["k"]).items()}
    assert {k: best["v"] for k, (best, _) in got_max} == expected_max
    assert {k: sorted(map(repr, xs)) for k, (_, xs) in got_max} == \
        {k: sorted(map(repr, xs)) for k, xs in group(items, lambda x: x["k"]).items()}


def test_global_aggregations_of_nothing_still_give_one_result(run):
    p = Pipeline.create()
    empty = p.read_from(Sources.items([]))
    empty.aggregate(ops.counting()).write_to(Sinks.list("n"))
    empty.aggregate(ops.averaging(lambda x: x)).write_to(Sinks.list("mean"))
    n, mean = run(p, "n", "mean")
    assert n == [0] and len(mean) == 1 and mean[0] != mean[0]  # NaN


def test_single_stage_and_two_stage_aggregations_agree(run):
    items = [{"k": i % 5, "v": i * i} for i in range(200)]
    p = Pipeline.create()
    s = p.read_from(Sources.items(items))
    s.grouping_key("k").aggregate(ops.variance("v")).write_to(Sinks.list("two"))
    s.rebalance().grouping_key("k").aggregate(ops.variance("v")).write_to(Sinks.list("one"))  # doc 008: single stage
    two, one = run(p, "two", "one")
    expected = {}
    for k, xs in group(items, lambda x: x["k"]).items():
        vs = [x["v"] for x in xs]
        mean = sum(vs) / len(vs)
        expected[k] = sum((v - mean) ** 2 for v in vs) / len(vs)
    for got in (two, one):
        assert {k: round(v, 6) for k, v in got} == {k: round(v, 6) for k, v in expected.items()}


def test_a_key_function_that_fails_fails_the_job_naming_the_aggregation(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([{"k": 1}, {}])).grouping_key(lambda e: e["k"]).aggregate(ops.counting()) \
        .write_to(Sinks.noop())
    with pytest.raises(JobFailedError, match="KeyError") as e:
        jet.new_job(p).join(timeout=300)
    assert e.value.stage is not None and "aggregate" in e.value.stage


def test_a_dataframe_source_gives_its_rows_as_items(run, jet):
    df = jet.spark.createDataFrame([(i, f"user{i % 3}", i * 1.5) for i in range(30)], "id INT, user STRING, amount DOUBLE")
    p = Pipeline.create()
    rows = p.read_from(Sources.dataframe(df))
    rows.grouping_key("user").aggregate(ops.summing("amount")).write_to(Sinks.list("by_user"))
    rows.filter(lambda r: r.id % 10 == 0).map(lambda r: (r.id, r["user"])).write_to(Sinks.list("picked"))
    by_user, picked = run(p, "by_user", "picked")
    assert sorted(by_user) == sorted((f"user{u}", sum(i * 1.5 for i in range(30) if i % 3 == u)) for u in range(3))
    assert sorted(picked) == [(0, "user0"), (10, "user1"), (20, "user2")]


def test_distinct_keeps_one_item_per_distinct_item_or_key(run):
    items = [{"k": i % 4, "v": i % 7} for i in range(60)]
    p = Pipeline.create()
    stage = p.read_from(Sources.items(items))
    stage.map(lambda e: (e["k"], e["v"])).distinct().write_to(Sinks.list("pairs"))
    stage.grouping_key("k").distinct().write_to(Sinks.list("per_key"))
    pairs, per_key = run(p, "pairs", "per_key")
    assert sorted(pairs) == sorted({(e["k"], e["v"]) for e in items})
    # One item of each key, and an item of that key (which one depends on arrival order here).
    assert sorted(e["k"] for e in per_key) == [0, 1, 2, 3] and all(e in items for e in per_key)


@pytest.mark.parametrize("preserve_order", [False, True], ids=["preserve_order off", "preserve_order on"])
def test_sort_orders_all_items_by_key(run, preserve_order):
    # The sorted order reaches the sinks, with or without preserve_order, as in Jet (a sort's one
    # processor feeds its sinks), also through a map and a global map_stateful after the sort.
    items = [{"k": (i * 7) % 10, "n": i} for i in range(80)]
    p = Pipeline.create(preserve_order=preserve_order)
    stage = p.read_from(Sources.items(items))
    stage.sort(key="k").write_to(Sinks.list("up"))
    stage.sort(key=lambda e: e["k"], reverse=True).write_to(Sinks.list("down"))
    plain = stage.map(lambda e: e["n"] % 13).sort()
    plain.write_to(Sinks.list("plain"))
    plain.map(lambda x: -x).write_to(Sinks.list("negated"))
    plain.map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("numbered"))
    up, down, plain, negated, numbered = run(p, "up", "down", "plain", "negated", "numbered")
    assert plain == sorted(i % 13 for i in range(80))
    assert negated == [-x for x in sorted(i % 13 for i in range(80))]
    assert numbered == list(enumerate(sorted(i % 13 for i in range(80))))
    # By key; equal keys in no guaranteed order (a sort is order-producing, design doc 015).
    for got, reverse in ((up, False), (down, True)):
        assert [e["k"] for e in got] == sorted((e["k"] for e in items), reverse=reverse)
        assert sorted(got, key=lambda e: e["n"]) == items


def test_rolling_aggregate_emits_the_running_result_after_each_item(run):
    items = [{"k": i % 3, "v": (i * 5) % 11} for i in range(40)]
    p = Pipeline.create()
    p.read_from(Sources.items(items)).grouping_key("k").rolling_aggregate(ops.counting()).write_to(Sinks.list("counts"))
    ordered = Pipeline.create(preserve_order=True)
    ordered.read_from(Sources.items(items)).rolling_aggregate(ops.summing("v")).write_to(Sinks.list("sums"))
    counts = run(p, "counts")
    sums = run(ordered, "sums")
    # Running counts of a key are 1..n whatever the arrival order; with order kept, running sums are prefix sums.
    assert sorted(counts) == sorted((k, n) for k in range(3) for n in range(1, sum(1 for e in items if e["k"] == k) + 1))
    assert sums == [sum(e["v"] for e in items[: i + 1]) for i in range(len(items))]


def test_map_stateful_keeps_state_per_key_or_one_state(run):
    items = list(range(30))
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).grouping_key(lambda x: x % 4)
     .map_stateful(lambda: 0, lambda seen, key, x: (seen + 1, (key, seen + 1))).write_to(Sinks.list("nth")))
    ordered = Pipeline.create(preserve_order=True)
    (ordered.read_from(Sources.items(items))
     .map_stateful(lambda: None, lambda prev, x: (x, None if prev is None else x - prev)).write_to(Sinks.list("diffs")))
    nth = run(p, "nth")
    diffs = run(ordered, "diffs")
    # The n-th item of a key is numbered n whatever the order; a None output emits nothing.
    assert sorted(nth) == sorted((k, n) for k in range(4) for n in range(1, sum(1 for x in items if x % 4 == k) + 1))
    assert diffs == [1] * (len(items) - 1)


def test_map_stateful_sends_failing_records_to_its_dead_letter_and_keeps_the_state(run):
    p = Pipeline.create(preserve_order=True)
    (p.read_from(Sources.items([1, 2, 0, 3]))
     .map_stateful(lambda: 0, lambda total, x: (total + 12 // x, total + 12 // x)).set_name("running")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("totals")))
    totals, bad = run(p, "totals", "bad")
    assert totals == [12, 18, 22]
    assert bad == [DeadLetter(0, "running", "ZeroDivisionError: integer division or modulo by zero")]


def test_a_job_cancelled_right_after_it_starts_ends_cancelled(jet):
    p = Pipeline.create()
    p.read_from(Sources.items(range(4))).map(lambda x: time.sleep(30) or x).write_to(Sinks.list("never"))
    job = jet.new_job(p)
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=120)
    assert job.status is JobStatus.CANCELLED and jet.get_list("never") == []


def test_dataframe_items_equal_the_rows_spark_itself_collects(run, jet):
    import datetime

    df = jet.spark.createDataFrame(
        [(1, {"a": 1}, (2, "x"), [1, 2], datetime.datetime(2026, 1, 2, 3, 4, 5)),
         (2, {}, (3, "y"), [], None)],
        "id INT, props MAP<STRING, INT>, inner STRUCT<n: INT, s: STRING>, xs ARRAY<INT>, at TIMESTAMP")
    p = Pipeline.create()
    p.read_from(Sources.dataframe(df)).write_to(Sinks.list("rows"))
    p.read_from(Sources.dataframe(df)).map(lambda r: (r.props.get("a"), r.inner.s, r["count"] if "count" in r else None)) \
        .write_to(Sinks.list("fields"))
    rows, fields = run(p, "rows", "fields")
    assert sorted(rows, key=lambda r: r.id) == sorted(df.collect(), key=lambda r: r.id)
    assert sorted(fields, key=repr) == sorted([(1, "x", None), (None, "y", None)], key=repr)


def test_hash_join_matches_a_nested_loop_join(run):
    orders = [{"id": i, "user": i % 5} for i in range(25)]
    users = [{"uid": u, "name": f"u{u}"} for u in (0, 1, 1, 3)]  # user 1 twice, users 2 and 4 missing
    p = Pipeline.create()
    left = p.read_from(Sources.items(orders))
    right = p.read_from(Sources.items(users))
    left.hash_join(right, JoinClause.on("user", "uid")).write_to(Sinks.list("outer"))
    left.inner_hash_join(right, JoinClause.on(lambda o: o["user"], lambda u: u["uid"]),
                         mapper=lambda o, u: (o["id"], u["name"])).write_to(Sinks.list("inner"))
    outer, inner = run(p, "outer", "inner")
    # Every left item with each match (one output per match), or with None when nothing matches.
    expected_outer = []
    for o in orders:
        matches = [u for u in users if u["uid"] == o["user"]]
        expected_outer += [(o, u) for u in matches] or [(o, None)]
    expected_inner = [(o["id"], u["name"]) for o in orders for u in users if u["uid"] == o["user"]]
    assert sorted(outer, key=repr) == sorted(expected_outer, key=repr)
    assert sorted(inner) == sorted(expected_inner)


def test_a_failing_join_mapper_sends_the_pair_to_its_dead_letter(run):
    p = Pipeline.create()
    left = p.read_from(Sources.items([1, 2, 3]))
    right = p.read_from(Sources.items([2]))
    (left.hash_join(right, JoinClause.on(lambda x: x, lambda x: x), mapper=lambda l, r: l // (r - 2 if r else 1))
     .set_name("divide").on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("ok")))
    ok, bad = run(p, "ok", "bad")
    assert sorted(ok) == [1, 3]
    assert bad == [DeadLetter((2, 2), "divide", "ZeroDivisionError: integer division or modulo by zero")]


def test_a_cached_source_stays_cached_after_the_job(run, jet):
    # df (cached by the user) --> grouping_key("k").aggregate      (Catalyst reads the user's DataFrame as is)
    # df (cached by the user) --> map, filter+map, aggregate       (a fan-out, which the engine keeps for its readers)
    from pyspark import StorageLevel

    df = jet.spark.range(0, 30, 1, 2).selectExpr("id", "id % 3 AS k").cache()
    df.count()
    alone = Pipeline.create()
    alone.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.counting()).write_to(Sinks.list("counts"))
    assert sorted(run(alone, "counts")) == [(0, 10), (1, 10), (2, 10)]
    assert df.storageLevel != StorageLevel.NONE, "a job that read the DataFrame alone dropped the user's cache"

    fanned = Pipeline.create()
    rows = fanned.read_from(Sources.dataframe(df))
    rows.map(lambda r: r.id).write_to(Sinks.list("ids"))
    rows.filter(lambda r: r.k == 0).map(lambda r: r.id).write_to(Sinks.list("zeros"))
    rows.grouping_key("k").aggregate(ops.counting()).write_to(Sinks.list("counts"))
    ids, zeros, counts = run(fanned, "ids", "zeros", "counts")
    assert sorted(ids) == list(range(30)) and sorted(zeros) == list(range(0, 30, 3))
    assert sorted(counts) == [(0, 10), (1, 10), (2, 10)]
    assert df.storageLevel != StorageLevel.NONE, "a job that read the DataFrame in several branches dropped the user's cache"
    df.unpersist()
