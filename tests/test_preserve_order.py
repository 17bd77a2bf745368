"""preserve_order end to end, on the Spark batch engine and in light jobs: what the planner promises
across keyed shuffles and diamonds (sequence ids assigned at the source, order restored where a shuffle
from several senders mixes it, the diamond's merge in sequence order) is what the sinks see, compared
with the brute-force reference (see tests/preserve_order_cases.py for the cases and what each promises),
on local[2], on two executor JVMs (local-cluster[2,1,1024]) and in light jobs."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from preserve_order_cases import CASES, run_case

from conftest import CLUSTER_SESSION, REPO, run_job, run_python
from jetspark import AggregateOperations as ops
from jetspark import JoinClause, Pipeline, Sinks, Sources, WindowDefinition


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_sink_sees_the_promised_order_on_local_spark(jet, case):
    problems = run_case(jet, case)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", [c for c in CASES if c.light], ids=[c.name for c in CASES if c.light])
def test_the_sink_sees_the_promised_order_in_light_jobs(jet, case):
    problems = run_case(jet, case, light=True)
    assert not problems, "\n".join(problems)


def _python_work(jet, pipeline: Pipeline) -> dict:
    from jetspark._protocol import PreparedBatch

    spec, objects = pipeline.to_spec()
    return PreparedBatch(jet._bridge, jet.spark, spec, objects).python_work()


def test_without_preserve_order_no_python_step_carries_sequence_ids(jet):
    #  items ==> rebalance(x%3).map ==> grouping_key(x%2).map_stateful ==> list
    #  on: ids carried into the map (its extraction and its chain) and the map_stateful's extraction; off: none
    def pipeline(preserve: bool) -> Pipeline:
        p = Pipeline.create(preserve_order=preserve)
        (p.read_from(Sources.items(list(range(10)))).rebalance(lambda x: x % 3).map(lambda x: x + 1)
         .grouping_key(lambda x: x % 2).map_stateful(lambda: 0, lambda n, k, x: (n + 1, (k, n)))
         .write_to(Sinks.list("unused")))
        return p

    on, off = _python_work(jet, pipeline(True)), _python_work(jet, pipeline(False))
    assert [c["sequenced"] for c in on["chains"]] == [True]
    assert [e["sequenced"] for e in on["extractions"]] == [True, True]
    assert [c["sequenced"] for c in off["chains"]] == [False]
    assert [e["sequenced"] for e in off["extractions"]] == [False, False]


def _order_sensitive_window_before_a_restore_point(p: Pipeline, df: Any) -> None:
    #  df(2) -> addTimestamps -> map ~~partitioned by x%2~~> window to_list(2) ~~all-to-one~~> mapStateful(1) [restore]
    #  to_list keeps the window's input in order, so the ids would have to pass the window to the restore
    #  point; but a window's result is made of many items, none of whose ids stands for it
    (p.read_from(Sources.dataframe(df)).add_timestamps(lambda r: r.id).map(lambda r: r.id)
     .grouping_key(lambda x: x % 2).window(WindowDefinition.tumbling(5)).aggregate(ops.to_list())
     .map_stateful(lambda: 0, lambda n, w: (n + 1, (n, w))).write_to(Sinks.list("never")))


def _order_sensitive_custom_aggregation_before_a_restore_point(p: Pipeline, df: Any) -> None:
    #  df(2) -> map ~~partitioned by x%2~~> aggregate(to_list and a user-defined part, 2) ~~all-to-one~~>
    #    mapStateful(1) [restore]: as for the window, no item's id stands for a result; the operation runs
    #    in Python, which must not be asked to carry ids either
    from jetspark import AggregateOperation

    (p.read_from(Sources.dataframe(df)).map(lambda r: r.id)
     .grouping_key(lambda x: x % 2).aggregate(ops.all_of(ops.to_list(), AggregateOperation.of(lambda: 0, lambda a, x: a + x)))
     .map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("never")))


@pytest.mark.parametrize("build, message", [
    (_order_sensitive_window_before_a_restore_point,
     "'windowAggregate'.*no meaning for an aggregation: each result is made of many"),
    (_order_sensitive_custom_aggregation_before_a_restore_point, "'aggregate.*no meaning for an aggregation"),
], ids=["order-sensitive window", "order-sensitive custom aggregation"])
def test_what_preserve_order_cannot_carry_fails_before_running_naming_the_stage(jet, build, message):
    from jetspark import JobFailedError

    p = Pipeline.create(preserve_order=True)
    build(p, jet.spark.range(0, 10, 1, 2))
    with pytest.raises(JobFailedError, match=message):
        jet.new_job(p).join(timeout=300)
    assert jet.get_list("never") == []


def test_keyed_aggregates_of_rows_numbered_for_a_later_restore_point_reach_it_each_once(jet):
    # df ~~> aggregate(counting) [assigns ids] ~~partitioned by t[1]%2~~> map [restore] ~~all-to-one~~>
    #   mapStateful(1) [restore]: Catalyst would make the results without ids, so the core's processors do
    df = jet.spark.range(0, 20, 1, 2).selectExpr("id", "id % 3 AS k")
    p = Pipeline.create(preserve_order=True)
    (p.read_from(Sources.dataframe(df)).grouping_key("k").aggregate(ops.counting())
     .rebalance(lambda t: t[1] % 2).map(lambda t: t).map_stateful(lambda: 0, lambda n, t: (n + 1, (n, t)))
     .write_to(Sinks.list("numbered_counts")))
    _, (got,) = run_job(jet, p, "numbered_counts")
    assert [n for n, _ in got] == [0, 1, 2]  # one state numbers the results in the restored order
    assert sorted(t for _, t in got) == sorted(Counter(i % 3 for i in range(20)).items())


@pytest.mark.parametrize("python_branch", [False, True], ids=["columns-only", "with-a-python-branch"])
def test_columns_on_a_dataframe_source_numbered_for_restore_points_keep_its_order(jet, python_branch):
    # df(3) [assigns ids] ~~partitioned by Column (id*7%11)%4~~> distinct(2) [restore] ~~all-to-one~~>
    #   mapStateful(1) [restore] ==> firsts;
    #   ~~partitioned by Column k~~> mapStateful(2) [restore] ==> seen;
    #   ~~partitioned by k~~> rollingAggregate(summing(Column v*2))(2) [restore] ==> sums;
    #   (with_python_branch) ==> map ==> ids
    # The source's items are Python objects at once (they carry ids); the Columns are evaluated beside its
    # rows, whose extractions get the same ids.
    from pyspark.sql import functions as F
    from preserve_order_cases import numbers

    df = numbers(jet.spark)
    rows = df.collect()  # the source's order: partition after partition
    p = Pipeline.create(preserve_order=True)
    source = p.read_from(Sources.dataframe(df))
    (source.grouping_key(F.col("id") * 7 % 11 % 4).distinct()
     .map_stateful(lambda: 0, lambda n, r: (n + 1, (n, r.id))).write_to(Sinks.list("firsts")))
    (source.grouping_key(F.col("k")).map_stateful(lambda: [], lambda seen, k, r: (seen + [r.id], (k, r.id, seen)))
     .write_to(Sinks.list("seen")))
    source.grouping_key("k").rolling_aggregate(ops.summing(F.col("v") * 2)).write_to(Sinks.list("sums"))
    if python_branch:
        source.map(lambda r: r.id).write_to(Sinks.list("ids"))
    job, (firsts, seen, sums, ids) = run_job(jet, p, "firsts", "seen", "sums", "ids")

    first_of: dict[int, int] = {}
    for r in rows:
        first_of.setdefault(r.id * 7 % 11 % 4, r.id)
    assert firsts == list(enumerate(first_of.values()))  # the distinct's survivors, restored to source order
    expected_seen: dict[int, list] = {}
    expected_sums: dict[int, list] = {}
    for r in rows:
        before = [x for _, x, _ in expected_seen.get(r.k, [])]
        expected_seen.setdefault(r.k, []).append((r.k, r.id, before))
        total = (expected_sums[r.k][-1][1] if r.k in expected_sums else 0) + r.v * 2
        expected_sums.setdefault(r.k, []).append((r.k, total))
    # each key's outputs in source order (keys interleave as they may)
    assert {k: [o for o in seen if o[0] == k] for k in expected_seen} == expected_seen
    assert {k: [o for o in sums if o[0] == k] for k in expected_sums} == expected_sums
    assert ids == ([r.id for r in rows] if python_branch else [])
    assert job.metrics()["vertices"]["dataframe-source"]["items_out"] == len(rows)  # each row counted once


@pytest.mark.parametrize("mover", ["window function", "generator", "correlated subquery", "IN subquery"])
def test_a_column_that_moves_a_numbered_sources_rows_is_refused_naming_the_stage(jet, mover):
    #  df [assigns ids] ~~partitioned by the Column~~> distinct [restore]: a window function, a generator (it
    #  makes rows), or a correlated or IN subquery (a join), would move the rows before they are numbered as
    #  the source numbers them
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from jetspark import PipelineDefinitionError

    df = jet.spark.range(0, 10, 1, 2).select(F.col("id").alias("n"))
    key, shown = {
        "window function": (F.row_number().over(Window.orderBy(F.desc("n"))) % 2, "row_number"),
        "generator": (F.explode(F.array(F.col("n"), F.col("n") + 1)), "explode"),
        "correlated subquery": (jet.spark.range(3).where(F.col("id") == (F.col("n") % 5).outer()).exists(), "EXISTS"),
        "IN subquery": (F.col("n").isin(jet.spark.range(3)), "IN"),
    }[mover]
    p = Pipeline.create(preserve_order=True)
    p.read_from(Sources.dataframe(df)).grouping_key(key).distinct().write_to(Sinks.list("never"))
    with pytest.raises(PipelineDefinitionError, match=f"(?s)'distinct'.*'columns-on-typed-items'.*{shown}.*beside each row"):
        jet.new_job(p).join(timeout=300)
    assert jet.get_list("never") == []


def test_a_column_that_moves_rows_is_read_where_the_numbered_sources_items_carry_no_ids(jet):
    #  df [assigns ids] ~~partitioned by n % 3~~> distinct [restore] ==> firsts
    #                   ~~partitioned by row_number() % 2~~> aggregate(counting): no ids on this edge, so the
    #  window function, which moves the rows, is read as Catalyst reads it
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = jet.spark.range(0, 10, 1, 2).select(F.col("id").alias("n"))
    p = Pipeline.create(preserve_order=True)
    source = p.read_from(Sources.dataframe(df))
    source.grouping_key(F.col("n") % 3).distinct().map_stateful(lambda: 0, lambda i, r: (i + 1, (i, r.n))) \
        .write_to(Sinks.list("firsts"))
    (source.grouping_key(F.row_number().over(Window.orderBy(F.desc("n"))) % 2).aggregate(ops.counting())
     .write_to(Sinks.list("halves")))
    _, (firsts, halves) = run_job(jet, p, "firsts", "halves")
    assert firsts == [(0, 0), (1, 1), (2, 2)]
    assert sorted(halves) == [(0, 5), (1, 5)]


def test_the_items_and_the_columns_of_a_numbered_dataframe_source_are_of_one_read_of_it(jet):
    # df(3, a column that differs at each read) [assigns ids] ~~partitioned by Column id%4~~> distinct
    #                                                        ==> map ==> all
    # Read twice, the distinct's rows would not be among the map's, nor carry the ids of the same items.
    import random

    from pyspark.sql import functions as F

    draw = F.udf(lambda: random.random(), "double").asNondeterministic()
    df = jet.spark.range(0, 40, 1, 3).withColumn("r", draw())
    p = Pipeline.create(preserve_order=True)
    source = p.read_from(Sources.dataframe(df))
    source.grouping_key(F.col("id") % 4).distinct().write_to(Sinks.list("firsts"))
    source.map(lambda r: (r.id, r.r)).write_to(Sinks.list("all"))
    _, (firsts, every) = run_job(jet, p, "firsts", "all")
    drawn = dict(every)
    assert len(drawn) == 40
    assert sorted((r.id, r.r) for r in firsts) == [(i, drawn[i]) for i in range(4)]


def _grouped_ids(jet: Any) -> tuple[Callable[..., Any], Any]:
    """A maker of DataFrames of the 30 ids from ``first`` (in 3 partitions) grouped by ``id % 5`` into
    ``(k, n)``, and the accumulator that counts the ids a UDF below the group-by's shuffle makes (none
    without ``counting``)."""
    from pyspark.sql import functions as F

    made = jet.spark.sparkContext.accumulator(0)

    def counted(i):  # (no type hints: with them PySpark looks for a pandas UDF and warns)
        made.add(1)
        return i

    def grouped(first: int, counting: bool = True) -> Any:
        ids = jet.spark.range(first, first + 30, 1, 3)
        if counting:
            ids = ids.select(F.udf(counted, "long")("id").alias("id"))
        return ids.groupBy((F.col("id") % 5).alias("k")).agg(F.count("*").alias("n"))

    return grouped, made


@pytest.mark.parametrize("coalesced", [True, False], ids=["coalesced into one partition", "two partitions"])
def test_a_dataframe_source_read_as_one_partition_runs_its_query_once(jet, coalesced):
    # grouped ids [one processor: read as one partition] ~~by Column k~~> sums
    # Adaptive execution runs the group-by's shuffle to tell the query's partitions, and coalesces so few
    # rows into one partition unless told not to: the job must read the rows that made, not plan the
    # DataFrame again.
    from pyspark.sql import functions as F

    grouped, made = _grouped_ids(jet)
    setting = "spark.sql.adaptive.coalescePartitions.enabled"
    before = jet.spark.conf.get(setting)
    jet.spark.conf.set(setting, str(coalesced).lower())
    try:
        # (The same query without the UDF tells which way the source reads it.)
        assert grouped(0, counting=False).rdd.getNumPartitions() == (1 if coalesced else 2)
        p = Pipeline.create(preserve_order=True)
        (p.read_from(Sources.dataframe(grouped(0))).set_local_parallelism(1).grouping_key(F.col("k"))
         .aggregate(ops.summing("n")).write_to(Sinks.list("sums")))
        _, (sums,) = run_job(jet, p, "sums")
    finally:
        jet.spark.conf.set(setting, before)
    assert sorted(sums) == [(k, 6) for k in range(5)]
    assert made.value == 30


@pytest.mark.parametrize("preserve_order", [True, False], ids=["preserve_order, merged as one partition", "unordered"])
def test_merged_dataframe_sources_run_their_queries_once(jet, preserve_order):
    # grouped ids 0..29, grouped ids 100..129 -> merge [one processor] ~~by field k~~> sums
    # Telling the merge's partitions (adaptive execution runs the shuffles below) must not run either query twice.
    grouped, made = _grouped_ids(jet)
    p = Pipeline.create(preserve_order=preserve_order)
    merged = p.read_from(Sources.dataframe(grouped(0))).merge(p.read_from(Sources.dataframe(grouped(100))))
    merged.set_local_parallelism(1).grouping_key("k").aggregate(ops.summing("n")).write_to(Sinks.list("sums"))
    _, (sums,) = run_job(jet, p, "sums")
    assert sorted(sums) == [(k, 12) for k in range(5)]
    assert made.value == 60


def test_a_hidden_column_read_behind_a_shuffled_file_source_of_one_partition_is_read(jet, tmp_path):
    # parquet(4 files).repartition(1) [one processor: one partition already] ~~by _metadata.file_name~~> counts
    # Adaptive execution runs the repartition to tell its partitions; the rows that made hold no
    # _metadata, which the DataFrame itself still has (a repartition keeps its child's hidden columns).
    from pyspark.sql import functions as F

    jet.spark.range(0, 40, 1, 4).selectExpr("id").write.parquet(str(tmp_path / "t"))
    files = jet.spark.read.parquet(str(tmp_path / "t")).repartition(1)
    p = Pipeline.create(preserve_order=True)
    (p.read_from(Sources.dataframe(files)).set_local_parallelism(1).grouping_key(F.col("_metadata.file_name"))
     .aggregate(ops.counting()).write_to(Sinks.list("file_counts")))
    _, (file_counts,) = run_job(jet, p, "file_counts")
    expected = Counter(r.f for r in jet.spark.read.parquet(str(tmp_path / "t")).select(
        F.col("_metadata.file_name").alias("f")).collect())
    assert sorted(file_counts) == sorted(expected.items())
    assert len(expected) == 4


def test_a_hidden_column_read_where_a_file_source_is_read_as_one_partition_fails_naming_it_and_selected_works(
        jet, tmp_path):
    # parquet(4 partitions) [one processor: read as one partition, in order, of its columns alone]
    #   ~~partitioned by _metadata.file_name~~> aggregate(to_list), distinct
    from pyspark.sql import functions as F

    from jetspark import PipelineDefinitionError

    jet.spark.range(0, 40, 1, 4).selectExpr("id", "id % 3 AS k").write.parquet(str(tmp_path / "t"))
    before = jet.spark.conf.get("spark.sql.files.maxPartitionBytes")
    # (As little as a file's opening cost: each file is a partition of its own.)
    jet.spark.conf.set("spark.sql.files.maxPartitionBytes", jet.spark.conf.get("spark.sql.files.openCostInBytes"))
    try:
        files = jet.spark.read.parquet(str(tmp_path / "t"))
        assert files.rdd.getNumPartitions() == 4

        def pipeline(df: Any) -> Pipeline:
            p = Pipeline.create(preserve_order=True)
            source = p.read_from(Sources.dataframe(df)).set_local_parallelism(1)
            source.grouping_key(F.col("_metadata.file_name")).aggregate(ops.to_list()).write_to(Sinks.list("by_file"))
            source.grouping_key(F.col("_metadata.file_name")).distinct().write_to(Sinks.list("first_of_file"))
            return p

        for name in ("by_file", "first_of_file"):
            jet.clear_list(name)
        with pytest.raises(PipelineDefinitionError, match="'dataframe-source'.*'hidden-columns-in-one-partition'.*"
                                                          r"\(_metadata\).*df\.select\(\"\*\", \"_metadata\"\)"):
            jet.new_job(pipeline(files)).join(timeout=300)
        assert jet.get_list("by_file") == jet.get_list("first_of_file") == []  # refused before any sink is written
        # Columns of its own columns are read beside those rows, and another source's Columns are its own:
        # files [one processor] ~~by k*2~~> counts;  files [two] ~~by _metadata.file_name~~> counts
        p = Pipeline.create(preserve_order=True)
        (p.read_from(Sources.dataframe(files)).set_local_parallelism(1).grouping_key(F.col("k") * 2)
         .aggregate(ops.counting()).write_to(Sinks.list("by_k")))
        (p.read_from(Sources.dataframe(files)).set_local_parallelism(2).grouping_key(F.col("_metadata.file_name"))
         .aggregate(ops.counting()).write_to(Sinks.list("file_counts")))
        # ... also where both meet in one vertex: files [one processor] joined by k with files by _metadata
        named = p.read_from(Sources.dataframe(files)).set_local_parallelism(2)
        (p.read_from(Sources.dataframe(files)).set_local_parallelism(1)
         .hash_join(named, JoinClause.on(F.col("id"), F.col("_metadata.file_name")), lambda r, m: (r.id, m))
         .write_to(Sinks.list("joined")))
        _, (by_k, file_counts, joined) = run_job(jet, p, "by_k", "file_counts", "joined")
        assert sorted(by_k) == sorted(Counter(2 * (i % 3) for i in range(40)).items())
        assert sorted(n for _, n in file_counts) == [10, 10, 10, 10]
        assert sorted(joined) == [(i, None) for i in range(40)]  # no id equals a file's name
        selected = files.select("*", "_metadata")  # the remedy the error names
        rows = selected.select("id", "_metadata.file_name").collect()
        _, (by_file, firsts) = run_job(jet, pipeline(selected), "by_file", "first_of_file")
    finally:
        jet.spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    expected: dict[str, list[int]] = {}
    for r in rows:
        expected.setdefault(r.file_name, []).append(r.id)
    assert {name: [r.id for r in items] for name, items in by_file} == expected
    assert sorted(r.id for r in firsts) == sorted(ids[0] for ids in expected.values())


ONE_PROCESSOR_JOB = """
import jetspark as js
jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.default.parallelism": "1"})
df = jet.spark.range(0, 10, 1, 2)  # two partitions, where the plan has one processor per vertex
p = js.Pipeline.create(preserve_order=True)
a = p.read_from(js.Sources.dataframe(df)).map(lambda r: r.id)
a.rebalance(lambda x: x % 2).map(lambda x: x + 1).merge(a.map(lambda x: x - 1)).write_to(js.Sinks.list("merged"))
jet.new_job(p).join(timeout=300)
print("MERGED", jet.get_list("merged"))
rows = jet.spark.range(0, 10, 1, 2).selectExpr("id", "id % 3 AS k")
p = js.Pipeline.create(preserve_order=True)  # a key of the user's column, evaluated beside the rows
p.read_from(js.Sources.dataframe(rows)).grouping_key(rows.k * 10).aggregate(js.AggregateOperations.to_list()) \
    .write_to(js.Sinks.list("listed"))
