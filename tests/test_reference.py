"""The reference checked against expectations worked out by hand from API.md, one transform or
operation at a time. Each expected value is written out literally, with the reasoning beside it, so that
a wrong reference cannot agree with itself."""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import pytest
from reference import as_multiset, as_runs, as_sequence, run_reference, run_reference_with_ties

from jetspark import (AggregateOperation, JobFailedError, JoinClause, Pipeline, PipelineDefinitionError, Sinks, Sources,
                      WindowDefinition, WindowResult)
from jetspark import AggregateOperations as ops
from jetspark._extractors import Extractor


def run_one(items, build, preserve_order=False):
    """Runs ``build(source_stage)`` into the sink "out" and returns what it received."""
    p = Pipeline.create(preserve_order)
    build(p.read_from(Sources.items(items))).write_to(Sinks.list("out"))
    return run_reference(p)["out"]


def aggregate_of(items, op):
    """The single result of a global aggregate of ``op`` over ``items``."""
    out = run_one(items, lambda s: s.aggregate(op))
    assert len(out) == 1
    return out[0]


KV = [{"k": "a", "v": 3}, {"k": "b", "v": 1}, {"k": "a", "v": 5}, {"k": "c", "v": 1}, {"k": "b", "v": 4}]


# -- stateless transforms ------------------------------------------------------------------------------

def test_map_transforms_each_item_and_a_none_result_emits_nothing():
    # 1→10, 2→None (dropped, Jet's null rule), 3→30
    assert run_one([1, 2, 3], lambda s: s.map(lambda x: None if x == 2 else x * 10)) == [10, 30]


def test_filter_keeps_items_whose_predicate_is_true():
    assert run_one([1, 2, 3, 4], lambda s: s.filter(lambda x: x % 2 == 0)) == [2, 4]


def test_flat_map_emits_each_result_in_order_and_an_empty_iterable_emits_nothing():
    # 0→[], 1→[1], 2→[2, 2]
    assert run_one([0, 1, 2], lambda s: s.flat_map(lambda x: [x] * x)) == [1, 2, 2]


def test_peek_and_rebalance_change_nothing():
    assert run_one([3, 1, 2], lambda s: s.peek().rebalance().map(lambda x: x).rebalance(abs)
                   .peek(lambda x: f"<{x}>").filter(lambda x: True)) == [3, 1, 2]


def test_an_empty_source_gives_an_empty_list_not_a_missing_one():
    assert run_one([], lambda s: s.map(lambda x: x)) == []


def test_merge_of_two_sources_holds_both_and_a_diamond_keeps_source_order():
    p = Pipeline.create()
    a = p.read_from(Sources.items([1, 2]))
    b = p.read_from(Sources.items([10]))
    a.merge(b).write_to(Sinks.list("two_sources"))
    # The diamond: each record of [1, 2] through both branches; by sequence id, record 1's copies come
    # before record 2's, and at one record the first input's copy comes first.
    a.map(lambda x: x * 100).merge(a.flat_map(lambda x: [-x, -x])).write_to(Sinks.list("diamond"))
    out = run_reference(p)
    assert as_multiset(out["two_sources"]) == as_multiset([1, 2, 10])
    assert out["diamond"] == [100, -1, -1, 200, -2, -2]


def test_a_stage_feeding_two_sinks_gives_each_all_items():
    p = Pipeline.create()
    s = p.read_from(Sources.items([1, 2]))
    s.write_to(Sinks.list("x"))
    s.write_to(Sinks.list("y"))
    assert run_reference(p) == {"x": [1, 2], "y": [1, 2]}


# -- extractors ------------------------------------------------------------------------------------------

Point = namedtuple("Point", "k v")


@dataclass
class Reading:
    k: str
    v: int


