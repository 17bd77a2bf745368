"""Hypothesis runs over random pipelines and inputs: the generated pipelines are valid definitions whose
functions a Spark worker could run, and the reference is deterministic and keeps invariants that can be
stated without it (counts add up, one result per key, sorting permutes, ...)."""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import pickle
import random
from collections import Counter

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset, as_runs, as_sequence, run_reference, run_reference_with_ties
from stream_reference import run_stream_reference
from stream_strategies import stream_inputs
from strategies import batch_pipelines, int_items, kv_items

from jetspark import AggregateOperations as ops
from jetspark import JoinClause, Pipeline, Sinks, Sources, WindowDefinition

FAST = settings(max_examples=examples(50), deadline=None)


def single(items, build, preserve_order=False):
    p = Pipeline.create(preserve_order)
    build(p.read_from(Sources.items(items))).write_to(Sinks.list("out"))
    return run_reference(p)["out"]


def canonical_results(results):
    """Results in a form where NaN equals NaN and sets compare regardless of iteration order; each
    sink's order still counts."""
    return {name: as_sequence(items) for name, items in results.items()}


# -- generated pipelines ------------------------------------------------------------------------------

def test_nontrivial_pipelines_start_from_several_keys_and_values_even_in_the_first_derandomized_example():
    sources = []

    @settings(max_examples=1, derandomize=True, database=None, deadline=None)
    @given(batch_pipelines(nontrivial=True))
    def first(g):
        sources.extend(ast.literal_eval(step.split(" = items(", 1)[1][:-1]) for step in g.steps if " = items(" in step)

    first()
    assert sources and all(len(items) >= 4 and len({repr(i) for i in items}) >= 3 for items in sources), sources


@FAST
@given(batch_pipelines())
def test_every_generated_pipeline_is_a_json_able_definition_with_unique_sinks(g):
    spec, _ = g.pipeline.to_spec()
    json.dumps(spec)  # what crosses to the JVM
    assert len(set(g.sinks)) == len(g.sinks) >= 1
    sink_names = [n["args"]["sink"]["params"]["name"] for n in spec["nodes"] if n["op"] == "sink"]
    assert sorted(sink_names) == sorted(g.sinks)
    assert set(g.exact_order) == set(g.sinks) == set(g.sorted_runs)
    assert g.pipeline.preserve_order or not any(g.exact_order.values())  # no order is promised without it
    # design doc 008: an unkeyed rebalance would break a preserve_order pipeline (every sink is order-sensitive)
    if g.pipeline.preserve_order:
        assert all(r != "round_robin" for n in spec["nodes"] for r in n["rebalance"])


@FAST
@given(batch_pipelines())
def test_the_reference_is_deterministic_and_fills_every_sink(g):
    first, second = g.expected(), run_reference(g.pipeline)
    assert canonical_results(first) == canonical_results(second)
    assert set(first) == set(g.sinks) | {f"dead_letter:{d}" for d in g.dead_letters}
    for name, records in first.items():
        if name.startswith("dead_letter:"):
            assert all(error == "ZeroDivisionError" for _, _, error in records)  # the only failing function


@FAST
@given(batch_pipelines())
def test_mismatches_accept_a_reordering_only_where_no_order_is_promised(g):
    expected = g.expected()
    assert g.mismatches(expected) == []
    for name in g.sinks:
        reordered = dict(expected)
        reordered[name] = list(reversed(expected[name]))
        if as_sequence(reordered[name]) == as_sequence(expected[name]):
            continue  # a palindrome: no reordering to detect
        if g.sorted_runs[name] and not g.exact_order[name]:
            runs = run_reference_with_ties(g.pipeline)[1][name]
            tied = as_runs(reordered[name], runs) == as_runs(expected[name], runs)
            assert bool(g.mismatches(reordered)) == (not tied)  # only a reordering within ties is accepted
        else:
            assert bool(g.mismatches(reordered)) == g.exact_order[name]
        assert g.mismatches({**expected, name: expected[name] + [object()]})  # an extra item never matches


class _WorkerUnpickler(pickle.Unpickler):
    """Loads like a Spark worker would: the test modules are not importable there."""

    def find_class(self, module: str, name: str):
        if module.split(".")[0] in {"strategies", "reference", "conftest"} or module.startswith("test_"):
            raise AssertionError(f"a pickled function needs the test module {module}.{name}")
        return super().find_class(module, name)


