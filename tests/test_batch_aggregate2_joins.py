"""The Spark batch engine runs aggregate2 (global and keyed), hash joins with two enriching sides and
user-defined aggregate operations (AggregateOperation.of), giving what the brute-force reference gives;
failures of user functions name the stage and the record, or go to a dead-letter sink. The tests taking
the ``engine`` fixture run each pipeline on the local engine (as a light job) too."""

from __future__ import annotations

import math

import pytest
from conftest import examples, run_job, start
from hypothesis import HealthCheck, given, settings
from reference import as_multiset, run_reference
from strategies import batch_pipelines
from test_batch_engine_random import mismatches_on_engine

from jetspark import AggregateOperation, DeadLetter, JobFailedError, JoinClause, Pipeline, Sinks, Sources
from jetspark import AggregateOperations as ops


def run_on_engine(jet, p: Pipeline, lists: list[str], engine: str = "spark") -> tuple[dict[str, list], dict | None]:
    """Runs ``p`` on ``engine`` and returns what each named list got (cleared afterwards) and the job's
    metrics (a Spark job's; a light job has none)."""
    job, got = run_job(jet, p, *lists, engine=engine)
    return dict(zip(lists, got)), job.metrics() if engine == "spark" else None


def assert_matches_reference(jet, p: Pipeline, lists: list[str], engine: str = "spark") -> dict[str, list]:
    """The engine's lists equal the reference's as multisets (floats to 12 digits); returns them."""
    expected = run_reference(p)
    actual, _ = run_on_engine(jet, p, lists, engine)
    for name in lists:
        assert as_multiset(actual[name], 12) == as_multiset(expected[name], 12), name
    return actual


# -- the reference, hand-checked: hash_join2 -------------------------------------------------------------

def two_sided_join(inner: bool) -> Pipeline:
    p = Pipeline.create()
    orders = p.read_from(Sources.items([{"user": 1, "shop": 7}, {"user": 2, "shop": 7}, {"user": 1, "shop": 9}]))
    users = p.read_from(Sources.items([{"id": 1, "name": "ann"}, {"id": 1, "name": "al"}, {"id": 3, "name": "cy"}]))
    shops = p.read_from(Sources.items([{"id": 7, "city": "Oslo"}]))
    join = orders.inner_hash_join2 if inner else orders.hash_join2
    (join(users, JoinClause.on("user", "id"), shops, JoinClause.on("shop", "id"),
          lambda o, u, s: (o["user"], o["shop"], u and u["name"], s and s["city"]))
     .write_to(Sinks.list("joined")))
    return p


def test_reference_hash_join2_gives_every_combination_of_matches_and_none_for_a_missing_side():
    assert as_multiset(run_reference(two_sided_join(inner=False))["joined"]) == as_multiset([
        (1, 7, "ann", "Oslo"), (1, 7, "al", "Oslo"),   # two users match: one output each
        (2, 7, None, "Oslo"),                          # no user: None
        (1, 9, "ann", None), (1, 9, "al", None),       # no shop: None
    ])


def test_reference_inner_hash_join2_drops_items_missing_a_match_on_either_side():
    assert as_multiset(run_reference(two_sided_join(inner=True))["joined"]) == as_multiset([
        (1, 7, "ann", "Oslo"), (1, 7, "al", "Oslo")])


# -- aggregate2 -------------------------------------------------------------------------------------------

def test_global_aggregate2_gives_one_pair_of_results(jet, engine):
    p = Pipeline.create()
    left = p.read_from(Sources.items(list(range(40))))
    right = p.read_from(Sources.items([{"v": v} for v in range(-5, 25)]))
    left.aggregate2(right, ops.counting(), ops.summing("v")).write_to(Sinks.list("pair"))
    (left.filter(lambda x: x > 100).aggregate2(right, ops.all_of(ops.counting(), ops.to_list()), ops.max_by("v"))
     .write_to(Sinks.list("empty_left")))
    actual = assert_matches_reference(jet, p, ["pair", "empty_left"], engine)
    assert actual["pair"] == [(40, sum(range(-5, 25)))]  # spelled out too: the reference is plain Python
    assert actual["empty_left"] == [((0, []), {"v": 24})]


