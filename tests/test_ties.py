"""Ties in ``min_by``/``max_by`` (and ``top_n``/``bottom_n``) go to the first item in encounter order on
every path of Python items (docs/semantics.md): the reference's single pass keeps the first of
tied items, and the engines must pick the same one however their partial accumulators combine (two stages,
the frames of a sliding window, two stacks).

    items (id: v)   0:3  1:5  2:5  3:1  4:5  5:1  6:3  7:5 ...   few distinct values: ties everywhere
    max_by(v)       -> the item 1 (the first 5), never 2, 4 or 7
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import as_multiset, run_reference

from jetspark import AggregateOperations as ops
from jetspark import Pipeline, Sinks, Sources, WindowDefinition

OPERATIONS = {
    "max_by": lambda: ops.max_by("v"),
    "min_by": lambda: ops.min_by("v"),
    "all_of": lambda: ops.all_of(ops.max_by("v"), ops.min_by(lambda d: d["v"] % 2), ops.top_n(3, lambda d: d["v"]),
                                 ops.bottom_n(2, lambda d: d["v"])),
}
WINDOWS = {"sliding": WindowDefinition.sliding(8, 2), "tumbling": WindowDefinition.tumbling(6),
           "session": WindowDefinition.session(3)}

# Many items, few values and keys: most groups and windows hold several tied items, spread over partitions.
tied_items = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 40)), min_size=1, max_size=60).map(
    lambda drawn: [{"id": i, "k": k, "v": v, "t": t} for i, (k, v, t) in enumerate(drawn)])

SETTINGS = settings(max_examples=examples(8), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _aggregation(items: list[dict[str, int]], operation: str, keyed: bool) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.items(items))
    (stage.grouping_key("k") if keyed else stage).aggregate(OPERATIONS[operation]()).write_to(Sinks.list("ties"))
    return p


def _window(items: list[dict[str, int]], operation: str, window: str) -> Pipeline:
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).add_timestamps("t").grouping_key("k").window(WINDOWS[window])
     .aggregate(OPERATIONS[operation]()).write_to(Sinks.list("ties")))
    return p


def _got(jet: Any, p: Pipeline, light: bool = False) -> list[Any]:
    jet.clear_list("ties")
    (jet.new_light_job(p) if light else jet.new_job(p)).join(timeout=300)
    got = jet.get_list("ties")
    jet.clear_list("ties")
    return got


def test_the_first_of_tied_items_wins_across_partitions(jet):
    items = [{"id": i, "k": 0, "v": v, "t": i} for i, v in enumerate([3, 5, 5, 1, 5, 1, 3, 5] * 8)]
    p = _aggregation(items, "all_of", keyed=True)
    first_five, first_one, first_odd = items[1], items[3], items[0]
    assert run_reference(p)["ties"] == [(0, (first_five, first_odd, [items[1], items[2], items[4]], [items[3], items[5]]))]
    assert _got(jet, p) == run_reference(p)["ties"]


@SETTINGS
@given(tied_items, st.sampled_from(sorted(OPERATIONS)), st.booleans())
def test_aggregations_pick_what_the_reference_picks(jet, items, operation, keyed):
    p = _aggregation(items, operation, keyed)
    assert as_multiset(_got(jet, p)) == as_multiset(run_reference(p)["ties"])


@SETTINGS
@given(tied_items, st.booleans())
def test_catalyst_picks_of_a_dataframe_pick_what_the_reference_picks(jet, items, keyed):
    # max_by/min_by of a DataFrame's rows by a field run in Catalyst; the reference reads its collect() rows.
    df = jet.spark.createDataFrame([(d["id"], d["k"], d["v"]) for d in items], "id INT, k INT, v INT").repartition(3)
    p = Pipeline.create()
    stage = p.read_from(Sources.dataframe(df))
    (stage.grouping_key("k") if keyed else stage).aggregate(ops.all_of(ops.max_by("v"), ops.min_by("v"))).write_to(Sinks.list("ties"))
    assert as_multiset(_got(jet, p)) == as_multiset(run_reference(p)["ties"])


@SETTINGS
@given(tied_items, st.sampled_from(sorted(OPERATIONS)), st.booleans())
def test_light_job_aggregations_pick_what_the_reference_picks(jet, items, operation, keyed):
    p = _aggregation(items, operation, keyed)
    assert as_multiset(_got(jet, p, light=True)) == as_multiset(run_reference(p)["ties"])


@pytest.mark.parametrize("window", sorted(WINDOWS))
@SETTINGS
@given(items=tied_items, operation=st.sampled_from(sorted(OPERATIONS)))
def test_windows_pick_what_the_reference_picks(jet, window, items, operation):
    p = _window(items, operation, window)
    assert as_multiset(_got(jet, p)) == as_multiset(run_reference(p)["ties"])