@pytest.mark.parametrize("items", [
    [{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 5}],
    [Point("a", 1), Point("a", 2), Point("b", 5)],
    [Reading("a", 1), Reading("a", 2), Reading("b", 5)],
], ids=["dict", "namedtuple", "dataclass"])
def test_a_field_name_reads_a_dict_key_or_an_attribute(items):
    # a: 1 + 2 = 3; b: 5
    assert run_one(items, lambda s: s.grouping_key("k").aggregate(ops.summing("v"))) == [("a", 3), ("b", 5)]


def test_a_column_extractor_is_out_of_the_references_scope():
    # A real Column needs a running Spark; the recorded extractor is what the reference sees anyway.
    column = Extractor("column", "col(k)")
    with pytest.raises(NotImplementedError, match="JVM"):
        run_one([1], lambda s: s.grouping_key(column).aggregate(ops.counting()))


# -- stateful transforms -------------------------------------------------------------------------------

def test_global_map_stateful_threads_the_state_and_none_output_emits_nothing():
    # running sum 1, 3, 6, 10; emit only even running sums → 6, 10
    fn = lambda total, x: (total + x, total + x if (total + x) % 2 == 0 else None)  # noqa: E731
    assert run_one([1, 2, 3, 4], lambda s: s.map_stateful(lambda: 0, fn)) == [6, 10]


def test_keyed_map_stateful_keeps_one_state_per_key():
    # per-key running count, output (key, count): a→1, b→1, a→2, c→1, b→2
    fn = lambda n, key, item: (n + 1, (key, n + 1))  # noqa: E731
    out = run_one(KV, lambda s: s.grouping_key("k").map_stateful(lambda: 0, fn))
    assert out == [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("b", 2)]


def test_global_rolling_aggregate_emits_the_running_result_after_each_item():
    assert run_one([3, 1, 4], lambda s: s.rolling_aggregate(ops.summing(lambda x: x))) == [3, 4, 8]
    # running lists are snapshots: the first one does not grow afterwards
    assert run_one([3, 1], lambda s: s.rolling_aggregate(ops.to_list())) == [[3], [3, 1]]


def test_keyed_rolling_aggregate_emits_key_and_running_result():
    # sums of v per key: a 3, b 1, a 3+5, c 1, b 1+4
    out = run_one(KV, lambda s: s.grouping_key("k").rolling_aggregate(ops.summing("v")))
    assert out == [("a", 3), ("b", 1), ("a", 8), ("c", 1), ("b", 5)]


# -- joins -------------------------------------------------------------------------------------------------

def join(kind, left, right, **mapper):
    p = Pipeline.create()
    ls, rs = p.read_from(Sources.items(left)), p.read_from(Sources.items(right))
    getattr(ls, kind)(rs, JoinClause.on("id", "id"), **mapper).write_to(Sinks.list("out"))
    return run_reference(p)["out"]


def test_hash_join_pairs_every_left_item_with_each_match_and_none_when_unmatched():
    left = [{"id": 1}, {"id": 2}, {"id": 3}]
    right = [{"id": 1, "n": "x"}, {"id": 3, "n": "y"}, {"id": 1, "n": "z"}]
    # id 1 matches x and z (right's order), id 2 nothing → None, id 3 matches y
    assert join("hash_join", left, right, mapper=lambda l, r: (l["id"], r and r["n"])) == [
        (1, "x"), (1, "z"), (2, None), (3, "y")]


def test_inner_hash_join_drops_unmatched_left_items_and_the_default_mapper_gives_pairs():
    left = [{"id": 1}, {"id": 2}]
    right = [{"id": 1, "n": "x"}]
    assert join("inner_hash_join", left, right) == [({"id": 1}, {"id": 1, "n": "x"})]


def test_hash_join_with_an_empty_right_side_keeps_every_left_item():
    assert join("hash_join", [{"id": 1}], []) == [({"id": 1}, None)]


# -- batch aggregations ------------------------------------------------------------------------------

def test_keyed_aggregate_gives_one_key_result_pair_per_key():
    # counts: a 2, b 2, c 1 (keys in first-seen order)
    assert run_one(KV, lambda s: s.grouping_key("k").aggregate(ops.counting())) == [("a", 2), ("b", 2), ("c", 1)]