@pytest.mark.parametrize("rebalanced", [False, True])
def test_keyed_aggregate2_co_groups_both_inputs_also_keys_of_one_side_only(jet, engine, rebalanced):
    p = Pipeline.create()
    left = p.read_from(Sources.items(list(range(30))))
    right = p.read_from(Sources.items([{"k": k % 7, "v": k} for k in range(25)]))
    left = left.rebalance() if rebalanced else left
    # keys 0..4 on the left, 0..6 on the right: keys 5 and 6 have results from the right side only
    (left.grouping_key(lambda x: x % 5).aggregate2(right.grouping_key("k"), ops.to_set(), ops.averaging("v"))
     .write_to(Sinks.list("co")))
    assert ("single stage" in p.explain(2)) == rebalanced  # design doc 008: a rebalanced input, one stage
    actual = assert_matches_reference(jet, p, ["co"], engine)
    assert sorted(k for k, _ in actual["co"]) == list(range(7))
    assert dict(actual["co"])[6] == (set(), sum(v for v in range(25) if v % 7 == 6) / 3)


# -- hash joins with two enriching sides --------------------------------------------------------------------

@pytest.mark.parametrize("inner", [False, True])
def test_hash_join2_matches_the_reference(jet, engine, inner):
    p = two_sided_join(inner)
    assert "(enriching inputs 1..2)" in p.explain(2)
    assert_matches_reference(jet, p, ["joined"], engine)


def test_hash_join2_on_many_items_joins_every_partition_with_both_sides(jet, engine):
    p = Pipeline.create()
    items = p.read_from(Sources.items(list(range(500)))).rebalance().map(lambda x: x)
    tens = p.read_from(Sources.items([{"k": k, "tag": f"t{k}"} for k in range(10)]))
    sevens = p.read_from(Sources.items([{"k": k, "tag": f"s{k}"} for k in range(0, 7, 2)]))
    (items.hash_join2(tens, JoinClause.on(lambda x: x % 10, "k"), sevens, JoinClause.on(lambda x: x % 7, "k"),
                      lambda x, a, b: (x, a["tag"], b and b["tag"]))
     .write_to(Sinks.list("many")))
    actual = assert_matches_reference(jet, p, ["many"], engine)
    assert len(actual["many"]) == 500


def test_a_failing_join_mapper_goes_to_the_dead_letter_and_the_rest_is_joined(jet, engine):
    p = Pipeline.create()
    left = p.read_from(Sources.items([0, 1, 2, 3, 4, 5]))
    a = p.read_from(Sources.items([{"k": k, "v": 10 * k} for k in range(3)]))
    b = p.read_from(Sources.items([{"k": 0, "v": 0}, {"k": 1, "v": 1}]))
    (left.hash_join2(a, JoinClause.on(lambda x: x % 3, "k"), b, JoinClause.on(lambda x: x % 2, "k"),
                     lambda x, ra, rb: 100 // (ra["v"] + rb["v"]))
     .set_name("divide").on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("good")))
    expected = run_reference(p)
    actual, _ = run_on_engine(jet, p, ["good", "bad"], engine)
    assert as_multiset(actual["good"]) == as_multiset(expected["good"])
    # The record is what the mapper was given: the left item with its matches.
    assert [d.record for d in actual["bad"]] == [r for r, _, _ in expected["dead_letter:bad"]] == [
        (0, {"k": 0, "v": 0}, {"k": 0, "v": 0})]
    assert actual["bad"][0].stage == "divide" and actual["bad"][0].error.startswith("ZeroDivisionError")


# -- AggregateOperation.of ------------------------------------------------------------------------------

MEAN = AggregateOperation.of(
    create=lambda: [0, 0],
    accumulate=lambda acc, x: [acc[0] + x, acc[1] + 1],
    combine=lambda a, b: [a[0] + b[0], a[1] + b[1]],
    export=lambda acc: acc[0] / acc[1] if acc[1] else None)