jet.new_job(p).join(timeout=300)
print("LISTED", sorted((k, [r.id for r in xs]) for k, xs in jet.get_list("listed")))
jet.stop()
"""


def test_a_job_planned_with_one_processor_per_vertex_keeps_order_over_a_dataframe_of_many_partitions():
    # The diamond above, at parallelism 1: every edge is between single processors, so its branches line up
    # and the merge keeps the source order, also where the DataFrame comes in two partitions (a fresh
    # process: the shared session's parallelism is 2).
    done = run_python(ONE_PROCESSOR_JOB, cwd=REPO)
    assert done.returncode == 0, done.stderr[-4000:]
    merged = next(line for line in done.stdout.splitlines() if line.startswith("MERGED "))
    # Per source item in order, the first branch's output before the second's.
    assert merged == "MERGED " + str([y for x in range(10) for y in (x + 1, x - 1)])
    # Each key's rows in source order.
    listed = next(line for line in done.stdout.splitlines() if line.startswith("LISTED "))
    assert listed == "LISTED " + str([(k * 10, [i for i in range(10) if i % 3 == k]) for k in range(3)])


CLUSTER_JOB = """
import json, sys
sys.path.insert(0, "tests")
import jetspark as js
from preserve_order_cases import CASES, run_case

jet = CLUSTER_SESSION
results = {case.name: run_case(jet, case) for case in CASES}
print("EXECUTORS", jet.spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)
print("RESULTS", json.dumps(results))
jet.stop()
"""


@pytest.fixture(scope="module")
def cluster_results() -> dict[str, list[str]]:
    """Every case run once on two executor JVMs (one cluster session for the module: it is slow to start)."""
    done = run_python(CLUSTER_JOB.replace("CLUSTER_SESSION", CLUSTER_SESSION), cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "EXECUTORS 2" in done.stdout, done.stdout
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULTS "))
    return json.loads(line[len("RESULTS "):])


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_sink_sees_the_promised_order_on_two_executor_jvms(cluster_results, case):
    problems = cluster_results[case.name]
    assert not problems, "\n".join(problems)
