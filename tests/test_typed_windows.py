"""Windows over a DataFrame's rows read in the JVM (key, timestamp and values by Catalyst, no Python
item on the way in) give what the reference gives for the same rows as Python items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples, run_job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import as_multiset, run_reference

from jetspark import AggregateOperations as ops
from jetspark import JobFailedError, Pipeline, Sinks, Sources, WindowDefinition

SCHEMA = "k INT, t BIGINT, v BIGINT, x DOUBLE"

# name -> (the operation on typed rows, the same on Python items, whether the JVM reads the rows, whether the
# frames of its two stages are columns of numbers and rows: counting, and min_by/max_by of integers)
OPERATIONS: dict[str, tuple[Callable[[], Any], Callable[[], Any], bool, bool]] = {
    "counting": (ops.counting, ops.counting, True, True),
    "summing": (lambda: ops.summing("v"), lambda: ops.summing("v"), True, False),
    "summing column": (lambda: ops.summing(F.col("v") * 2 - F.col("k")), lambda: ops.summing(lambda r: r.v * 2 - r.k), True, False),
    "averaging double": (lambda: ops.averaging("x"), lambda: ops.averaging("x"), True, False),
    # (not variance: sliding windows deduct, and a deducted float sum of squares need not equal a fresh one)
    "all_of": (lambda: ops.all_of(ops.counting(), ops.summing("x"), ops.averaging("v")),
               lambda: ops.all_of(ops.counting(), ops.summing("x"), ops.averaging("v")), True, False),
    # give the rows themselves, read in the JVM and written back as the Rows Python would have had
    "max_by": (lambda: ops.max_by("v"), lambda: ops.max_by("v"), True, True),
    "min_by": (lambda: ops.min_by("v"), lambda: ops.min_by("v"), True, True),
    "min_by int column": (lambda: ops.min_by(F.col("v") * 3 - F.col("k")), lambda: ops.min_by(lambda r: r.v * 3 - r.k), True, True),
    "min_by column": (lambda: ops.min_by(F.col("v") * 1000 + F.col("x") * 4), lambda: ops.min_by(lambda r: r.v * 1000 + r.x * 4), True, False),
    "all_of with max_by": (lambda: ops.all_of(ops.counting(), ops.max_by("v")), lambda: ops.all_of(ops.counting(), ops.max_by("v")), True, True),
    "all_of of picks": (lambda: ops.all_of(ops.max_by("v"), ops.all_of(ops.counting(), ops.min_by("v"), ops.max_by(F.col("v") * -1))),
                        lambda: ops.all_of(ops.max_by("v"), ops.all_of(ops.counting(), ops.min_by("v"), ops.max_by(lambda r: -r.v))), True, True),
    "to_set": (ops.to_set, ops.to_set, False, False),  # other items: read as Python items
}

KEYS: dict[str, tuple[Callable[[], Any], Any]] = {
    "field": (lambda: "k", lambda r: r.k),
    "column": (lambda: F.col("k") % 2, lambda r: r.k % 2),
    # -1024, 0, 1024, 2048: a negative key, a small one and the first two past the small keys the JVM
    # indexes directly; two of them would merge if a key were taken modulo that range.
    "wide column": (lambda: F.col("k") * 1024 - 1024, lambda r: r.k * 1024 - 1024),
    "string column": (lambda: F.concat(F.lit("k"), F.col("k").cast("string")), lambda r: f"k{r.k}"),
}

WINDOWS = {"tumbling": WindowDefinition.tumbling(5), "sliding": WindowDefinition.sliding(6, 2),
           "session": WindowDefinition.session(3)}

# Doubles are quarters: their sums are exact in any order. Values of `v` are unique, and so are v * 3 - k and
# v * 1000 + x * 4 with them (min_by and max_by have no ties). Times are close together (most windows share
# frames), or now and then far apart (windows of one frame, most frames of a key far from the next).
times = st.one_of(st.integers(-20, 40), st.integers(-20, 40).map(lambda t: t * 1009))
rows = st.lists(st.tuples(st.integers(0, 3), times, st.integers(-400, 400).map(lambda q: q / 4)),
                max_size=40).map(lambda drawn: [(k, t, i * 7 - 50, x) for i, (k, t, x) in enumerate(drawn)])


def windowed(source: Any, key: Any, window: Any, op: Any) -> Any:
    stamped = source.add_timestamps("t")
    return (stamped if key is None else stamped.grouping_key(key)).window(window).aggregate(op)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows, st.sampled_from(sorted(OPERATIONS)), st.sampled_from(sorted(KEYS) + [None]), st.sampled_from(sorted(WINDOWS)))
def test_windows_over_typed_rows_equal_the_reference(jet, data, op_name, key_name, window_name):
    typed_op, python_op, in_jvm, columnar = OPERATIONS[op_name]
    if not in_jvm and key_name is not None and key_name.endswith("column"):
        key_name = "field"  # a Column runs only where the JVM reads the rows
    df = jet.spark.createDataFrame(data, SCHEMA)
    typed_key, python_key = KEYS[key_name] if key_name else (lambda: None, None)
    window = WINDOWS[window_name]

    p = Pipeline.create()
    windowed(p.read_from(Sources.dataframe(df)), typed_key(), window, typed_op()).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")

    reference = Pipeline.create()
    windowed(reference.read_from(Sources.items(df.collect())), python_key, window, python_op()).write_to(Sinks.list("out"))
    want = run_reference(reference)["out"]
    assert as_multiset(got, float_digits=10) == as_multiset(want, float_digits=10), (op_name, key_name, window_name)
    assert bool(job.metrics()["typed_windows"]) == in_jvm
    assert bool(job.metrics()["columnar_windows"]) == (columnar and window_name != "session")


COLUMNAR = sorted(name for name, (_, _, _, columnar) in OPERATIONS.items() if columnar)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 5), times, st.none() | st.integers(-400, 400).map(lambda q: q / 4)), max_size=150)
       .map(lambda drawn: [(k, t, i * 7 - 50, x, None if x is None else f"s{i}") for i, (k, t, x) in enumerate(drawn)]),
       st.booleans(), st.sampled_from(COLUMNAR), st.sampled_from(["field", "wide column", None]),
       st.sampled_from([(6, 2), (4, 4), (10, 1), (9, 3), (2018, 1009)]), st.integers(1, 4))
def test_columnar_frames_over_several_partitions_equal_the_reference(jet, data, with_string, op_name, key_name, size_slide,
                                                                     partitions):
    # Frames of one key come from every partition the rows are spread over, and meet in the second stage. A
    # pick keeps its item's fields as numbers, nulls too (x), or as a row where a field is a string (s); a
    # field that is the key (k) or the pick's value (v) it reads from there.
    typed_op, python_op, _, _ = OPERATIONS[op_name]
    if key_name == "field" and op_name != "min_by int column":  # (whose value reads k)
        # a null key is a key too; a kept item's field that is the key is null there
        data = [(None if k == 5 else k, *rest) for k, *rest in data]
    schema = SCHEMA + ", s STRING" if with_string else SCHEMA
    df = jet.spark.createDataFrame([r if with_string else r[:4] for r in data], schema).repartition(partitions)
    typed_key, python_key = KEYS[key_name] if key_name else (lambda: None, None)
    window = WindowDefinition.sliding(*size_slide)

    p = Pipeline.create()
    windowed(p.read_from(Sources.dataframe(df)), typed_key(), window, typed_op()).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")

    reference = Pipeline.create()
    windowed(reference.read_from(Sources.items(df.collect())), python_key, window, python_op()).write_to(Sinks.list("out"))
    assert as_multiset(got) == as_multiset(run_reference(reference)["out"]), (op_name, key_name, size_slide)
    metrics = job.metrics()
    assert metrics["columnar_windows"]
    # the window counts the rows it reads for the source and add_timestamps
    assert metrics["vertices"]["dataframe-source"]["items_out"] == metrics["vertices"]["addTimestamps"]["items_out"] == len(data)


@pytest.mark.parametrize("source", ["cached", "parquet"])
def test_columnar_frames_read_a_columnar_scan_in_place(jet, tmp_path, source):
    # A cached DataFrame or a Parquet file is read from its scan's column batches, not row by row: null
    # keys and null fields, and the fields a pick keeps, come out as the reference's. v is unique: no ties.
    data = [(None if i % 11 == 0 else i % 4, (i * 37) % 97, i * 7 - 50, None if i % 3 == 0 else i / 4) for i in range(300)]
    df = jet.spark.createDataFrame(data, SCHEMA)
    if source == "parquet":
        df.repartition(3).write.parquet(str(tmp_path / "t"))
        df = jet.spark.read.parquet(str(tmp_path / "t"))
    else:
        df = df.repartition(3).cache()
    try:
        assert_picks_as_columns_equal_the_reference(jet, df, WindowDefinition.sliding(12, 4))
    finally:
        df.unpersist()


def test_picks_of_fields_that_cannot_be_null_equal_the_reference(jet):
    # These columns of spark.range cannot be null (a modulo could), so a pick keeps its item's fields
    # without null bits. v is unique: no ties.
    df = jet.spark.range(300, numPartitions=3).select(
        F.col("id").bitwiseAND(7).alias("k"), (F.col("id") * 37).bitwiseAND(127).alias("t"),
        (F.lit(1000) - F.col("id") * 3).alias("v"), (F.col("id") * 0.25).alias("x"),
        (F.col("id").bitwiseAND(1) == 0).alias("even"))
    assert not any(f.nullable for f in df.schema.fields)
    assert_picks_as_columns_equal_the_reference(jet, df, WindowDefinition.sliding(10, 5))


def assert_picks_as_columns_equal_the_reference(jet, df, window) -> None:
    """``all_of(max_by("v"), min_by("v"), counting())`` by ``k`` of ``df``'s rows in ``window`` runs as
    columns of frames and gives the reference's results over the same rows as Python items."""
    op = lambda: ops.all_of(ops.max_by("v"), ops.min_by("v"), ops.counting())  # noqa: E731
    p = Pipeline.create()
    windowed(p.read_from(Sources.dataframe(df)), "k", window, op()).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")
    reference = Pipeline.create()
    windowed(reference.read_from(Sources.items(df.collect())), lambda r: r.k, window, op()).write_to(Sinks.list("out"))
    assert as_multiset(got) == as_multiset(run_reference(reference)["out"])
    assert job.metrics()["columnar_windows"]