#: No combine: one stage; an accumulator updated in place, finished into a result of another type.
DISTINCT_SORTED = AggregateOperation.of(
    create=set,
    accumulate=lambda acc, x: acc.add(x) or acc,
    finish=lambda acc: sorted(acc))


def test_custom_operations_aggregate_keyed_and_global_in_one_and_two_stages(jet, engine):
    assert MEAN.can_combine and not DISTINCT_SORTED.can_combine
    p = Pipeline.create()
    items = p.read_from(Sources.items([(x * 7) % 23 for x in range(60)]))
    items.aggregate(MEAN).write_to(Sinks.list("mean"))
    items.grouping_key(lambda x: x % 4).aggregate(MEAN).write_to(Sinks.list("mean_by_key"))
    items.aggregate(DISTINCT_SORTED).write_to(Sinks.list("distinct"))
    items.grouping_key(lambda x: x % 3).aggregate(DISTINCT_SORTED).write_to(Sinks.list("distinct_by_key"))
    items.filter(lambda x: x > 100).aggregate(MEAN).write_to(Sinks.list("mean_of_nothing"))
    plan = p.explain(2)
    assert "stage 2 of 2: combine" in plan and "single stage" in plan
    actual = assert_matches_reference(jet, p, ["mean", "mean_by_key", "distinct", "distinct_by_key", "mean_of_nothing"], engine)
    assert actual["distinct"] == [sorted({(x * 7) % 23 for x in range(60)})]
    assert actual["mean_of_nothing"] == [None]  # a global aggregation has a result also for no items


def test_custom_rolling_aggregate_emits_the_export_after_each_item(jet, engine):
    p = Pipeline.create(preserve_order=True)
    items = p.read_from(Sources.items([3, 1, 4, 1, 5, 9, 2, 6]))
    items.rolling_aggregate(MEAN).write_to(Sinks.list("running"))
    items.grouping_key(lambda x: x % 2).rolling_aggregate(DISTINCT_SORTED).write_to(Sinks.list("running_by_key"))
    expected = run_reference(p)
    actual, _ = run_on_engine(jet, p, ["running", "running_by_key"], engine)
    assert actual["running"] == expected["running"] == [3.0, 2.0, 8 / 3, 2.25, 2.8, 23 / 6, 25 / 7, 3.875]
    # Without export the running result is the accumulator (finish is for the end only), taken as it was
    # at each item, not as it is later.
    assert as_multiset(actual["running_by_key"]) == as_multiset(expected["running_by_key"])
    assert [r for k, r in actual["running_by_key"] if k == 1] == [{3}, {1, 3}, {1, 3}, {1, 3, 5}, {1, 3, 5, 9}]


