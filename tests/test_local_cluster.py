"""On a real two-executor cluster (`local-cluster[2,1,1024]`: two executor JVMs besides the driver), the
jar reaches both executors, preserve_order still delivers the source order to the sink, files written by
one job are read by the next, and a window over a DataFrame's rows gives every window's count."""

from __future__ import annotations

import pytest

import jetspark
from conftest import CLUSTER_SESSION, run_python

pytestmark = pytest.mark.slow

JOB = """
import sys
from collections import Counter
import jetspark as js

jet = CLUSTER_SESSION
print("VERSIONS", sorted(set(jet.executor_versions(partitions=4))))

items = list(range(400))
p = js.Pipeline.create(preserve_order=True)
p.read_from(js.Sources.items(items)).map(lambda x: x * 2).filter(lambda x: x % 3 != 0).write_to(js.Sinks.list("ordered"))
jet.new_job(p).join(timeout=600)
print("ORDERED", jet.get_list("ordered") == [x * 2 for x in items if (x * 2) % 3 != 0])

p = js.Pipeline.create()
p.read_from(js.Sources.items(items)).rebalance().map(lambda x: x + 1).write_to(js.Sinks.list("any"))
jet.new_job(p).join(timeout=600)
print("COMPLETE", Counter(jet.get_list("any")) == Counter(x + 1 for x in items))
# A files sink and a files source between two jobs, the files read and written by both executors.
import os, tempfile
out = os.path.join(tempfile.mkdtemp(), "evens")
p = js.Pipeline.create()
p.read_from(js.Sources.items(items)).rebalance().filter(lambda x: x % 2 == 0).map(lambda x: {"n": x, "sq": x * x}) \
    .write_to(js.Sinks.files(out))
jet.new_job(p).join(timeout=600)
p = js.Pipeline.create()
p.read_from(js.Sources.files(out)).map(lambda r: r.sq - r.n * r.n).write_to(js.Sinks.list("zeros"))
jet.new_job(p).join(timeout=600)
print("FILES", sorted(r.n for r in jet.spark.read.parquet(out).collect()) == [x for x in items if x % 2 == 0],
      jet.get_list("zeros") == [0] * (len(items) // 2))
# A window over a DataFrame's rows whose frames are columns of numbers, each stage's tasks on both executors.
rows = [(i % 7, (i * 37) % 1000, i) for i in range(400)]
df = jet.spark.createDataFrame(rows, "k INT, t BIGINT, v INT").repartition(4)
p = js.Pipeline.create()
p.read_from(js.Sources.dataframe(df)).add_timestamps("t").grouping_key("k") \
    .window(js.WindowDefinition.sliding(100, 20)).aggregate(js.AggregateOperations.counting()).write_to(js.Sinks.list("windows"))
job = jet.new_job(p)
job.join(timeout=600)
want = Counter((k, end) for k, t, _ in rows for end in range((t // 20 + 1) * 20, (t // 20 + 1) * 20 + 100, 20))
got = {(r.key, r.end): r.result for r in jet.get_list("windows")}
print("WINDOWS", got == dict(want), len(got) == len(jet.get_list("windows")), bool(job.metrics()["columnar_windows"]))
# The block managers Spark knows, less the driver's: the executor JVMs (registered by now).
print("EXECUTORS", jet.spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)
jet.stop()
"""


def test_two_executor_jvms_run_pipelines_and_preserve_order_holds():
    done = run_python(JOB.replace("CLUSTER_SESSION", CLUSTER_SESSION), timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "EXECUTORS 2" in done.stdout, done.stdout
    assert f"VERSIONS ['{jetspark.__version__}']" in done.stdout, done.stdout
    assert "ORDERED True" in done.stdout, done.stdout
    assert "COMPLETE True" in done.stdout, done.stdout
    assert "FILES True True" in done.stdout, done.stdout
    assert "WINDOWS True True True" in done.stdout, done.stdout
