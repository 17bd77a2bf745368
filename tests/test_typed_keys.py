"""Keys on typed items beyond aggregations and windows: a sort or a distinct straight after a DataFrame
source runs in Catalyst where Spark orders and compares as Python does; Column keys of rolling
aggregations, map_stateful, hash joins and rebalances are evaluated by Catalyst next to the rows. Expected
outputs come from the brute-force reference (tests/reference.py) on the same rows as Python items, with
Python functions in place of the Columns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples, run_job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import as_multiset, as_sequence, run_reference

from jetspark import JobFailedError, JoinClause, Pipeline, PipelineDefinitionError, Sinks, Sources
from jetspark import AggregateOperations as ops

SCHEMA = "k INT, v BIGINT, s STRING"
FLOAT_SCHEMA = "k INT, x DOUBLE"

# Strings reach past one UTF-8 byte (é, €, a clef beyond the BMP): Python orders them by code point,
# Spark by UTF-8 bytes, which agree.
rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.integers(-10**12, 10**12),
                          st.text("aAzé€𝄞", max_size=3)), max_size=30)
no_null_keys = rows.map(lambda drawn: [(0 if k is None else k, v, s) for k, v, s in drawn])

# name -> (the key on typed rows (made once Spark runs), the same on Python items)
KEYS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "field": (lambda: "k", lambda r: r.k),
    "string field": (lambda: "s", lambda r: r.s),
    "column": (lambda: F.col("k") * 3, lambda r: None if r.k is None else r.k * 3),
    "string column": (lambda: F.concat(F.col("s"), F.lit("!")), lambda r: r.s + "!"),
}

SETTINGS = settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])


def frame(jet, data: list[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    """The rows in three partitions, so that order across partitions matters."""
    return jet.spark.createDataFrame(data, schema).repartition(3)


def expected(items: list[Any], build: Callable[[Any], Any], preserve_order: bool = False) -> list[Any]:
    p = Pipeline.create(preserve_order=preserve_order)
    build(p.read_from(Sources.items(items))).write_to(Sinks.list("out"))
    return run_reference(p)["out"]


def collect(jet, build: Callable[[Any], Any], df: Any, preserve_order: bool = False) -> tuple[list[Any], dict[str, Any]]:
    p = Pipeline.create(preserve_order=preserve_order)
    build(p.read_from(Sources.dataframe(df))).write_to(Sinks.list("out"))
    job, (out,) = run_job(jet, p, "out")
    return out, job.metrics()


@SETTINGS
@given(no_null_keys, st.sampled_from(sorted(KEYS)), st.booleans())
def test_a_sort_of_rows_runs_in_catalyst_in_the_reference_order(jet, data, key_name, reverse):
    typed_key, python_key = KEYS[key_name]
    df = frame(jet, data)
    # preserve_order: the sorted order reaches the sink; ties keep the source's order, as Python's sort.
    got, metrics = collect(jet, lambda s: s.sort(typed_key(), reverse=reverse), df, preserve_order=True)
    want = expected(df.collect(), lambda s: s.sort(python_key, reverse=reverse), preserve_order=True)
    assert as_sequence(got) == as_sequence(want)
    assert sorted(metrics["catalyst"]) == ["sort-local", "sort-merge"]
    assert metrics["vertices"]["sort-merge"]["items_out"] == metrics["vertices"]["dataframe-source"]["items_out"] == len(data)


@SETTINGS
@given(rows, st.sampled_from(sorted(KEYS) + [None]))
def test_a_distinct_of_rows_runs_in_catalyst_and_keeps_the_first_row_of_each_key(jet, data, key_name):
    df = frame(jet, data)
    if key_name is None:
        got, metrics = collect(jet, lambda s: s.distinct(), df)
        want = expected(df.collect(), lambda s: s.distinct())
    else:
        typed_key, python_key = KEYS[key_name]
        got, metrics = collect(jet, lambda s: s.grouping_key(typed_key()).distinct(), df)
        want = expected(df.collect(), lambda s: s.grouping_key(python_key).distinct())
    assert as_multiset(got) == as_multiset(want)
    assert metrics["catalyst"] == ["distinct"]


def test_sorts_and_distincts_of_rows_write_to_noop_without_python(jet):
    df = jet.spark.range(500).select((F.col("id") % 7).alias("k"), F.col("id").alias("v"))
    p = Pipeline.create()
    source = p.read_from(Sources.dataframe(df))
    source.sort(F.col("v") * -1).write_to(Sinks.noop())
    source.grouping_key("k").distinct().write_to(Sinks.noop())
    job, _ = run_job(jet, p)
    metrics = job.metrics()
    assert set(metrics["catalyst"]) == {"sort-local", "sort-merge", "distinct"}
    for plan in metrics["physical_plans"].values():
        assert not any(python in plan for python in ("MapInArrow", "ArrowEvalPython", "BatchEvalPython", "PythonUDF")), plan
    assert metrics["vertices"]["distinct"]["items_out"] == 7


def test_float_keys_stay_on_the_python_path_and_give_the_reference_result(jet):
    # Spark orders NaN last and makes -0.0 equal 0.0; Python's keys do neither, so floats are not delegated.
    data = [(i % 4, x) for i, x in enumerate([0.5, -0.0, 0.0, 2.5, -1.0, 0.5, 3.0, -0.0])]
    df = frame(jet, data, FLOAT_SCHEMA)
    got, metrics = collect(jet, lambda s: s.sort("x"), df, preserve_order=True)
    want = expected(df.collect(), lambda s: s.sort(lambda r: r.x), preserve_order=True)
    # Equal keys (-0.0 == 0.0 in Python) come in no guaranteed order (API.md): the keys in order, the rows as a multiset.
    assert [r.x for r in got] == [r.x for r in want] and as_multiset(got) == as_multiset(want)
    assert metrics["catalyst"] == []
    got, metrics = collect(jet, lambda s: s.grouping_key("x").distinct(), df.coalesce(1))
    assert as_multiset(got) == as_multiset(expected(df.coalesce(1).collect(), lambda s: s.grouping_key(lambda r: r.x).distinct()))
    assert metrics["catalyst"] == []


def test_a_null_sort_key_fails_naming_the_stage_where_python_fails(jet):
    lone = frame(jet, [(None, 1, "a")])
    got, metrics = collect(jet, lambda s: s.sort("k"), lone)
    assert [tuple(r) for r in got] == [(None, 1, "a")]  # one item: nothing to compare, as in Python
    assert metrics["catalyst"]
    with pytest.raises(JobFailedError, match="stage 'by-k' failed"):
        collect(jet, lambda s: s.sort("k").set_name("by-k"), frame(jet, [(None, 1, "a"), (2, 2, "b")]))
    with pytest.raises(JobFailedError):  # the reference fails too: None < int
        expected([(None, 1, "a"), (2, 2, "b")], lambda s: s.sort(lambda r: r[0]))


@SETTINGS
@given(rows, st.sampled_from(["column", "string column"]))
def test_column_keys_of_rolling_aggregations_and_map_stateful_are_evaluated_next_to_the_rows(jet, data, key_name):
    typed_key, python_key = KEYS[key_name]
    df = frame(jet, data)
    # Counting per key gives each key 1..n in any order of arrival: a multiset the reference agrees on.
    got, _ = collect(jet, lambda s: s.grouping_key(typed_key()).rolling_aggregate(ops.counting()), df)
    assert as_multiset(got) == as_multiset(expected(df.collect(), lambda s: s.grouping_key(python_key).rolling_aggregate(ops.counting())))

    def stateful(key: Any) -> Callable[[Any], Any]:
        return lambda s: s.grouping_key(key).map_stateful(lambda: 0, lambda n, k, r: (n + 1, (k, n + 1)))

    got, _ = collect(jet, stateful(typed_key()), df)
    assert as_multiset(got) == as_multiset(expected(df.collect(), stateful(python_key)))


@SETTINGS
@given(rows)
def test_a_column_key_joins_typed_rows_with_python_items(jet, data):
    df = frame(jet, data)
    names = [(k, f"name{k}") for k in range(-1, 2)] + [(None, "none")]

    def joined(source: Any, left_key: Any) -> Pipeline:
        p = Pipeline.create()
        right = p.read_from(Sources.items(names))
        (p.read_from(source).hash_join(right, JoinClause.on(left_key, lambda t: t[0]), lambda row, n: (row.v, n and n[1]))
         .write_to(Sinks.list("joined")))
        return p

    _, (got,) = run_job(jet, joined(Sources.dataframe(df), F.col("k") - 1), "joined")
    want = run_reference(joined(Sources.items(df.collect()), lambda r: None if r.k is None else r.k - 1))["joined"]
    assert as_multiset(got) == as_multiset(want)


def test_a_column_rebalance_and_a_column_aggregation_value_work_on_rows(jet):
    df = frame(jet, [(i % 3, i, f"s{i}") for i in range(40)])
    got, _ = collect(jet, lambda s: s.rebalance(F.col("k")).map(lambda r: r.v), df)
    assert sorted(got) == list(range(40))
    # variance is not delegated to Catalyst: its Column value is evaluated next to the rows.
    got, metrics = collect(jet, lambda s: s.grouping_key("k").aggregate(ops.variance(F.col("v") * 2)), df)
    want = expected(df.collect(), lambda s: s.grouping_key("k").aggregate(ops.variance(lambda r: r.v * 2)))
    assert as_multiset(got, float_digits=9) == as_multiset(want, float_digits=9)
    assert metrics["catalyst"] == []


def test_a_column_key_on_python_items_fails_naming_the_stage(jet):
    p = Pipeline.create()
    (p.read_from(Sources.items([{"k": 1}])).grouping_key(F.col("k")).rolling_aggregate(ops.counting()).set_name("rolling")
     .write_to(Sinks.noop()))
    with pytest.raises(PipelineDefinitionError, match="items entering here are Python objects") as e:
        jet.new_job(p).join(timeout=300)
    assert e.value.stage == "rolling" and e.value.rule == "columns-on-typed-items"