def test_a_failing_accumulate_fails_the_job_naming_the_stage_and_the_record(jet, engine):
    p = Pipeline.create()
    divide = AggregateOperation.of(lambda: 0, lambda acc, x: acc + 12 // x, combine=lambda a, b: a + b)
    (p.read_from(Sources.items([4, 3, 0, 6])).grouping_key(lambda x: x % 2).aggregate(divide).set_name("twelve-by")
     .write_to(Sinks.noop()))
    with pytest.raises(JobFailedError) as e:
        start(jet, p, engine).join(timeout=300)
    assert e.value.stage == "twelve-by"
    assert "failed on record 0" in str(e.value) and "ZeroDivisionError" in str(e.value)


def test_a_failing_finish_fails_the_job_naming_the_stage_the_group_and_the_function(jet, engine):
    p = Pipeline.create()
    inverse = AggregateOperation.of(lambda: 0, lambda acc, x: acc + x, combine=lambda a, b: a + b,
                                    finish=lambda acc: 1 / acc)
    (p.read_from(Sources.items([1, -1, 2, 3])).grouping_key(lambda x: x > 1).aggregate(inverse).set_name("inverse")
     .write_to(Sinks.noop()))
    with pytest.raises(JobFailedError) as e:
        start(jet, p, engine).join(timeout=300)
    assert e.value.stage == "inverse"
    # (the key False is the key 0: docs/semantics.md)
    assert "group of key 0" in str(e.value) and "finish" in str(e.value) and "ZeroDivisionError" in str(e.value)


def _collecting_all_but_fives(combine: bool) -> AggregateOperation:
    """A user-defined operation collecting items (sorted at the end) whose accumulate changes the
    accumulator in place and then fails on multiples of five: a failed record must leave no trace."""
    def accumulate(acc: list, x: int) -> list:
        acc.append(x)  # in place, before failing: the engine must not keep it
        if x % 5 == 0:
            raise ValueError(f"no multiples of five: {x}")
        return acc

    return AggregateOperation.of(list, accumulate, combine=(lambda a, b: a + b) if combine else None, finish=sorted)


@pytest.mark.parametrize("combine", [True, False])
def test_a_failing_accumulate_goes_to_the_dead_letter_and_leaves_the_accumulator_as_it_was(jet, engine, combine):
    collect = _collecting_all_but_fives(combine)
    p = Pipeline.create()
    items = p.read_from(Sources.items(list(range(1, 21))))
    (items.grouping_key(lambda x: x % 2).aggregate(collect).set_name("collect")
     .on_error(Sinks.dead_letter("fives")).write_to(Sinks.list("kept")))
    expected = run_reference(p)
    actual, metrics = run_on_engine(jet, p, ["kept", "fives"], engine)
    assert sorted(actual["kept"]) == sorted(expected["kept"]) == [
        (0, [2, 4, 6, 8, 12, 14, 16, 18]), (1, [1, 3, 7, 9, 11, 13, 17, 19])]
    assert sorted(d.record for d in actual["fives"]) == [5, 10, 15, 20]
    assert {(d.stage, d.error.split(":")[0]) for d in actual["fives"]} == {("collect", "ValueError")}
    if metrics is not None:  # a Spark job's
        assert metrics["vertices"]["collect-dead-letter"]["items_in"] == 4


@pytest.mark.parametrize("keyed", [False, True])
def test_aggregate2_of_two_custom_operations_pairs_their_results(jet, engine, keyed):
    p = Pipeline.create()
    left = p.read_from(Sources.items(list(range(25))))
    right = p.read_from(Sources.items([x * 3 for x in range(12)]))
    if keyed:
        # MEAN combines, DISTINCT_SORTED does not: one stage; keys 0..3 left, 0..4 right
        left.grouping_key(lambda x: x % 4).aggregate2(right.grouping_key(lambda x: x % 5), MEAN, DISTINCT_SORTED) \
            .write_to(Sinks.list("pairs"))
        left.grouping_key(lambda x: x % 4).aggregate2(right.grouping_key(lambda x: x % 5), MEAN, MEAN) \
            .write_to(Sinks.list("means"))  # both combine: two stages
    else:
        left.aggregate2(right, MEAN, DISTINCT_SORTED).write_to(Sinks.list("pairs"))
        left.filter(lambda x: x < 0).aggregate2(right, MEAN, MEAN).write_to(Sinks.list("means"))
    actual = assert_matches_reference(jet, p, ["pairs", "means"], engine)
    if keyed:
        assert dict(actual["pairs"])[4] == (None, sorted(x * 3 for x in range(12) if x * 3 % 5 == 4))
    else:
        assert actual["means"] == [(None, sum(x * 3 for x in range(12)) / 12)]


# -- operations mixing a user-defined part with built-in ones: the whole operation runs in Python --------

@pytest.mark.parametrize("keyed", [False, True])
def test_aggregate2_mixing_a_custom_and_a_built_in_operation_pairs_their_results(jet, engine, keyed):
    p = Pipeline.create()
    left = p.read_from(Sources.items(list(range(25))))
    right = p.read_from(Sources.items([x * 3 for x in range(12)]))
    if keyed:
        by4, by5 = left.grouping_key(lambda x: x % 4), right.grouping_key(lambda x: x % 5)
        by4.aggregate2(by5, MEAN, ops.summing(lambda x: x)).write_to(Sinks.list("two_stages"))  # both combine
        by4.aggregate2(by5, ops.max_by(lambda x: x), DISTINCT_SORTED).write_to(Sinks.list("one_stage"))
    else:
        left.aggregate2(right, MEAN, ops.summing(lambda x: x)).write_to(Sinks.list("two_stages"))
        left.aggregate2(right, ops.max_by(lambda x: x), DISTINCT_SORTED).write_to(Sinks.list("one_stage"))
        left.filter(lambda x: x < 0).aggregate2(right.filter(lambda x: x < 0), ops.averaging(lambda x: x), MEAN) \
            .write_to(Sinks.list("of_nothing"))
    plan = p.explain(2)
    assert "stage 2 of 2: combine" in plan and "single stage" in plan
    actual = assert_matches_reference(jet, p, ["two_stages", "one_stage"] + ([] if keyed else ["of_nothing"]), engine)
    rights = [x * 3 for x in range(12)]
    if keyed:
        assert dict(actual["two_stages"])[1] == (sum(range(1, 25, 4)) / 6, sum(x for x in rights if x % 5 == 1))
        # key 4 has right items only: max_by of nothing is None
        assert dict(actual["one_stage"])[4] == (None, sorted(x for x in rights if x % 5 == 4))
    else:
        assert actual["two_stages"] == [(12.0, sum(rights))]
        assert actual["one_stage"] == [(24, rights)]
        (mean_of_nothing, custom_of_nothing), = actual["of_nothing"]
        assert math.isnan(mean_of_nothing) and custom_of_nothing is None


@pytest.mark.parametrize("keyed", [False, True])
def test_all_of_with_a_custom_part_aggregates_in_one_or_two_stages(jet, engine, keyed):
    p = Pipeline.create()
    items = p.read_from(Sources.items([(x * 7) % 23 for x in range(60)]))
    stage = items.grouping_key(lambda x: x % 3) if keyed else items
    # MEAN combines: two stages; DISTINCT_SORTED does not: one stage for the whole operation
    stage.aggregate(ops.all_of(ops.counting(), MEAN, ops.max_by(lambda x: x))).write_to(Sinks.list("combining"))
    stage.aggregate(ops.all_of(DISTINCT_SORTED, ops.summing(lambda x: x), ops.top_n(2))).write_to(Sinks.list("single"))
    plan = p.explain(2)
    assert "stage 2 of 2: combine" in plan and "single stage" in plan
    actual = assert_matches_reference(jet, p, ["combining", "single"], engine)
    values = [(x * 7) % 23 for x in range(60)]
    if keyed:
        zeros = [x for x in values if x % 3 == 0]
        assert dict(actual["combining"])[0] == (len(zeros), sum(zeros) / len(zeros), max(zeros))
        assert dict(actual["single"])[0] == (sorted(set(zeros)), sum(zeros), sorted(zeros, reverse=True)[:2])
    else:
        assert actual["combining"] == [(60, sum(values) / 60, 22)]
        assert actual["single"] == [(list(range(23)), sum(values), [22, 22])]


def test_rolling_aggregate_of_all_of_with_a_custom_part_emits_every_part_after_each_item(jet, engine):
    p = Pipeline.create(preserve_order=True)
    items = p.read_from(Sources.items([3, 1, 4, 1, 5, 9, 2, 6]))
    items.rolling_aggregate(ops.all_of(ops.counting(), MEAN, ops.to_list())).write_to(Sinks.list("running"))
    items.grouping_key(lambda x: x % 2).rolling_aggregate(ops.all_of(DISTINCT_SORTED, ops.max_by(lambda x: x))) \
        .write_to(Sinks.list("running_by_key"))
    expected = run_reference(p)
    actual, _ = run_on_engine(jet, p, ["running", "running_by_key"], engine)
    assert actual["running"] == expected["running"]
    assert actual["running"][:3] == [(1, 3.0, [3]), (2, 2.0, [3, 1]), (3, 8 / 3, [3, 1, 4])]
    assert as_multiset(actual["running_by_key"]) == as_multiset(expected["running_by_key"])
    # Without export the custom part's running result is its accumulator as it was at that item.
    assert [r for k, r in actual["running_by_key"] if k == 0] == [({4}, 4), ({2, 4}, 4), ({2, 4, 6}, 6)]


@pytest.mark.parametrize("combine", [True, False])
def test_a_record_failing_in_the_custom_part_of_all_of_is_a_dead_letter_that_no_part_counts(jet, engine, combine):
    collect = _collecting_all_but_fives(combine)
    p = Pipeline.create()
    items = p.read_from(Sources.items(list(range(1, 21))))
    (items.grouping_key(lambda x: x % 2).aggregate(ops.all_of(ops.counting(), collect, ops.summing(lambda x: x)))
     .set_name("collect").on_error(Sinks.dead_letter("fives")).write_to(Sinks.list("kept")))
    (items.aggregate2(items.map(lambda x: x * 10), ops.to_list(), collect).set_name("co-collect")
     .on_error(Sinks.dead_letter("co-fives")).write_to(Sinks.list("co-kept")))
    expected = run_reference(p)
    actual, metrics = run_on_engine(jet, p, ["kept", "fives", "co-kept", "co-fives"], engine)
    assert sorted(actual["kept"]) == sorted(expected["kept"]) == [
        (0, (8, [2, 4, 6, 8, 12, 14, 16, 18], 80)), (1, (8, [1, 3, 7, 9, 11, 13, 17, 19], 80))]
    assert sorted(d.record for d in actual["fives"]) == [5, 10, 15, 20]
    assert {(d.stage, d.error.split(":")[0]) for d in actual["fives"]} == {("collect", "ValueError")}
    if metrics is not None:  # a Spark job's
        assert metrics["vertices"]["collect-dead-letter"]["items_in"] == 4
    # aggregate2: every right item x*10 fails; the left side's built-in to_list sees every left item
    ((left, right),) = actual["co-kept"]
    assert sorted(left) == list(range(1, 21)) and right == []
    assert sorted(d.record for d in actual["co-fives"]) == list(range(10, 210, 10))


def test_column_values_of_a_dataframe_s_rows_reach_the_built_in_parts_run_in_python(jet):
    from pyspark.sql import functions as F

    df = jet.spark.createDataFrame([(k % 3, k) for k in range(10)], "k int, v int")
    rows = AggregateOperation.of(lambda: 0, lambda acc, row: acc + 1, combine=lambda a, b: a + b)
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).grouping_key("k")
     .aggregate(ops.all_of(ops.summing(F.col("v") * 2), rows, ops.max_by("v"))).write_to(Sinks.list("mixed")))
    actual, metrics = run_on_engine(jet, p, ["mixed"])
    assert metrics["catalyst"] == []  # a user-defined part: not Catalyst's
    # key 0: v = 0, 3, 6, 9
    assert {k: (total, count, best.v) for k, (total, count, best) in actual["mixed"]} == {
        0: (36, 4, 9), 1: (2 * (1 + 4 + 7), 3, 7), 2: (2 * (2 + 5 + 8), 3, 8)}