@pytest.mark.parametrize("readers", [("noop",), ("noop", "list"), ("map",)])
def test_a_columnar_window_and_a_noop_sink_count_the_windows(jet, readers):
    # Both count where the windows are made and dropped, not by a step per row: the window's second stage
    # its windows out, a noop sink (whose window then makes no result object) the rows it drops; whether
    # the windows go on as rows to a list sink or as Python items to a map.
    rows = [(i % 3, i * 7 % 50) for i in range(100)]
    df = jet.spark.createDataFrame(rows, "k INT, t INT").repartition(3)
    p = Pipeline.create()
    windows = windowed(p.read_from(Sources.dataframe(df)), "k", WindowDefinition.sliding(10, 5), ops.counting())
    for reader in readers:
        if reader == "noop":
            windows.write_to(Sinks.noop())
        elif reader == "list":
            windows.write_to(Sinks.list("windows"))
        else:
            windows.map(lambda r: r).set_name("same").write_to(Sinks.list("windows"))
    job, (got,) = run_job(jet, p, "windows")
    # a window [end - 10, end) per key and multiple of 5 that holds one of its times
    want = {(k, end) for k, t in rows for end in range(t // 5 * 5 + 5, t + 11, 5)}
    vertices = job.metrics()["vertices"]
    assert job.metrics()["columnar_windows"]
    assert vertices["windowAggregate-combine"]["items_out"] == len(want)
    if "noop" in readers:
        assert vertices["noop-sink"]["items_in"] == vertices["noop-sink"]["items_out"] == len(want)
    if "map" in readers:
        assert vertices["same"]["items_in"] == vertices["same"]["items_out"] == len(want)
    if readers != ("noop",):
        assert {(r.key, r.end) for r in got} == want and len(got) == len(want)


@pytest.mark.parametrize("source", ["rows", "cached"])
@pytest.mark.parametrize("null_in", ["t", "v"])
def test_a_null_timestamp_or_value_fails_the_window_naming_its_stage(jet, source, null_in):
    # Python would meet None where a window needs a number; the JVM fails the job as it would. A cached
    # DataFrame is read as column batches, checked a batch of columns at once; other rows one by one. (t
    # and v are BIGINTs, read as they are: INT columns would be cast on the way in, and read row by row.)
    data = [(i % 3, None if null_in == "t" and i == 17 else i, None if null_in == "v" and i == 17 else i * 2) for i in range(40)]
    df = jet.spark.createDataFrame(data, "k INT, t BIGINT, v BIGINT")
    df = df.cache() if source == "cached" else df
    try:
        p = Pipeline.create()
        windowed(p.read_from(Sources.dataframe(df)), "k", WindowDefinition.sliding(10, 5), ops.max_by("v")).write_to(Sinks.noop())
        job = jet.new_job(p)
        with pytest.raises(JobFailedError) as e:
            job.join(timeout=300)
        assert ("a row's timestamp is null" if null_in == "t" else "a row's value v is null") in str(e.value)
        assert e.value.stage == "windowAggregate"
    finally:
        df.unpersist()


@pytest.mark.parametrize("key_type", ["int", "bigint", "string"])
def test_typed_window_keys_stay_apart_whatever_their_range(jet, key_type):
    # keys -1024, 0, 1024, 2048 (k = t % 4 * 1024 - 1024), two rows each in tumbling(10) over t 0..7:
    # each key one window [0,10) counting 2; as strings the same four keys
    df = jet.spark.range(8).select((F.col("id") % 4 * 1024 - 1024).cast(key_type).alias("k"), F.col("id").alias("t"))
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).add_timestamps("t").grouping_key("k")
     .window(WindowDefinition.tumbling(10)).aggregate(ops.counting()).write_to(Sinks.list("counts")))
    job, (got,) = run_job(jet, p, "counts")
    keys = [-1024, 0, 1024, 2048]
    assert sorted((r.key, r.result) for r in got) == sorted((str(k) if key_type == "string" else k, 2) for k in keys)
    assert job.metrics()["typed_windows"]


