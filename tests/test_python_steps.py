"""Fused Python steps run as one Arrow UDF that the JVM applies (through SqlBridge.mapInArrow)."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql import DataFrame

from jetspark import DeadLetter
from jetspark._udf_columns import chain_udf_column
from jetspark.worker.steps import OPAQUE_SCHEMA, Step


def opaque_frame(spark, items, partitions=2):
    rows = [(pickle.dumps(x),) for x in items]
    return spark.createDataFrame(rows, OPAQUE_SCHEMA).repartition(partitions)


def apply_in_jvm(spark, df, steps) -> DataFrame:
    bridge = spark.sparkContext._jvm.org.apache.spark.sql.jetspark.SqlBridge
    return DataFrame(bridge.mapInArrow(df._jdf, chain_udf_column(steps)._jc), spark)


def brute_force(items, funcs):
    """The chain written out by hand, independent of run_steps."""
    out = []
    for x in items:
        y = funcs["map"](x)
        if y is None or not funcs["filter"](y):
            continue
        out.extend(funcs["flat_map"](y))
    return out


def test_a_chain_of_python_steps_runs_in_one_python_trip_and_matches_plain_python(jet):
    funcs = {"map": lambda x: None if x % 7 == 0 else x * 3, "filter": lambda x: x % 2 == 0,
             "flat_map": lambda x: [x, -x]}
    steps = [Step("map", funcs["map"], "m"), Step("filter", funcs["filter"], "f"),
             Step("flat_map", funcs["flat_map"], "fm")]
    items = list(range(200))
    out = apply_in_jvm(jet.spark, opaque_frame(jet.spark, items), steps)
    plan = out._jdf.queryExecution().executedPlan().toString()
    assert plan.count("MapInArrow") == 1, plan
    rows = out.collect()
    assert all(r.failure is None for r in rows)
    assert sorted(pickle.loads(r.item) for r in rows) == sorted(brute_force(items, funcs))


def test_a_failing_record_fails_the_job_naming_the_stage_and_the_record(jet):
    steps = [Step("map", lambda x: 10 // (x - 3), "divide")]
    out = apply_in_jvm(jet.spark, opaque_frame(jet.spark, [1, 2, 3, 4]), steps)
    with pytest.raises(Exception) as e:
        out.collect()
    assert "stage 'divide' failed on record 3" in str(e.value) and "ZeroDivisionError" in str(e.value)


def test_with_a_dead_letter_stage_the_bad_record_is_kept_with_its_error_and_the_rest_completes(jet):
    steps = [Step("map", lambda x: x + 1, "inc"), Step("map", lambda x: 10 // (x - 3), "divide", dead_letter=True)]
    rows = apply_in_jvm(jet.spark, opaque_frame(jet.spark, [1, 2, 3, 4]), steps).collect()
    good = sorted(pickle.loads(r.item) for r in rows if r.failure is None)
    bad = [(pickle.loads(r.item), r.failure) for r in rows if r.failure is not None]
    assert good == sorted(10 // (x + 1 - 3) for x in [1, 3, 4])
    # The record as it entered the failing stage: 2 + 1.
    assert bad == [(DeadLetter(3, "divide", "ZeroDivisionError: integer division or modulo by zero"), "divide")]


def test_a_flat_map_that_fails_half_way_emits_nothing_for_that_record():
    from jetspark.worker.steps import run_steps

    def two_then_fail(x):
        yield x
        yield x + 1
        raise ValueError("late")

    results, letters = run_steps([Step("flat_map", two_then_fail, "explode", dead_letter=True)], 5)
    assert results == [] and letters == [DeadLetter(5, "explode", "ValueError: late")]


def test_a_field_of_a_row_is_its_column_even_when_named_like_a_tuple_method():
    from pyspark.sql import Row

    from jetspark.worker.steps import extract

    row = Row(count=3, index=7)
    assert extract({"kind": "field", "name": "count"}, row, {}) == 3
    assert extract({"kind": "field", "name": "index"}, row, {}) == 7