def test_built_in_parts_run_in_python_give_what_the_jvm_gives(jet, engine):
    # The same built-in operations, once alone (the JVM runs them) and once beside a user-defined part
    # (Python runs them all), over one partition in one order: equal results, floats bit for bit.
    rows = [{"k": i % 2, "n": n, "f": f} for i, (n, f) in enumerate(
        [(2 ** 62, 0.1), (2 ** 62, 0.7), (-3, 1e-3), (True, 2.5), (7, float("nan")), (7, -0.0), (2 ** 70, 0.3)])]
    built_ins = [ops.counting(), ops.summing("n"), ops.averaging("n"), ops.averaging("f"), ops.variance("n"),
                 ops.linear_trend("n", "f"), ops.min_by("n"), ops.max_by("f"), ops.top_n(2, "n"), ops.bottom_n(3, "f"),
                 ops.to_list()]
    p = Pipeline.create()
    stage = p.read_from(Sources.items(rows)).grouping_key("k")
    stage.aggregate(ops.all_of(*built_ins)).set_local_parallelism(1).write_to(Sinks.list("jvm"))
    counting = AggregateOperation.of(lambda: 0, lambda acc, _: acc + 1, combine=lambda a, b: a + b)
    stage.aggregate(ops.all_of(*built_ins, counting)).set_local_parallelism(1).write_to(Sinks.list("python"))
    actual, _ = run_on_engine(jet, p, ["jvm", "python"], engine)
    in_jvm = {k: r for k, r in actual["jvm"]}
    in_python = {k: r[:-1] for k, r in actual["python"]}
    assert as_multiset(in_python.items()) == as_multiset(in_jvm.items())
    assert in_jvm[0][1] == 2 ** 62 - 3 + 7 + 2 ** 70  # exact beyond 64 bits