@pytest.mark.parametrize("two_stage", [True, False])
def test_a_typed_window_counts_its_rows_and_never_builds_python_rows(jet, two_stage):
    #   t:  0 1 2 3 4 5 6 7 8 9   (key k = t % 2, ten rows)  tumbling(5):
    #   k=0: [0,5) {0,2,4} -> 3   [5,10) {6,8} -> 2
    #   k=1: [0,5) {1,3}   -> 2   [5,10) {5,7,9} -> 3
    df = jet.spark.range(10).select((F.col("id") % 2).alias("k"), F.col("id").alias("t"))
    p = Pipeline.create()
    keyed = p.read_from(Sources.dataframe(df)).add_timestamps("t").grouping_key("k")
    # to_list-free, combinable counting runs in two stages; sessions always run in one
    window = WindowDefinition.tumbling(5) if two_stage else WindowDefinition.session(1)
    keyed.window(window).aggregate(ops.counting()).write_to(Sinks.list("counts"))
    job, (got,) = run_job(jet, p, "counts")
    if two_stage:
        assert sorted((r.key, r.start, r.end, r.result) for r in got) == [(0, 0, 5, 3), (0, 5, 10, 2), (1, 0, 5, 2), (1, 5, 10, 3)]
    else:  # timeout 1: consecutive times of one key are 2 apart, so every row is its own session
        assert sorted((r.key, r.start, r.end, r.result) for r in got) == sorted((t % 2, t, t + 1, 1) for t in range(10))
    metrics = job.metrics()
    assert len(metrics["typed_windows"]) == 1
    assert metrics["vertices"]["dataframe-source"]["items_out"] == 10