@FAST
@given(batch_pipelines())
def test_generated_functions_pickle_by_value_and_behave_the_same_after_a_round_trip(g):
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    payload = cloudpickle.dumps(g.pipeline)
    copy = _WorkerUnpickler(io.BytesIO(payload)).load()
    assert canonical_results(run_reference(copy)) == canonical_results(g.expected())


# -- invariants of single transforms on random inputs ---------------------------------------------------

@FAST
@given(kv_items)
def test_keyed_counting_gives_one_result_per_distinct_key_adding_up_to_the_input_size(items):
    out = single(items, lambda s: s.grouping_key("k").aggregate(ops.counting()))
    assert len(out) == len({d["k"] for d in items})
    assert dict(out) == dict(Counter(d["k"] for d in items))
    assert sum(count for _, count in out) == len(items)


@FAST
@given(int_items)
def test_global_aggregates_agree_with_plain_python(items):
    assert single(items, lambda s: s.aggregate(ops.counting())) == [len(items)]
    assert single(items, lambda s: s.aggregate(ops.summing(lambda x: x))) == [sum(items)]
    assert single(items, lambda s: s.aggregate(ops.to_set())) == [set(items)]
    top = single(items, lambda s: s.aggregate(ops.top_n(3)))[0]
    assert top == sorted(items, reverse=True)[:3]


@FAST
@given(int_items, st.randoms(use_true_random=False))
def test_order_insensitive_results_do_not_depend_on_input_order(items, rnd: random.Random):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    for build in (lambda s: s.grouping_key(lambda x: x % 3).aggregate(ops.all_of(ops.counting(), ops.to_set())),
                  lambda s: s.aggregate(ops.summing(lambda x: x)),
                  lambda s: s.map(lambda x: x * 2).filter(lambda x: x % 3 != 0).flat_map(lambda x: [x, x])):
        assert as_multiset(single(items, build)) == as_multiset(single(shuffled, build))


@FAST
@given(int_items)
def test_sort_permutes_into_order_and_distinct_keeps_each_value_once(items):
    assert single(items, lambda s: s.sort()) == sorted(items)
    assert single(items, lambda s: s.sort(reverse=True)) == sorted(items, reverse=True)
    out = single(items, lambda s: s.distinct())
    assert sorted(out) == sorted(set(items)) and len(out) == len(set(items))


@FAST
@given(int_items)
def test_rolling_aggregate_emits_one_result_per_item_ending_in_the_aggregate(items):
    rolling = single(items, lambda s: s.rolling_aggregate(ops.summing(lambda x: x)))
    assert len(rolling) == len(items)
    assert rolling == [sum(items[: i + 1]) for i in range(len(items))]


@FAST
@given(int_items, kv_items)
def test_hash_join_emits_max_of_one_and_the_match_count_per_left_item(left, right):
    p = Pipeline.create()
    ls, rs = p.read_from(Sources.items(left)), p.read_from(Sources.items(right))
    clause = JoinClause.on(lambda x: x % 4, "k")
    ls.hash_join(rs, clause).write_to(Sinks.list("outer"))
    ls.inner_hash_join(rs, clause).write_to(Sinks.list("inner"))
    out = run_reference(p)
    matches = [sum(1 for r in right if r["k"] == x % 4) for x in left]
    assert len(out["outer"]) == sum(max(1, m) for m in matches)
    assert len(out["inner"]) == sum(matches)
    assert as_multiset(out["inner"]) == as_multiset(pair for pair in out["outer"] if pair[1] is not None)


@FAST
@given(int_items, int_items)
def test_merge_holds_both_inputs_and_keyed_aggregate2_covers_the_union_of_keys(a, b):
    p = Pipeline.create()
    sa, sb = p.read_from(Sources.items(a)), p.read_from(Sources.items(b))
    sa.merge(sb).write_to(Sinks.list("merged"))
    (sa.grouping_key(lambda x: x % 3).aggregate2(sb.grouping_key(lambda x: x % 3), ops.counting(), ops.counting())
     .write_to(Sinks.list("co")))
    out = run_reference(p)
    assert as_multiset(out["merged"]) == as_multiset(a + b)
    assert {k for k, _ in out["co"]} == {x % 3 for x in a + b}
    assert sum(c0 + c1 for _, (c0, c1) in out["co"]) == len(a) + len(b)


@FAST
@given(int_items)
def test_dead_letters_and_outputs_account_for_every_record(items):
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).map(lambda x: 60 // (x % 4)).on_error(Sinks.dead_letter("bad"))
     .write_to(Sinks.list("out")))
    out = run_reference(p)
    assert len(out["out"]) + len(out["dead_letter:bad"]) == len(items)
    assert [r for r, _, _ in out["dead_letter:bad"]] == [x for x in items if x % 4 == 0]


