"""The typed item path: a DataFrame source's rows stay typed, aggregations over them with field names or
Columns run in Catalyst where Spark's functions give the core's results, and the results reach Python
as the API promises. Expected outputs come from the brute-force reference (tests/reference.py) run on
the same rows as plain Python items, with Python functions in place of the Columns."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples, run_job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import as_multiset, as_sequence, run_reference

from jetspark import JobFailedError, Pipeline, PipelineDefinitionError, Sinks, Sources
from jetspark import AggregateOperations as ops

SCHEMA = "k INT, v BIGINT, x DOUBLE, s STRING"

# name -> (the operation on typed rows, the same on Python items, whether Catalyst runs it). Values that
# min_by/max_by rank by are unique in the drawn rows, so ties cannot make the choice of item arbitrary.
OPERATIONS: dict[str, tuple[Callable[[], Any], Callable[[], Any], bool]] = {
    "counting": (ops.counting, ops.counting, True),
    "summing long": (lambda: ops.summing("v"), lambda: ops.summing("v"), True),
    "summing column": (lambda: ops.summing(F.col("k") * 3 + 1), lambda: ops.summing(lambda r: r.k * 3 + 1), True),
    "summing double": (lambda: ops.summing("x"), lambda: ops.summing("x"), True),
    "averaging": (lambda: ops.averaging("v"), lambda: ops.averaging("v"), True),
    "max_by": (lambda: ops.max_by("v"), lambda: ops.max_by("v"), True),
    "min_by string": (lambda: ops.min_by(F.col("s")), lambda: ops.min_by(lambda r: r.s), True),
    "all_of": (lambda: ops.all_of(ops.counting(), ops.averaging("x"), ops.min_by("v")),
               lambda: ops.all_of(ops.counting(), ops.averaging("x"), ops.min_by("v")), True),
    "variance": (lambda: ops.variance("v"), lambda: ops.variance("v"), False),
    "to_set": (ops.to_set, ops.to_set, False),
}

# name -> (the key on typed rows (made once Spark runs), the same on Python items)
KEYS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "field": (lambda: "k", lambda r: r.k),
    "column": (lambda: F.col("k") % 2, lambda r: r.k % 2),
    "string column": (lambda: F.upper(F.col("s").substr(1, 1)), lambda r: r.s[:1].upper()),
}

# Doubles are quarters: their sums are exact in any order, so float results compare exactly too.
rows = st.lists(st.tuples(st.integers(0, 4), st.integers(-4 * 10**6, 4 * 10**6).map(lambda q: q / 4),
                          st.text("abcXY", max_size=3)),
                max_size=40).flatmap(lambda drawn: st.lists(
                    st.integers(-2**62, 2**62), min_size=len(drawn), max_size=len(drawn), unique=True).map(
                    lambda vs: [(k, v, x, f"{s}{i}") for i, ((k, x, s), v) in enumerate(zip(drawn, vs))]))


def collect(jet, p: Pipeline, *lists: str) -> tuple[list[Any], ...] | Any:
    job, out = run_job(jet, p, *lists)
    collect.metrics = job.metrics()  # type: ignore[attr-defined]
    return out[0] if len(out) == 1 else tuple(out)


def expected(items: list[Any], build: Callable[[Any], Any], name: str = "out") -> list[Any]:
    """The reference's result of ``build`` applied to a stage reading ``items`` as Python items."""
    p = Pipeline.create()
    build(p.read_from(Sources.items(items))).write_to(Sinks.list(name))
    return run_reference(p)[name]


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows, st.sampled_from(sorted(OPERATIONS)), st.sampled_from(sorted(KEYS) + [None]))
def test_typed_aggregations_equal_the_reference(jet, data, op_name, key_name):
    typed_op, python_op, delegated = OPERATIONS[op_name]
    df = jet.spark.createDataFrame(data, SCHEMA)

    def stage(source: Any, key: Any, op: Any) -> Any:
        return (source if key is None else source.grouping_key(key)).aggregate(op)

    p = Pipeline.create()
    typed_key, python_key = KEYS[key_name] if key_name else (lambda: None, None)
    stage(p.read_from(Sources.dataframe(df)), typed_key(), typed_op()).write_to(Sinks.list("out"))
    got = collect(jet, p, "out")
    want = expected(df.collect(), lambda s: stage(s, python_key, python_op()))
    assert as_multiset(got, float_digits=10) == as_multiset(want, float_digits=10), (op_name, key_name)
    catalyst = collect.metrics["catalyst"]  # type: ignore[attr-defined]
    assert bool(catalyst) == delegated, catalyst


def test_global_aggregations_of_no_rows_give_the_python_results(jet):
    df = jet.spark.createDataFrame([], SCHEMA)
    op = ops.all_of(ops.counting(), ops.summing("x"), ops.summing("v"), ops.averaging("v"), ops.max_by("x"))
    p = Pipeline.create()
    p.read_from(Sources.dataframe(df)).aggregate(op).write_to(Sinks.list("none"))
    got = collect(jet, p, "none")
    # Python: len() of nothing is 0, sum([]) is the int 0 (also over floats), the mean is NaN, max_by None.
    assert as_sequence(got) == as_sequence(expected([], lambda s: s.aggregate(op))) == as_sequence([(0, 0, 0, math.nan, None)])