def test_keyed_aggregate_of_nothing_gives_nothing_but_global_aggregate_gives_one_result():
    assert run_one([], lambda s: s.grouping_key("k").aggregate(ops.counting())) == []
    assert aggregate_of([], ops.counting()) == 0
    assert aggregate_of([], ops.summing(lambda x: x)) == 0
    assert math.isnan(aggregate_of([], ops.averaging(lambda x: x)))
    assert aggregate_of([], ops.to_list()) == []
    assert aggregate_of([], ops.max_by(lambda x: x)) is None


def test_aggregate2_global_gives_one_pair_also_when_a_side_is_empty():
    p = Pipeline.create()
    a, b = p.read_from(Sources.items([1, 2, 3])), p.read_from(Sources.items([]))
    a.aggregate2(b, ops.summing(lambda x: x), ops.counting()).write_to(Sinks.list("out"))
    assert run_reference(p)["out"] == [(6, 0)]  # 1+2+3, and no items counted on the other side


def test_keyed_aggregate2_covers_keys_present_on_only_one_side():
    p = Pipeline.create()
    left = p.read_from(Sources.items([{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3}]))
    right = p.read_from(Sources.items([{"k": "b", "v": 10}, {"k": "c", "v": 20}]))
    left.grouping_key("k").aggregate2(right.grouping_key("k"), ops.summing("v"), ops.to_list()).write_to(
        Sinks.list("out"))
    # a: left 1+3, right nothing → []; b: left 2, right [b10]; c: left nothing → 0, right [c20]
    assert run_reference(p)["out"] == [("a", (4, [])), ("b", (2, [{"k": "b", "v": 10}])),
                                       ("c", (0, [{"k": "c", "v": 20}]))]


def test_distinct_keeps_the_first_occurrence_also_of_unhashable_items():
    assert run_one([3, 1, 3, 2, 1], lambda s: s.distinct()) == [3, 1, 2]
    assert run_one([[1], [2], [1]], lambda s: s.distinct()) == [[1], [2]]


def test_keyed_distinct_keeps_the_first_item_of_each_key():
    assert run_one(KV, lambda s: s.grouping_key("k").distinct()) == [KV[0], KV[1], KV[3]]


def test_sort_is_stable_and_reverse_keeps_equal_keys_in_encounter_order():
    items = [(2, "a"), (1, "b"), (2, "c"), (1, "d")]
    assert run_one([3, 1, 2], lambda s: s.sort()) == [1, 2, 3]
    # by first element: 1s (b, d in encounter order), then 2s (a, c)
    assert run_one(items, lambda s: s.sort(lambda t: t[0])) == [(1, "b"), (1, "d"), (2, "a"), (2, "c")]
    # reversed: 2s first, still a before c; then b before d
    assert run_one(items, lambda s: s.sort(lambda t: t[0], reverse=True)) == [(2, "a"), (2, "c"), (1, "b"), (1, "d")]



def test_sort_ties_are_runs_that_stateless_stages_keep_and_other_orders_are_runs_of_one():
    #  items --> sort(t[0]) --> flat_map(each twice) ==> sorted;   items --> map ==> mapped
    p = Pipeline.create()
    source = p.read_from(Sources.items([(2, "a"), (1, "b"), (3, "e"), (2, "c"), (1, "d"), (1, "f")]))
    source.sort(lambda t: t[0]).flat_map(lambda t: [t, t]).write_to(Sinks.list("sorted"))
    source.map(lambda t: t[1]).write_to(Sinks.list("mapped"))
    results, runs = run_reference_with_ties(p)
    assert results["sorted"][::2] == [(1, "b"), (1, "d"), (1, "f"), (2, "a"), (2, "c"), (3, "e")]
    assert runs == {"sorted": [6, 4, 2], "mapped": [1] * 6}
    swapped = [(1, "f"), (1, "b"), (1, "d"), (1, "b"), (1, "f"), (1, "d")] + results["sorted"][6:]
    assert as_runs(swapped, runs["sorted"]) == as_runs(results["sorted"], runs["sorted"])  # within a run: any order
    crossed = [(2, "a")] + results["sorted"][1:6] + [(1, "b")] + results["sorted"][7:]
    assert as_runs(crossed, runs["sorted"]) != as_runs(results["sorted"], runs["sorted"])  # across runs: never


