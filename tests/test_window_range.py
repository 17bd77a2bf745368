"""Windows at the ends of the 64-bit range of timestamps (docs/semantics.md, rule
``window-in-64-bit-range``): every window that holds an event must start at or after -2**63 and end at or
before 2**63 - 1; such windows come out whole, on every path, as the reference computes them with Python's
unbounded ints; an event that falls in a window beyond the range fails the window stage naming it, never
a window whose bounds wrapped around.

    MIN = -2**63                                                MAX = 2**63 - 1
    |[MIN, MIN+4) [MIN+2, MIN+6) ...   (2**64 ms of nothing)   ... [MAX-7, MAX-3) [MAX-5, MAX-1)|
      sliding(4, 2): an event at MIN or MIN+1 (window [MIN-2, MIN+2)) or at MAX-3 (window [MAX-3, MAX+1)) fails
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import run_job
from reference import as_multiset, run_reference

from jetspark import AggregateOperation, JobFailedError, Pipeline, Sinks, Sources, WindowDefinition
from jetspark import AggregateOperations as ops

MIN, MAX = -(2**63), 2**63 - 1

WINDOWS = {"sliding": WindowDefinition.sliding(4, 2), "tumbling": WindowDefinition.tumbling(7),
           "session": WindowDefinition.session(10)}
# Times of key 0 and 1 at both ends, as near as each window definition lets them be (7 divides MAX; MIN + 1
# is a multiple of 7; a session that starts at MAX - 10 ends at MAX).
FITTING = {"sliding": [MIN + 2, MIN + 3, MIN + 5, MAX - 5, MAX - 4, MAX - 6],
           "tumbling": [MIN + 1, MIN + 7, MIN + 8, MAX - 7, MAX - 1, MAX - 8],
           "session": [MIN, MIN + 9, MIN + 30, MAX - 10, MAX - 25, MAX - 11]}
BEYOND = {"sliding": [MIN, MIN + 1, MAX - 3, MAX], "tumbling": [MIN, MAX], "session": [MAX - 9, MAX]}

OPERATIONS = {
    "counting": ops.counting,  # on DataFrame rows: the columnar frames
    "summing": lambda: ops.summing("v"),  # on DataFrame rows: the JVM's typed frames
    "top_n": lambda: ops.top_n(10, "v"),  # Python items (values unique: no ties)
    "custom": lambda: AggregateOperation.of(lambda: 0, lambda a, r: a + r["v"] if isinstance(r, dict) else a + r.v,
                                            combine=lambda a, b: a + b),  # Python, window and all
}


def _events(times: list[int]) -> list[dict[str, int]]:
    return [{"k": i % 2, "t": t, "v": i + 1} for i, t in enumerate(times)]


def _pipeline(jet: Any, source: str, window: str, operation: str, times: list[int]) -> Pipeline:
    events = _events(times)
    p = Pipeline.create()
    read = Sources.items(events) if source == "items" else Sources.dataframe(
        jet.spark.createDataFrame([(e["k"], e["t"], e["v"]) for e in events], "k INT, t BIGINT, v BIGINT"))
    (p.read_from(read).add_timestamps("t").grouping_key("k").window(WINDOWS[window])
     .aggregate(OPERATIONS[operation]()).set_name("edge-windows").write_to(Sinks.list("edge")))
    return p


@pytest.mark.parametrize("source", ["items", "dataframe"])
@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_windows_at_the_ends_of_the_range_come_out_whole_as_the_reference_computes_them(jet, source, window, operation):
    p = _pipeline(jet, source, window, operation, FITTING[window])
    expected = run_reference(p)["edge"]
    assert all(MIN <= r.start < r.end <= MAX for r in expected) and len(expected) >= 4
    _, (got,) = run_job(jet, p, "edge")
    assert as_multiset(got) == as_multiset(expected)


@pytest.mark.parametrize("source", ["items", "dataframe"])
@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("operation", ["counting", "custom"])
def test_an_event_in_a_window_beyond_the_range_fails_the_stage_naming_it(jet, source, window, operation):
    for ts in BEYOND[window]:
        p = _pipeline(jet, source, window, operation, FITTING[window][:2] + [ts])
        with pytest.raises(JobFailedError, match="edge-windows"):
            run_reference(p)
        with pytest.raises(JobFailedError) as failure:
            run_job(jet, p, "edge")
        jet.clear_list("edge")
        # (the cause is chained where the job's message keeps only a wrapper's first line)
        causes = [failure.value] + [e for e in (failure.value.__cause__, failure.value.__context__) if e is not None]
        text = "\n".join(str(e) for e in causes)
        assert f"timestamp {ts}" in text and "window-in-64-bit-range" in text, text