# -- review findings ------------------------------------------------------------------------------------

def test_a_dead_letter_sink_counts_only_the_dead_letters_of_its_own_stage(jet):
    p = Pipeline.create()
    (p.read_from(Sources.items(list(range(1, 31))))
     .map(lambda x: x if x % 3 else 1 // 0).set_name("threes").on_error(Sinks.dead_letter("no_threes"))
     .map(lambda x: x if x % 5 else 1 // 0).set_name("fives").on_error(Sinks.dead_letter("no_fives"))
     .write_to(Sinks.list("rest")))
    actual, metrics = run_on_engine(jet, p, ["rest", "no_threes", "no_fives"])
    vertices = metrics["vertices"]
    assert "fused(threes, fives)" in vertices  # both stages in one vertex: one failure column for two sinks
    assert len(actual["no_threes"]) == vertices["threes-dead-letter"]["items_in"] == 10
    assert len(actual["no_fives"]) == vertices["fives-dead-letter"]["items_in"] == 4  # 5, 10, 20, 25
    assert vertices["fused(threes, fives)"]["dead_letters"] == 14


def extraction_key(jet, p: Pipeline, vertex: str) -> dict | None:
    """The key that the engine has Python extract from the items entering ``vertex`` (None: none)."""
    from jetspark._protocol import PreparedBatch, bridge

    spec, objects = p.to_spec()
    work = PreparedBatch(bridge(jet.spark), jet.spark, spec, objects, parallelism=2).python_work()
    return next(e["key"] for e in work["extractions"] if e["vertex"] == vertex)


def test_a_global_aggregation_after_a_keyed_rebalance_spreads_its_first_stage_by_that_key(jet):
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(50)))).rebalance(lambda x: x % 7).aggregate(ops.summing(lambda x: x)) \
        .write_to(Sinks.list("total"))
    assert (extraction_key(jet, p, "aggregate-accumulate") or {}).get("kind") == "python"
    assert run_on_engine(jet, p, ["total"])[0]["total"] == [sum(range(50))]


