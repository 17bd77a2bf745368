"""Streams on two executor JVMs (local-cluster[2,1,1024]), against the brute-force stream reference:

- keyed sliding windows (of a built-in operation, or of a user-defined one that Python runs, its failures
  and late events dead letters) and sessions, over three skewed substreams with out-of-order items: the
  windows, late counts and dead letters; and the same substreams as two sources, merged;
- under preserve_order, keyed state, a diamond's merge and a join into a rolling aggregation: the order;
- random windows, built-in or user-defined, over random stream inputs;
- sliding windows over a streaming DataFrame's rows read in the JVM in three tasks.

The state of each epoch lives in the executors' state stores, and every substream's items travel inside
its micro-batch's partitions."""

from __future__ import annotations

import json

import pytest

from conftest import CLUSTER_SESSION, REPO, examples, run_python

pytestmark = pytest.mark.slow

CLUSTER_JOB = f"""
import json, sys
sys.path.insert(0, "tests")
import jetspark as js
from jetspark import AggregateOperation, AggregateOperations, Pipeline, Sinks, WindowDefinition
from reference import as_multiset
from stream_reference import run_stream_reference
from stream_strategies import StreamInput

jet = {CLUSTER_SESSION}
# Substream 0 runs 100 s ahead; every fifth item of it and every fourth of substream 2 is out of order.
substreams = [[{{"s": 0, "k": i % 3, "v": i, "t": 100_000 + i * 7 - (30 if i % 5 == 4 else 0)}} for i in range(30)],
              [{{"s": 1, "k": i % 3, "v": i, "t": i * 9}} for i in range(30)],
              [{{"s": 2, "k": i % 3, "v": i, "t": 50 + i * 5 - (40 if i % 4 == 3 else 0)}} for i in range(25)]]
results = {{}}
# A user-defined sum that fails on every value divisible by 7 runs in Python, its windows kept in the
# executors' state stores; its failures and late events are dead letters.
failing_sum = AggregateOperation.of(lambda: 0, lambda a, e: a + e["v"] + 0 // (e["v"] % 7), combine=lambda a, b: a + b)
for name, window, operation in (("sliding", WindowDefinition.sliding(40, 10), AggregateOperations.summing("v")),
                                ("session", WindowDefinition.session(12), AggregateOperations.summing("v")),
                                ("user-defined sliding", WindowDefinition.sliding(40, 10), failing_sum)):
    p = Pipeline.create()
    stage = StreamInput(substreams, 3, 5).source(p).grouping_key("k").window(window).aggregate(operation).set_name("w")
    stage.write_to(Sinks.list("out"))
    if operation is failing_sum:
        stage.on_error(Sinks.dead_letter("bad"))
    expected = run_stream_reference(p)
    job = jet.new_job(p)
    job.join(timeout=900)
    got, letters = jet.get_list("out"), [(d.record, d.stage, d.error.split(":")[0]) for d in jet.get_list("bad")]
    jet.clear_list("out")
    jet.clear_list("bad")
    results[name] = {{"same_windows": as_multiset(got) == as_multiset(expected.outputs["out"]), "windows": len(got),
                     "late": job.metrics()["late_events_dropped"], "expected_late": sum(expected.late_dropped.values()),
                     "same_letters": as_multiset(letters) == as_multiset(expected.outputs.get("dead_letter:bad", []))}}

# Two sources, each cut by its own k, merged: the window coalesces the substreams of both.
p = Pipeline.create()
merged = StreamInput(substreams[:2], 3, 5).source(p).merge(StreamInput(substreams[2:], 2, 5).source(p))
(merged.grouping_key("k").window(WindowDefinition.sliding(40, 10)).aggregate(AggregateOperations.summing("v"))
 .write_to(Sinks.list("out")))
expected = run_stream_reference(p)
job = jet.new_job(p)
job.join(timeout=900)
got = jet.get_list("out")
jet.clear_list("out")
results["merged sources"] = {{"same_windows": as_multiset(got) == as_multiset(expected.outputs["out"]), "windows": len(got),
                             "late": job.metrics()["late_events_dropped"], "expected_late": sum(expected.late_dropped.values())}}

# preserve_order: each key's state, and a diamond's merge read by one global state, see the items in the
# reference's order, although they cross a shuffle between the executors.
def history(state, key, e):
    state = (*state, (e["s"], e["i"], e.get("tag")))
    return state, {{"key": key, "seen": state}}
numbered = [[{{**e, "i": i}} for i, e in enumerate(sub)] for sub in substreams]
names = [{{"k": k, "n": n}} for k in range(3) for n in range(k + 1)]  # key k matches k + 1 names
for name in ("order keyed", "order diamond", "order join rolling"):
    p = Pipeline.create(preserve_order=True)
    source = StreamInput(numbered, 3, 5).source(p)
    if name == "order keyed":
        source.grouping_key("k").map_stateful(tuple, history).write_to(Sinks.list("out"))
    elif name == "order join rolling":
        # each item once per matching name, in the reference's order, into a running list per key
        in_order = AggregateOperation.of(tuple, lambda acc, e: (*acc, (e["s"], e["i"], e["n"])))
        (source.hash_join(p.read_from(js.Sources.items(names)), js.JoinClause.on("k", "k"), lambda e, r: {{**e, "n": r["n"]}})
         .grouping_key("k").rolling_aggregate(in_order)
         .map(lambda kv: {{"key": kv[0], "seen": kv[1]}}).write_to(Sinks.list("out")))
    else:
        fanned = source.flat_map(lambda e: [{{**e, "tag": j}} for j in range(e["v"] % 3)])
        source.merge(fanned).map_stateful(tuple, lambda state, e: history(state, None, e)).write_to(Sinks.list("out"))
    expected = run_stream_reference(p).outputs["out"]
    job = jet.new_job(p)
    job.join(timeout=900)
    got = jet.get_list("out")
    jet.clear_list("out")
    per_key = lambda outputs: sorted((repr(k), [o["seen"] for o in outputs if o["key"] == k]) for k in {{o["key"] for o in outputs}})
    results[name] = {{"same_outputs": per_key(got) == per_key(expected), "outputs": len(got)}}

# A streaming DataFrame read as rows in the JVM, each micro-batch in 3 tasks spread over both executors:
# one JSON file per epoch of the same items (all substreams' rows of a cut, as one substream).
import os, tempfile, time
from pyspark.sql import Row
cut = [[item for sub in substreams for item in sub[b * 3:(b + 1) * 3]] for b in range(10)]
for name, operation in (("rows counting", AggregateOperations.counting()), ("rows max_by", AggregateOperations.max_by("v"))):
    with tempfile.TemporaryDirectory(prefix="jetspark-rows-cluster-") as directory:
        for b, rows in enumerate(cut):
            path = os.path.join(directory, f"epoch-{{b:04d}}.json")
            with open(path, "w") as f:
                f.writelines(json.dumps(row) + "\\n" for row in rows)
            os.utime(path, (1_000_000 + b * 10, 1_000_000 + b * 10))
        df = jet.spark.readStream.schema("s INT, k INT, v INT, t BIGINT").option("maxFilesPerTrigger", 1).json(directory)
        p = Pipeline.create()
        (p.read_from(js.Sources.dataframe(df.repartition(3))).with_timestamps("t", allowed_lag_ms=5).grouping_key("k")
         .window(WindowDefinition.sliding(40, 10)).aggregate(operation).write_to(Sinks.list("out")))
        expected = run_stream_reference(p, epochs=[[Row(**r) for r in rows] for rows in cut])
        job = jet.new_job(p)
        deadline = time.monotonic() + 600
        while job.metrics().get("epochs", 0) < len(cut) and time.monotonic() < deadline:
            time.sleep(0.1)
        metrics = job.metrics()
        job.cancel()
        got = jet.get_list("out")
        jet.clear_list("out")
        # a pick's value, not which row holds it: ties between tasks may settle either way
        settled = lambda results: as_multiset([(r.key, r.start, r.end, r.result if isinstance(r.result, int) else r.result["v"])
                                               for r in results])
        results[name] = {{"same_windows": settled(got) == settled(expected.outputs["out"]), "windows": len(got),
                         "late": metrics["late_events_dropped"], "expected_late": sum(expected.late_dropped.values()),
                         "typed": metrics["typed_windows"], "columnar": metrics["columnar_windows"]}}
# Random windows, built-in or user-defined, over random stream inputs (test_streaming_user_defined_windows.py),
# each with a dozen items or more: early results at every epoch's end, late events, skew.
from hypothesis import HealthCheck, given, settings, strategies as st
from stream_strategies import stream_inputs
from test_streaming_user_defined_windows import OPERATIONS, WINDOWS, windowed
random_problems = results.setdefault("random windows", [])

@settings(max_examples=int(sys.argv[1]), derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(stream=stream_inputs(max_substreams=3, max_items=8).filter(lambda s: sum(map(len, s.substreams)) >= 12),
       window=st.sampled_from(sorted(WINDOWS)), operation=st.sampled_from(sorted(OPERATIONS) + ["summing"]),
       keyed=st.booleans(), early=st.booleans())
def random_windows(stream, window, operation, keyed, early):
    op = AggregateOperations.summing("v") if operation == "summing" else OPERATIONS[operation]()
    p, _ = windowed(stream, "tumbling" if operation == "values" else window, op, keyed, early)
    expected = run_stream_reference(p)
    job = jet.new_job(p)
    job.join(timeout=900)
    got = jet.get_list("out")
    jet.clear_list("out")
    expected_early = [r for stage in expected.early.values() for epoch in stage for r in epoch]
    if (as_multiset([r for r in got if not r.is_early]) != as_multiset(expected.outputs["out"])
            or as_multiset([r for r in got if r.is_early]) != as_multiset(expected_early)
            or job.metrics()["late_events_dropped"] != sum(expected.late_dropped.values())):
        random_problems.append(f"{{stream}} {{window}} {{operation}} keyed={{keyed}} early={{early}}")

random_windows()
print("EXECUTORS", jet.spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)
print("RESULTS", json.dumps(results))
jet.stop()
"""


def test_stream_windows_on_two_executor_jvms_match_the_reference() -> None:
    done = run_python(CLUSTER_JOB, cwd=REPO, timeout=1200, args=[str(examples(2))])
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("EXECUTORS", "RESULTS")))
    assert lines["EXECUTORS"] == "2"
    results = json.loads(lines["RESULTS"])
    for name in ("sliding", "session", "user-defined sliding", "rows counting", "rows max_by"):
        result = results[name]
        assert result["same_windows"] and result["windows"] > 0, (name, result)
        assert result["late"] == result["expected_late"] > 0, (name, result)  # the input makes some events late
        assert result.get("same_letters", True), (name, result)
    merged = results["merged sources"]
    assert merged["same_windows"] and merged["windows"] > 0 and merged["late"] == merged["expected_late"], merged
    assert not results["random windows"], "\n".join(results["random windows"])
    for name in ("order keyed", "order diamond", "order join rolling"):
        assert results[name]["same_outputs"] and results[name]["outputs"] > 0, (name, results[name])
    for name in ("rows counting", "rows max_by"):  # the window read the rows in the JVM, as columns
        assert results[name]["typed"] == results[name]["columnar"] == ["windowAggregate-accumulate"], results[name]
