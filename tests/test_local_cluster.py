"""On a real two-executor cluster (`local-cluster[2,1,1024]`: two executor JVMs besides the driver), the
jar reaches both executors, preserve_order still delivers the source order to the sink, and files written by
one job are read by the next."""

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
