"""Files sources and the sinks that take rows (files, foreach_batch) on the Spark batch engine.

A files source is the DataFrame source of what ``spark.read`` gives: its items equal ``df.collect()``.
A rows sink makes opaque items rows of the sink's schema (given, or inferred as
``spark.createDataFrame`` infers it: dict keys and object attributes sorted by name, Row and namedtuple
fields in their order, plain tuples ``_1, _2, ...``, anything else one column ``value``).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import examples, run_job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from jetspark import DeadLetter, JobFailedError, Pipeline, PipelineDefinitionError, Sinks, Sources
from jetspark import AggregateOperations as ops

from file_items import Point, Reading, SlottedReading


@pytest.fixture(scope="module", autouse=True)
def workers_import_item_classes(jet):
    jet.spark.sparkContext.addPyFile(str(Path(__file__).with_name("file_items.py")))


def run(jet, p: Pipeline, *lists: str):
    """Runs ``p``; returns its metrics per vertex and what its lists got (then clears them)."""
    job, got = run_job(jet, p, *lists)
    return job.metrics()["vertices"], got


def failure(jet, p: Pipeline) -> JobFailedError:
    with pytest.raises(JobFailedError) as e:
        jet.new_job(p).join(timeout=300)
    return e.value


PEOPLE = [(1, "ann", 31.5), (2, "bob", 40.0), (3, "cy", None), (4, "dee", 22.25)]


# ---- files sources --------------------------------------------------------------------------------

def write_people(path: Path, format: str) -> dict[str, str]:
    """Writes PEOPLE in ``format`` with plain Python (no Spark); returns the read options it needs."""
    path.mkdir()
    if format == "json":
        with open(path / "people.json", "w") as f:
            for i, name, score in PEOPLE:
                f.write(json.dumps({"id": i, "name": name, "score": score}) + "\n")
        return {}
    with open(path / "people.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "name", "score"])
        out.writerows([(i, name, "" if score is None else score) for i, name, score in PEOPLE])
    return {"header": "true", "inferSchema": "true"}


@pytest.mark.parametrize("format", ["json", "csv"])
def test_a_files_source_gives_the_rows_of_files_python_wrote(jet, tmp_path, format):
    options = write_people(tmp_path / "in", format)
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "in"), format=format, **options)).write_to(Sinks.list("rows"))
    vertices, (rows,) = run(jet, p, "rows")
    assert sorted((r["id"], r["name"], r["score"]) for r in rows) == PEOPLE
    assert sorted(rows) == sorted(jet.spark.read.format(format).options(**options).load(str(tmp_path / "in")).collect())
    assert vertices["files-source"]["items_out"] == len(PEOPLE) and vertices["list-sink"]["items_in"] == len(PEOPLE)


def test_a_parquet_files_source_equals_collect_and_feeds_python_stages(jet, tmp_path):
    df = jet.spark.createDataFrame(PEOPLE * 3, "id INT, name STRING, score DOUBLE").repartition(3)
    df.write.parquet(str(tmp_path / "in"))
    p = Pipeline.create()
    rows = p.read_from(Sources.files(str(tmp_path / "in")))
    rows.write_to(Sinks.list("rows"))
    rows.filter(lambda r: r.score is not None).grouping_key("name").aggregate(ops.summing("score")) \
        .write_to(Sinks.list("sums"))
    _, (got, sums) = run(jet, p, "rows", "sums")
    assert sorted(got) == sorted(jet.spark.read.parquet(str(tmp_path / "in")).collect())
    assert sorted(sums) == sorted((name, 3 * score) for _, name, score in PEOPLE if score is not None)


def test_a_files_source_that_cannot_be_read_fails_the_job_naming_the_stage(jet, tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "missing"))).set_name("orders").write_to(Sinks.noop())
    e = failure(jet, p)
    assert e.stage == "orders" and "PATH_NOT_FOUND" in str(e) and "reading parquet files" in str(e)
    (tmp_path / "x.txt").write_text("x\n")
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "x.txt"), format="no-such-format")).write_to(Sinks.noop())
    e = failure(jet, p)
    assert e.stage == "files-source" and "no-such-format" in str(e)


def test_a_file_that_fails_only_when_scanned_fails_the_job_naming_the_source(jet, tmp_path):
    # Opening reads the header alone; the malformed line is met while the job reads the rows.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,name\n1,ann\n2,bob,extra\n")
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "in"), format="csv", header=True, mode="FAILFAST")).set_name("people") \
        .write_to(Sinks.noop())
    e = failure(jet, p)
    assert e.stage == "people" and "reading csv files" in str(e)


# ---- files sinks ----------------------------------------------------------------------------------

#: Items of each kind, with the rows createDataFrame's rules give them (the spec; columns in order).
KINDS = {
    "dicts": ([{"name": "a", "n": 1}, {"n": 2, "name": "b"}], ["n", "name"], [(1, "a"), (2, "b")]),
    "tuples": ([(1, "a"), (2, "b")], ["_1", "_2"], [(1, "a"), (2, "b")]),
    "rows": ([Row(name="a", n=1), Row(name="b", n=2)], ["name", "n"], [("a", 1), ("b", 2)]),
    "namedtuples": ([Point(y=1, x=2), Point(y=3, x=4)], ["y", "x"], [(1, 2), (3, 4)]),
    "dataclasses": ([Reading("s1", 1.5), Reading("s2", 2.5)], ["sensor", "value"], [("s1", 1.5), ("s2", 2.5)]),
    "slotted dataclasses": ([SlottedReading("s1", 1.5)], ["sensor", "value"], [("s1", 1.5)]),
    "primitives": ([1.5, 2.5, 4.0], ["value"], [(1.5,), (2.5,), (4.0,)]),
    # Nested Rows match by name too (which Row's field order the schema takes depends on arrival order).
    "nested": ([{"id": 1, "at": Row(x=1, y="p"), "tags": ["a"]}, {"id": 2, "at": Row(y="q", x=2), "tags": []}],
               ["at", "id", "tags"], [({"x": 1, "y": "p"}, 1, ["a"]), ({"x": 2, "y": "q"}, 2, [])]),
}


def by_name(value):
    """A value with its rows as sorted (field, value) pairs, lists as tuples: comparable whatever the order
    of a struct's fields."""
    if isinstance(value, Row):
        value = value.asDict()
    if isinstance(value, dict):
        return tuple(sorted((k, by_name(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(by_name(v) for v in value)
    return value


@pytest.mark.parametrize("kind", KINDS)
def test_a_files_sink_writes_items_as_rows_of_the_inferred_schema(jet, tmp_path, kind):
    items, columns, expected = KINDS[kind]
    p = Pipeline.create()
    p.read_from(Sources.items(items)).write_to(Sinks.files(str(tmp_path / "out")))
    vertices, _ = run(jet, p)
    back = jet.spark.read.parquet(str(tmp_path / "out"))
    assert back.columns == columns
    assert sorted(by_name(tuple(r)) for r in back.collect()) == sorted(by_name(e) for e in expected)
    assert (vertices["files-sink"]["items_in"], vertices["files-sink"]["items_out"]) == (len(items), len(items))


def test_inference_merges_the_first_items_as_create_dataframe_does(jet, tmp_path):
    items = [{"a": 1, "b": None}, {"a": 2, "b": "x"}, {"a": 3, "c": 1.5}]
    p = Pipeline.create()
    p.read_from(Sources.items(items)).write_to(Sinks.files(str(tmp_path / "out"), format="json"))
    run(jet, p)
    back = jet.spark.read.schema("a BIGINT, b STRING, c DOUBLE").json(str(tmp_path / "out"))
    assert sorted(back.collect()) == [(1, None, None), (2, "x", None), (3, None, 1.5)]


def test_a_given_schema_types_the_columns(jet, tmp_path):
    schema = StructType([StructField("id", IntegerType()), StructField("name", StringType())])
    p = Pipeline.create()
    stage = p.read_from(Sources.items([(1, "a"), (2, "b")]))
    stage.write_to(Sinks.files(str(tmp_path / "struct"), schema=schema))
    stage.write_to(Sinks.files(str(tmp_path / "ddl"), schema="id INT, name STRING"))
    stage.map(lambda t: t[0]).write_to(Sinks.files(str(tmp_path / "primitive"), schema=IntegerType()))
    run(jet, p)
    for name in ("struct", "ddl"):
        back = jet.spark.read.parquet(str(tmp_path / name))
        assert back.schema == schema and sorted(back.collect()) == [(1, "a"), (2, "b")]
    back = jet.spark.read.parquet(str(tmp_path / "primitive"))
    assert back.schema == StructType([StructField("value", IntegerType())]) and sorted(back.collect()) == [(1,), (2,)]


def test_append_adds_rows_and_overwrite_replaces_them(jet, tmp_path):
    path = str(tmp_path / "out")

    def write(items, mode):
        p = Pipeline.create()
        p.read_from(Sources.items(items)).write_to(Sinks.files(path, format="csv", mode=mode, schema="n INT"))
        run(jet, p)
        return sorted(r.n for r in jet.spark.read.schema("n INT").csv(path).collect())

    assert write([1, 2], "append") == [1, 2]
    assert write([3], "append") == [1, 2, 3]
    assert write([4, 5], "overwrite") == [4, 5]
    with pytest.raises(JobFailedError) as e:
        p = Pipeline.create()
        p.read_from(Sources.items([6])).write_to(Sinks.files(path, mode="error"))
        jet.new_job(p).join(timeout=300)
    assert e.value.stage == "files-sink" and "already exists" in str(e.value)


def test_a_dataframe_source_written_to_files_reads_back_as_the_same_rows(jet, tmp_path):
    import datetime

    df = jet.spark.createDataFrame(
        [(1, {"a": 1}, (2, "x"), [1, 2], datetime.datetime(2026, 1, 2, 3, 4, 5)), (2, {}, (3, "y"), [], None)],
        "id INT, props MAP<STRING, INT>, inner STRUCT<n: INT, s: STRING>, xs ARRAY<INT>, at TIMESTAMP")
    p = Pipeline.create()
    p.read_from(Sources.dataframe(df)).write_to(Sinks.files(str(tmp_path / "out"), schema=df.schema))
    run(jet, p)
    assert sorted(jet.spark.read.parquet(str(tmp_path / "out")).collect()) == sorted(df.collect())


def test_files_round_trip_through_a_pipeline(jet, tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.items([Reading(f"s{i % 3}", i * 0.5) for i in range(12)])).write_to(
        Sinks.files(str(tmp_path / "readings"), format="json"))
    run(jet, p)
    p = Pipeline.create()
    (p.read_from(Sources.files(str(tmp_path / "readings"), format="json")).grouping_key("sensor")
     .aggregate(ops.counting()).write_to(Sinks.files(str(tmp_path / "counts"), format="csv", header=True)))
    run(jet, p)
    back = jet.spark.read.csv(str(tmp_path / "counts"), header=True, inferSchema=True)
    assert back.columns == ["_1", "_2"] and sorted(back.collect()) == [("s0", 4), ("s1", 4), ("s2", 4)]


def test_nothing_is_written_without_items_or_a_schema_and_an_empty_table_with_one(jet, tmp_path):
    p = Pipeline.create()
    stage = p.read_from(Sources.items([1, 2])).filter(lambda x: x > 5)
    stage.write_to(Sinks.files(str(tmp_path / "inferred")))
    stage.write_to(Sinks.files(str(tmp_path / "given"), schema="n INT"))
    run(jet, p)
    assert not (tmp_path / "inferred").exists()
    back = jet.spark.read.parquet(str(tmp_path / "given"))
    assert back.columns == ["n"] and back.count() == 0


# ---- records that do not fit ----------------------------------------------------------------------

def test_a_record_that_does_not_fit_fails_the_job_naming_the_sink_and_the_record(jet, tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.items([{"a": 1}, {"a": 2}, {"a": 3, "extra": True}])).write_to(
        Sinks.files(str(tmp_path / "out"), schema="a INT")).set_name("archive")
    e = failure(jet, p)
    assert e.stage == "archive"
    assert "failed on record {'a': 3, 'extra': True}" in str(e) and "'extra' not in the sink's schema" in str(e)


def test_records_that_do_not_fit_go_to_the_sinks_dead_letters(jet, tmp_path):
    items = [1, 2, "three", 4, None, 6.5]
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).write_to(Sinks.files(str(tmp_path / "out"), schema="value BIGINT NOT NULL"))
     .on_error(Sinks.dead_letter("misfits")))
    vertices, (misfits,) = run(jet, p, "misfits")
    assert sorted(r.value for r in jet.spark.read.parquet(str(tmp_path / "out")).collect()) == [1, 2, 4]
    assert sorted(((d.record, d.stage) for d in misfits if d.record is not None), key=repr) == \
        [("three", "files-sink"), (6.5, "files-sink")]
    assert all(isinstance(d, DeadLetter) for d in misfits) and len(misfits) == 3
    assert any(d.record is None and "not nullable" in d.error for d in misfits)
    sink = vertices["files-sink"]
    assert (sink["items_in"], sink["items_out"], sink["dead_letters"]) == (6, 3, 3)
    assert vertices["files-sink-dead-letter"]["items_in"] == 3


@pytest.mark.parametrize("items, schema, message", [
    ([{"a": 1, "b": None}, {"a": 2, "b": None}], None, "a field is None in all of them"),
    ([1, 2], "id INTEGR", "INTEGR"),
])
def test_a_sink_without_a_usable_schema_fails_the_job_naming_it(jet, tmp_path, items, schema, message):
    p = Pipeline.create()
    p.read_from(Sources.items(items)).write_to(Sinks.files(str(tmp_path / "out"), schema=schema)).set_name("archive")
    e = failure(jet, p)
    assert e.stage == "archive" and message in str(e)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("schema", [None, "value INT"])  # inferring reads the items before the writing does
def test_a_failure_upstream_of_a_sink_names_the_failing_stage_not_the_sink(jet, tmp_path, schema):
    p = Pipeline.create()
    p.read_from(Sources.items([1, 0])).map(lambda x: 1 // x).set_name("inverse").write_to(
        Sinks.files(str(tmp_path / "out"), schema=schema))
    assert failure(jet, p).stage == "inverse"


def test_on_error_is_for_sinks_that_make_rows(jet):
    p = Pipeline.create()
    p.read_from(Sources.items([1])).write_to(Sinks.list("out")).on_error(Sinks.dead_letter("bad"))
    with pytest.raises(PipelineDefinitionError, match="never fails on a record"):
        p.explain()
    with pytest.raises(TypeError, match="dead_letter"):
        Pipeline.create().read_from(Sources.items([1])).write_to(Sinks.noop()).on_error(Sinks.list("x"))
    with pytest.raises(TypeError, match="schema"):
        Sinks.files("/tmp/never", schema=3)


# ---- foreach_batch --------------------------------------------------------------------------------

def test_foreach_batch_gets_the_rows_as_a_dataframe_and_batch_id_0(jet):
    calls = []

    def record(df, batch_id):
        calls.append((df.columns, df.count(), sorted(df.collect()), batch_id))

    p = Pipeline.create()
    p.read_from(Sources.items([{"k": i % 2, "v": i} for i in range(10)])).write_to(Sinks.foreach_batch(record))
    vertices, _ = run(jet, p)
    assert calls == [(["k", "v"], 10, sorted((i % 2, i) for i in range(10)), 0)]
    # The function ran two actions; the pipeline still ran, and counted, once.
    assert vertices["items-source"]["items_out"] == 10 and vertices["foreachBatch-sink"]["items_out"] == 10


def test_foreach_batch_can_write_with_spark_and_takes_a_schema(jet, tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.items([3, 1, 2])).write_to(Sinks.foreach_batch(
        lambda df, batch_id: df.write.parquet(str(tmp_path / f"batch-{batch_id}")), schema="n INT"))
    run(jet, p)
    back = jet.spark.read.parquet(str(tmp_path / "batch-0"))
    assert back.schema == StructType([StructField("n", IntegerType())]) and sorted(back.collect()) == [(1,), (2,), (3,)]


def test_a_failing_foreach_batch_function_fails_the_job_naming_the_sink(jet):
    def explode(df, batch_id):
        raise RuntimeError(f"no room for {df.count()} rows")

    p = Pipeline.create()
    p.read_from(Sources.items([1, 2])).write_to(Sinks.foreach_batch(explode)).set_name("upload")
    e = failure(jet, p)
    assert e.stage == "upload" and "RuntimeError: no room for 2 rows" in str(e)


# ---- against Spark's own createDataFrame ----------------------------------------------------------

records = st.lists(st.fixed_dictionaries(
    {"k": st.integers(-3, 3)},
    optional={"name": st.text("abc", max_size=3), "score": st.floats(-10, 10, allow_nan=False),
              "tags": st.lists(st.integers(0, 9), min_size=1, max_size=2)}), min_size=1, max_size=15)


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records)
def test_written_rows_equal_what_create_dataframe_makes_of_the_items(jet, tmp_path_factory, items):
    path = str(tmp_path_factory.mktemp("random") / "out")
    p = Pipeline.create()
    p.read_from(Sources.items(items)).rebalance().write_to(Sinks.files(path))
    run(jet, p)
    expected = jet.spark.createDataFrame(items)
    back = jet.spark.read.parquet(path)
    # Merged schemas order their fields by which item came first: compare fields and rows by name.
    assert sorted(back.schema.fields, key=lambda f: f.name) == sorted(expected.schema.fields, key=lambda f: f.name)
    assert Counter(map(by_name, back.collect())) == Counter(map(by_name, expected.collect()))