def test_a_sort_after_a_keyed_rebalance_sorts_its_runs_at_the_stage_parallelism(jet):
    p = Pipeline.create(preserve_order=True)  # the sorted order reaches the sink
    items = [(x * 37) % 101 for x in range(200)]
    p.read_from(Sources.items(items)).rebalance(lambda x: x % 7).sort().write_to(Sinks.list("sorted"))
    assert "sort-local  [parallelism 2]" in p.explain(2)
    # The local sort's input is spread by the rebalance key: its extraction gives that key, not one
    # empty key that would send every item to one partition.
    assert (extraction_key(jet, p, "sort-local") or {}).get("kind") == "python"
    actual, metrics = run_on_engine(jet, p, ["sorted"])
    assert actual["sorted"] == sorted(items)
    assert metrics["vertices"]["sort-local"]["items_out"] == 200


# -- random pipelines -------------------------------------------------------------------------------------

#: The step kinds of tests/strategies.py this module adds to the engine, with a few plain ones around them.
CO_AGGREGATING = frozenset({"aggregate2", "join2", "custom_aggregate", "map", "filter", "rebalance_map",
                            "failing_map"})


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(batch_pipelines(max_steps=3, allowed=CO_AGGREGATING, preserve_order=False))
def test_random_co_aggregating_pipelines_match_the_reference(jet, generated):
    problems = mismatches_on_engine(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(batch_pipelines(max_steps=3, allowed=frozenset({"custom_rolling", "map", "filter"}), preserve_order=True))
def test_random_custom_rolling_aggregates_keep_the_reference_order(jet, generated):
    problems = mismatches_on_engine(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)