@pytest.mark.parametrize("window_name", sorted(WINDOWS))
def test_window_results_that_only_a_noop_sink_reads_are_all_computed(jet, window_name):
    # Unread results are not pickled for Python; the noop sink still gets one row per window.
    data = [(t % 3, t, t, 0.25 * t) for t in range(0, 60, 2)]
    df = jet.spark.createDataFrame(data, SCHEMA)
    for typed in (True, False):  # max_by reads the rows in the JVM, to_set as Python items
        p = Pipeline.create()
        op = ops.max_by("v") if typed else ops.to_set()
        windowed(p.read_from(Sources.dataframe(df)), "k", WINDOWS[window_name], op).write_to(Sinks.noop())
        job, _ = run_job(jet, p)
        reference = Pipeline.create()
        windowed(reference.read_from(Sources.items(df.collect())), lambda r: r.k, WINDOWS[window_name], op).write_to(Sinks.list("out"))
        metrics = job.metrics()
        assert metrics["vertices"]["noop-sink"]["items_in"] == len(run_reference(reference)["out"]) > 0
        assert bool(metrics["typed_windows"]) == typed


def test_a_typed_window_keys_minus_zero_and_zero_as_one_key_as_python_does(jet):
    # Python's dicts (and the reference) take -0.0 and 0.0 as one key; Spark's rows keep their signs.
    data = [(0, t, t, -0.0 if t % 2 else 0.0) for t in range(8)]
    df = jet.spark.createDataFrame(data, SCHEMA)
    p = Pipeline.create()
    windowed(p.read_from(Sources.dataframe(df)), "x", WindowDefinition.tumbling(4), ops.counting()).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")
    reference = Pipeline.create()
    windowed(reference.read_from(Sources.items(df.collect())), lambda r: r.x, WindowDefinition.tumbling(4),
             ops.counting()).write_to(Sinks.list("out"))
    assert as_multiset(got) == as_multiset(run_reference(reference)["out"])
    assert sorted(r.result for r in got) == [4, 4] and job.metrics()["typed_windows"]


def test_a_map_between_timestamps_and_window_makes_python_items_that_keep_the_rows_times(jet):
    # add_timestamps reads each row's time (here a Column, by Catalyst next to the row); the map leaves
    # only v, and the window counts each v at its row's time.
    #  t*10:  0   10   30   50       tumbling(20): [0,20) 5+7   [20,40) 1   [40,60) 2
    #  v:     5    7    1    2
    df = jet.spark.createDataFrame([(1, 0, 5, 0.0), (2, 1, 7, 0.0), (1, 3, 1, 0.0), (2, 5, 2, 0.0)], SCHEMA)
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).add_timestamps(F.col("t") * 10).map(lambda r: r.v)
     .window(WindowDefinition.tumbling(20)).aggregate(ops.summing(lambda v: v)).write_to(Sinks.list("sums")))
    job, (got,) = run_job(jet, p, "sums")
    assert sorted((r.start, r.end, r.result) for r in got) == [(0, 20, 12), (20, 40, 1), (40, 60, 2)]
    assert job.metrics()["typed_windows"] == []
