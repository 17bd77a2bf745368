"""The random pipelines of test_batch_engine_random.py on two executor JVMs (local-cluster[2,1,1024]):
every set of batch transforms (aggregations, joins, windows, distinct and custom operations; the
order-sensitive stages under preserve_order, also behind keyed shuffles and diamonds) against the same
brute-force reference. One cluster session runs them all (it is slow to start), a few examples each."""

from __future__ import annotations

import json

import pytest

from conftest import CLUSTER_SESSION, REPO, examples, run_python

pytestmark = pytest.mark.slow

CLUSTER_JOB = f"""
import json, sys
sys.path.insert(0, "tests")
import jetspark as js
from hypothesis import HealthCheck, given, settings, strategies as st
from strategies import batch_pipelines
from test_batch_engine_random import AGGREGATING, ORDERED, OPENINGS, STATELESS, mismatches_on_engine

jet = {CLUSTER_SESSION}
results = {{}}


def check(name, pipelines, examples):
    problems = results.setdefault(name, [])

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(pipelines)
    def run(generated):
        problems.extend(f"{{generated}}: {{p}}" for p in mismatches_on_engine(jet, generated))

    run()


# Each aggregating transform opens a pipeline of its own (a few random draws would miss most of them),
# more of the set follow at random. With one example each, Hypothesis would run only its simplest (the
# empty input): every source draws several keys and values instead.
for kind in sorted(AGGREGATING - STATELESS):
    check("aggregating", batch_pipelines(allowed=AGGREGATING, preserve_order=False, first=(kind,), nontrivial=True), 1)
check("ordered", batch_pipelines(allowed=ORDERED, preserve_order=True, nontrivial=True), int(sys.argv[1]))
check("shuffles_and_diamonds", st.sampled_from(OPENINGS).flatmap(
    lambda first: batch_pipelines(allowed=ORDERED, preserve_order=True, first=first, nontrivial=True)),
    int(sys.argv[1]))
print("EXECUTORS", jet.spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)
print("RESULTS", json.dumps(results))
jet.stop()
"""

#: Examples of each order-sensitive set: each pipeline costs a few Spark jobs on the cluster.
EXAMPLES = examples(4)


@pytest.fixture(scope="module")
def cluster_results() -> dict[str, list[str]]:
    done = run_python(CLUSTER_JOB, cwd=REPO, timeout=1200, args=[str(EXAMPLES)])
    assert done.returncode == 0, done.stderr[-4000:]
    assert "EXECUTORS 2" in done.stdout, done.stdout
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULTS "))
    return json.loads(line[len("RESULTS "):])


@pytest.mark.parametrize("transforms", ["aggregating", "ordered", "shuffles_and_diamonds"])
def test_random_pipelines_match_the_reference_on_two_executor_jvms(cluster_results, transforms):
    assert not cluster_results[transforms], "\n".join(cluster_results[transforms])