def test_sort_of_keys_that_do_not_compare_fails_the_run_naming_the_stage():
    with pytest.raises(JobFailedError, match="stage 'sort.*TypeError"):
        run_one([3, "a", 1], lambda s: s.sort())


# -- aggregate operations -----------------------------------------------------------------------------

def test_counting_summing_and_averaging():
    assert aggregate_of(KV, ops.counting()) == 5
    assert aggregate_of(KV, ops.summing("v")) == 14  # 3+1+5+1+4
    assert aggregate_of(KV, ops.averaging("v")) == 2.8  # 14 / 5
    assert aggregate_of([1, 2.5], ops.summing(lambda x: x)) == 3.5  # Python sum: a float makes a float


def test_min_by_and_max_by_return_the_first_item_on_ties():
    # least v is 1: items b and c tie, b came first; greatest v is 5: item a/5
    assert aggregate_of(KV, ops.min_by("v")) == {"k": "b", "v": 1}
    assert aggregate_of(KV, ops.max_by("v")) == {"k": "a", "v": 5}
    tied = [{"k": "x", "v": 7}, {"k": "y", "v": 7}]
    assert aggregate_of(tied, ops.max_by("v")) == {"k": "x", "v": 7}


def test_top_n_and_bottom_n_rank_items_and_ties_keep_the_first_encountered():
    # by v: 5(a), 4(b), 3(a), 1(b), 1(c): top 3 descending; bottom 2 ascending with b/1 before c/1
    assert aggregate_of(KV, ops.top_n(3, "v")) == [KV[2], KV[4], KV[0]]
    assert aggregate_of(KV, ops.bottom_n(2, "v")) == [KV[1], KV[3]]
    assert aggregate_of([2, 9, 4], ops.top_n(5)) == [9, 4, 2]  # no key: the items; fewer than n: all
    assert aggregate_of([{"v": 1, "i": 0}, {"v": 2, "i": 1}, {"v": 2, "i": 2}], ops.top_n(1, "v")) == [
        {"v": 2, "i": 1}]


def test_to_list_and_to_set():
    assert aggregate_of([2, 1, 2], ops.to_list()) == [2, 1, 2]
    assert aggregate_of([2, 1, 2], ops.to_set()) == {1, 2}


def test_linear_trend_is_the_least_squares_slope():
    # points (0,1), (1,3), (2,5) lie on y = 2x + 1: slope 2
    points = [{"x": 0, "y": 1}, {"x": 1, "y": 3}, {"x": 2, "y": 5}]
    assert aggregate_of(points, ops.linear_trend("x", "y")) == 2.0
    # (0,0), (1,1), (2,0): n=3, Σx=3, Σy=1, Σxy=1, Σx²=5 → (3·1 − 3·1) / (3·5 − 9) = 0
    assert aggregate_of([{"x": 0, "y": 0}, {"x": 1, "y": 1}, {"x": 2, "y": 0}], ops.linear_trend("x", "y")) == 0.0
    # one distinct x: the slope is undefined
    assert math.isnan(aggregate_of([{"x": 1, "y": 1}, {"x": 1, "y": 2}], ops.linear_trend("x", "y")))


def test_variance_is_the_population_variance():
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum 32, over n=8 → 4
    assert aggregate_of([2, 4, 4, 4, 5, 5, 7, 9], ops.variance(lambda x: x)) == 4.0
    assert aggregate_of([3], ops.variance(lambda x: x)) == 0.0
    assert math.isnan(aggregate_of([], ops.variance(lambda x: x)))


def test_all_of_gives_a_tuple_of_every_result():
    assert aggregate_of([1, 2, 3], ops.all_of(ops.counting(), ops.summing(lambda x: x), ops.to_list())) == (
        3, 6, [1, 2, 3])