# -- the reference against a second, functional model on random stateless chains --------------------------

#: Stateless steps as (kind, function) with the plain-Python meaning beside: the model below applies
#: them as list comprehensions, the reference through a pipeline.
_STATELESS_STEPS = [
    ("map", lambda x: x * 2 - 3),
    ("map", lambda x: None if x % 3 == 0 else x),
    ("filter", lambda x: x % 2 == 0),
    ("filter", lambda x: x > 0),
    ("flat_map", lambda x: [x, -x]),
    ("flat_map", lambda x: range(x % 3)),
]


def _model(items, steps):
    for kind, fn in steps:
        if kind == "map":
            items = [y for y in (fn(x) for x in items) if y is not None]
        elif kind == "filter":
            items = [x for x in items if fn(x)]
        else:
            items = [y for x in items for y in fn(x)]
    return items


@FAST
@given(int_items, st.lists(st.sampled_from(_STATELESS_STEPS), max_size=6))
def test_a_random_stateless_chain_equals_its_list_comprehension_model_in_order(items, steps):
    def build(stage):
        for kind, fn in steps:
            stage = getattr(stage, kind)(fn)
        return stage

    assert single(items, build) == _model(items, steps)


@pytest.mark.parametrize("module", ["reference.py", "stream_reference.py"])
def test_the_reference_imports_no_engine_code(module):
    # An independent reference: only the public definition API, never the engine or its Python steps.
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parent / module).read_text())
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in modules if m and m.startswith(("jetspark", "pyspark"))} == {"jetspark"}


# -- stream inputs ------------------------------------------------------------------------------------------

STREAM_WINDOWS = [WindowDefinition.tumbling(10), WindowDefinition.sliding(20, 5), WindowDefinition.session(8)]


def windowed(stage, window, keyed):
    stage = stage.grouping_key("k") if keyed else stage
    return stage.window(window).aggregate(ops.counting()).set_name("w")


@FAST
@given(stream_inputs(), st.booleans())
def test_every_stream_item_is_late_or_counted_in_exactly_one_tumbling_window(s, keyed):
    p = Pipeline.create()
    windowed(s.source(p), WindowDefinition.tumbling(10), keyed).write_to(Sinks.list("out"))
    out = run_stream_reference(p)
    assert sum(r.result for r in out.outputs["out"]) + out.late_dropped["w"] == sum(map(len, s.substreams))


@FAST
@given(stream_inputs(), st.sampled_from(STREAM_WINDOWS), st.booleans())
def test_a_lag_beyond_the_drawn_disorder_drops_nothing_and_gives_the_batch_windows(s, window, keyed):
    # No item is more than 60 ms behind its substream's latest: with a lag of 100 none is late, whatever
    # the cut, and the windows are those of the batch over every item.
    s = dataclasses.replace(s, allowed_lag_ms=100)
    stream_p, batch_p = Pipeline.create(), Pipeline.create()
    windowed(s.source(stream_p), window, keyed).write_to(Sinks.list("out"))
    items = [item for substream in s.substreams for item in substream]
    windowed(batch_p.read_from(Sources.items(items)).add_timestamps("t"), window, keyed).write_to(Sinks.list("out"))
    out = run_stream_reference(stream_p)
    assert out.late_dropped == {"w": 0}
    assert as_multiset(out.outputs["out"]) == as_multiset(run_reference(batch_p)["out"])


def test_stream_inputs_draw_skewed_substreams_with_out_of_order_items_and_late_drops():
    seen = set()

    @settings(max_examples=100, database=None, derandomize=True)
    @given(stream_inputs())
    def draw(s):
        # a second's skew: no substream's own steps (at most 15 items of 15 ms) reach 500 ms
        latest = [max(item["t"] for item in substream) for substream in s.substreams if substream]
        seen.add("skew" if len(latest) > 1 and max(latest) - min(latest) >= 500 else "no skew")
        seen.update({"out of order" for sub in s.substreams for a, b in zip(sub, sub[1:]) if b["t"] < a["t"]})
        seen.update({"empty substream" for sub in s.substreams if not sub} | {f"k={s.items_per_batch}"})
        p = Pipeline.create()
        windowed(s.source(p), WindowDefinition.tumbling(10), True).write_to(Sinks.list("out"))
        seen.add("late" if run_stream_reference(p).late_dropped["w"] else "none late")

    draw()
    assert seen == {"skew", "no skew", "out of order", "empty substream", "late", "none late",
                    "k=1", "k=2", "k=3", "k=7", "k=100"}