def test_integer_sums_and_means_stay_exact_beyond_64_bits(jet):
    values = [2**62 + i for i in range(40)] + [-(2**61)] * 3
    df = jet.spark.createDataFrame([(i % 2, v, 0.0, str(i)) for i, v in enumerate(values)], SCHEMA)
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.all_of(ops.summing("v"), ops.averaging("v")))
     .write_to(Sinks.list("sums")))
    got = collect(jet, p, "sums")
    want = expected(df.collect(), lambda s: s.grouping_key("k").aggregate(ops.all_of(ops.summing("v"), ops.averaging("v"))))
    assert sorted(got) == sorted(want)
    assert all(type(total) is int and total > 2**63 for _, (total, _) in got)


def test_a_typed_aggregation_runs_in_catalyst_without_python(jet):
    df = jet.spark.range(1000).select((F.col("id") % 7).alias("k"), F.col("id").alias("v"))
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.all_of(ops.counting(), ops.summing("v")))
     .set_name("per-k").write_to(Sinks.noop()))
    collect(jet, p)
    metrics = collect.metrics  # type: ignore[attr-defined]
    assert set(metrics["catalyst"]) == {name for name in metrics["vertices"] if name.startswith("per-k")}
    (plan,) = metrics["physical_plans"].values()
    assert "HashAggregate" in plan and "try_sum" in plan
    assert not any(python in plan for python in ("MapInArrow", "ArrowEvalPython", "BatchEvalPython", "PythonUDF")), plan
    vertices = metrics["vertices"]
    assert vertices["dataframe-source"]["items_out"] == 1000
    assert [vertices[v]["items_out"] for v in metrics["catalyst"]] == [1000, 7]


def test_typed_results_reach_python_steps_as_tuples(jet):
    df = jet.spark.createDataFrame([(i % 3, i, float(i), f"s{i}") for i in range(30)], SCHEMA)
    p = Pipeline.create()
    counted = p.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.all_of(ops.counting(), ops.max_by("v")))
    counted.map(lambda kv: (kv[0], kv[1][0], kv[1][1].s)).write_to(Sinks.list("mapped"))
    counted.write_to(Sinks.noop())
    got = collect(jet, p, "mapped")
    assert sorted(got) == [(k, 10, f"s{27 + k}") for k in range(3)]


def test_a_column_on_python_items_fails_naming_the_stage(jet):
    p = Pipeline.create()
    (p.read_from(Sources.items([{"k": 1}])).grouping_key(F.col("k")).aggregate(ops.counting()).set_name("by-column")
     .write_to(Sinks.noop()))
    with pytest.raises(PipelineDefinitionError, match="Column") as e:
        jet.new_job(p).join(timeout=300)
    assert e.value.stage == "by-column" and e.value.rule == "columns-on-typed-items"
    assert "Python objects" in str(e.value)


def test_a_column_where_catalyst_cannot_run_the_stage_is_evaluated_next_to_the_rows(jet):
    df = jet.spark.createDataFrame([(i % 3, i, 0.5 * i, f"s{i}") for i in range(12)], SCHEMA)
    p = Pipeline.create()
    p.read_from(Sources.dataframe(df)).grouping_key(F.col("k") * 10).aggregate(ops.to_list()).write_to(Sinks.list("listed"))
    got = collect(jet, p, "listed")
    want = expected(df.collect(), lambda s: s.grouping_key(lambda r: r.k * 10).aggregate(ops.to_list()))
    assert as_multiset((k, sorted(xs)) for k, xs in got) == as_multiset((k, sorted(xs)) for k, xs in want)
    assert collect.metrics["catalyst"] == []  # type: ignore[attr-defined]


def test_a_null_value_fails_where_python_fails_and_a_lone_one_is_picked(jet):
    df = jet.spark.createDataFrame([(0, None, 1.0, "a"), (1, None, 1.0, "b"), (1, 5, 2.0, "c")], SCHEMA)
    p = Pipeline.create()
    p.read_from(Sources.dataframe(df.where("k = 0"))).grouping_key("k").aggregate(ops.max_by("v")).write_to(Sinks.list("lone"))
    got = collect(jet, p, "lone")
    assert got == expected(df.where("k = 0").collect(), lambda s: s.grouping_key("k").aggregate(ops.max_by("v")))
    failing = Pipeline.create()
    failing.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.summing("v")).set_name("sum-v") \
        .write_to(Sinks.noop())
    with pytest.raises(JobFailedError, match="stage 'sum-v' failed"):
        jet.new_job(failing).join(timeout=300)
    with pytest.raises(JobFailedError):  # the reference fails too: None + int
        expected(df.collect(), lambda s: s.grouping_key("k").aggregate(ops.summing("v")))