def test_a_user_defined_operation_finishes_and_its_rolling_results_are_exported():
    mean = AggregateOperation.of(create=lambda: [0, 0],
                                 accumulate=lambda acc, x: [acc[0] + x, acc[1] + 1],
                                 export=lambda acc: (acc[0], acc[1]),
                                 finish=lambda acc: acc[0] / acc[1])
    assert aggregate_of([1, 2, 6], mean) == 3.0  # finish: 9 / 3
    assert run_one([1, 2], lambda s: s.rolling_aggregate(mean)) == [(1, 1), (3, 2)]  # export after each
    # without export and finish the accumulator itself is the result; in-place updates do not leak
    # into results already emitted
    appending = AggregateOperation.of(create=list, accumulate=lambda acc, x: acc.append(x) or acc)
    assert run_one([1, 2], lambda s: s.rolling_aggregate(appending)) == [[1], [1, 2]]


# -- errors ---------------------------------------------------------------------------------------------

def test_a_failing_user_function_fails_the_run_naming_the_stage():
    with pytest.raises(JobFailedError, match="stage 'divide' failed on record 3: ZeroDivisionError") as e:
        run_one([1, 3], lambda s: s.map(lambda x: 1 // (x - 3)).set_name("divide"))
    assert e.value.stage == "divide"
    with pytest.raises(JobFailedError, match=r"stage 'aggregate#1' failed on record 'x'"):
        aggregate_of(["x"], ops.summing(lambda x: x))  # 'x' is not a number


def test_a_dead_letter_stage_keeps_the_record_and_the_error_and_the_rest_continues():
    p = Pipeline.create()
    (p.read_from(Sources.items([1, 3, 4])).map(lambda x: 1 + x).map(lambda x: 12 // (x - 4)).set_name("divide")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    # 1→2→12//-2=-6; 3→4→division by zero (the record as it entered 'divide' is 4); 4→5→12
    assert run_reference(p) == {"out": [-6, 12], "dead_letter:bad": [(4, "divide", "ZeroDivisionError")]}


def test_a_failed_record_has_no_effect_on_state_or_accumulators():
    p = Pipeline.create()
    s = p.read_from(Sources.items([1, 0, 2]))
    (s.map_stateful(lambda: 0, lambda total, x: (total + 10 // x, total + 10 // x)).set_name("ms")
     .on_error(Sinks.dead_letter("ms_bad")).write_to(Sinks.list("running")))
    # all_of: the failing part (1/x at 0) must not leave a count behind in the other part
    (s.aggregate(ops.all_of(ops.counting(), ops.summing(lambda x: 1 / x))).set_name("agg")
     .on_error(Sinks.dead_letter("agg_bad")).write_to(Sinks.list("total")))
    out = run_reference(p)
    assert out["running"] == [10, 15]  # 10//1, then 10 + 10//2; the 0 is skipped
    assert out["dead_letter:ms_bad"] == [(0, "ms", "ZeroDivisionError")]
    assert out["total"] == [(2, 1.5)]  # counted 1 and 2 only; 1/1 + 1/2
    assert out["dead_letter:agg_bad"] == [(0, "agg", "ZeroDivisionError")]


def test_a_failing_key_extractor_goes_to_the_dead_letter_of_the_keyed_stage():
    p = Pipeline.create()
    (p.read_from(Sources.items([{"k": 1}, {"j": 2}])).grouping_key("k").aggregate(ops.counting())
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    assert run_reference(p) == {"out": [(1, 1)], "dead_letter:bad": [({"j": 2}, "aggregate#1", "KeyError")]}


# -- comparing -------------------------------------------------------------------------------------------

def test_as_multiset_ignores_order_and_handles_unhashable_items_sets_and_nan():
    assert as_multiset([{"a": [1]}, {1, 2}, float("nan")]) == as_multiset([float("nan"), {2, 1}, {"a": [1]}])
    assert as_multiset([1, 1, 2]) != as_multiset([1, 2, 2])
    assert as_multiset([1]) != as_multiset([1.0])  # types are part of the result
    assert as_multiset([0.1 + 0.2], float_digits=12) == as_multiset([0.3], float_digits=12)
    assert as_sequence([1, 2]) != as_sequence([2, 1])


# -- windows over a batch (API.md "Windows": aligned to 0, [end - size, end), only non-empty windows) ------

def test_reference_sliding_windows_by_hand():
    #  ts:       -1   0   1       3
    #  sliding(4, 2): windows end at multiples of 2 and hold [end-4, end)
    #  [-4,0): -1         [-2,2): -1 0 1     [0,4): 0 1 3     [2,6): 3
    from jetspark import WindowDefinition, WindowResult
    out = run_one([0, 1, 3, -1], lambda s: s.add_timestamps(lambda x: x).window(WindowDefinition.sliding(4, 2))
                  .aggregate(ops.to_list()))
    assert out == [WindowResult(-4, 0, [-1]), WindowResult(-2, 2, [0, 1, -1]), WindowResult(0, 4, [0, 1, 3]),
                   WindowResult(2, 6, [3])]


def test_reference_sessions_by_hand():
    #  timeout 10; key a: 0 [0,10) and 10 [10,20) only touch: two sessions; key b: 3 [3,13), 12 [12,22),
    #  1 [1,11) overlap into one session [1,22) of three events, in encounter order
    from jetspark import KeyedWindowResult, WindowDefinition
    items = [("a", 0), ("b", 3), ("a", 10), ("b", 12), ("b", 1)]
    out = run_one(items, lambda s: s.add_timestamps(lambda e: e[1]).grouping_key(lambda e: e[0])
                  .window(WindowDefinition.session(10)).aggregate(ops.to_list()))
    assert as_multiset(out) == as_multiset([
        KeyedWindowResult(0, 10, "a", [("a", 0)]), KeyedWindowResult(10, 20, "a", [("a", 10)]),
        KeyedWindowResult(1, 22, "b", [("b", 3), ("b", 12), ("b", 1)])])


def test_reference_a_record_failing_in_sliding_windows_is_one_dead_letter_and_in_none_of_them():
    #  ts:  0 (v 1)   1 (fails)   3 (v 2)      sliding(4, 2): [-2,2): 0 1   [0,4): 0 1 3   [2,6): 3
    #  the failing record falls in two windows: one dead letter, and neither window counts it
    p = Pipeline.create()
    count_good = AggregateOperation.of(lambda: 0, lambda a, x: a + 1 // (x != 1), combine=lambda a, b: a + b)
    (p.read_from(Sources.items([0, 1, 3])).add_timestamps(lambda x: x).window(WindowDefinition.sliding(4, 2))
     .aggregate(count_good).set_name("w").on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    assert run_reference(p) == {"out": [WindowResult(-2, 2, 1), WindowResult(0, 4, 2), WindowResult(2, 6, 1)],
                                "dead_letter:bad": [(1, "w", "ZeroDivisionError")]}


@pytest.mark.parametrize("window", [WindowDefinition.sliding(4, 2), WindowDefinition.session(3)])
def test_reference_a_window_that_needs_combine_of_an_operation_without_one_breaks_a_rule(window):
    # Jet's rule: frames combine into a longer window; an event that bridges two sessions merges them.
    no_combine = AggregateOperation.of(list, lambda a, x: a + [x])
    with pytest.raises(PipelineDefinitionError, match="'w' breaks rule 'window-needs-combine'"):
        run_one([1], lambda s: s.add_timestamps(lambda x: x).window(window).aggregate(no_combine).set_name("w"))
    # a tumbling window is one frame: nothing to combine
    assert run_one([1, 5], lambda s: s.add_timestamps(lambda x: x).window(WindowDefinition.tumbling(4))
                   .aggregate(no_combine)) == [WindowResult(0, 4, [1]), WindowResult(4, 8, [5])]
