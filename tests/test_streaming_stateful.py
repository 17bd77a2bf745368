"""State across epochs on the Spark epoch engine (issue 24, docs/streaming.md): ``map_stateful`` and
``rolling_aggregate``, keyed and global, against the brute-force stream reference (rules 8 and 9 of
:mod:`stream_reference`).

How the items of different substreams interleave at a key within one epoch is not promised (rule 9), so
the outputs compared with the reference never depend on it: the state is kept per substream, or the key
holds one substream. The interleaving the engine did take is checked with
:func:`stream_reference.order_allowed`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from conftest import REPO, examples, run_job, run_python
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import order_allowed, run_stream_reference
from stream_strategies import StreamInput, stream_inputs

from jetspark import AggregateOperation, AggregateOperations, JobStatus, Pipeline, Sinks

OPERATIONS = {
    "counting": AggregateOperations.counting(),
    "summing": AggregateOperations.summing("v"),
    "max_by": AggregateOperations.max_by("v"),
    # A user-defined operation: it runs in Python, its accumulators kept across epochs by Python.
    "values_in_order": AggregateOperation.of(create=list, accumulate=lambda acc, e: [*acc, e["v"]], export=tuple),
}


def numbered(stream: StreamInput) -> StreamInput:
    """``stream`` with each item's offset in its substream as ``"i"``."""
    return StreamInput([[{**e, "i": i} for i, e in enumerate(sub)] for sub in stream.substreams],
                       stream.items_per_batch, stream.allowed_lag_ms)


def seen_by_substream(state: dict[int, tuple[int, ...]], key: Any, e: dict[str, int]) -> tuple[Any, Any]:
    """map_stateful's function: the offsets of the items a key saw, per substream; each output is the
    key, the item and what its substream gave the key so far, which rule 9 fixes. The state also holds
    every item in the order the stage saw them (``"all"``), which only rule 9 constrains."""
    mine = (*state.get(e["s"], ()), e["i"])
    state = {**state, e["s"]: mine, "all": (*state.get("all", ()), (e["s"], e["i"]))}
    return state, {"key": key, "s": e["s"], "i": e["i"], "mine": mine, "all": state["all"]}


def stateful(stream: StreamInput, keyed: bool) -> Pipeline:
    """``stream`` through a filter and :func:`seen_by_substream`, per key ``"k"`` or global, to the list ``out``."""
    p = Pipeline.create()
    stateful_from(stream.source(p), keyed)
    return p


def stateful_from(source: Any, keyed: bool) -> None:
    stage = source.filter(lambda e: e["v"] != 7)
    if keyed:
        stage.grouping_key("k").map_stateful(dict, seen_by_substream).write_to(Sinks.list("out"))
    else:
        stage.map_stateful(dict, lambda state, e: seen_by_substream(state, None, e)).write_to(Sinks.list("out"))


def check_stateful(jet: Any, stream: StreamInput, keyed: bool) -> list[dict[str, Any]]:
    """Runs :func:`stateful`: what rule 9 fixes equals the reference's, and each key saw its items in an
    order rule 9 allows, every one once; returns the outputs."""
    p = stateful(stream, keyed)
    expected = run_stream_reference(p).outputs["out"]
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED

    def fixed(outputs: list[dict[str, Any]]) -> list[str]:
        return as_multiset((o["key"], o["s"], o["i"], o["mine"]) for o in outputs)

    assert fixed(got) == fixed(expected)
    k = stream.items_per_batch
    by_key: dict[Any, list[tuple[tuple[int, int], ...]]] = defaultdict(list)
    for o in got:
        by_key[o["key"]].append(o["all"])
        assert o["all"][-1] == (o["s"], o["i"])
    for seen in by_key.values():
        longest = max(seen, key=len)
        assert sorted(seen, key=len) == [longest[:n] for n in range(1, len(longest) + 1)]  # one state, each item once
        assert order_allowed([(i // k, s, i) for s, i in longest]), longest
    return got


@settings(max_examples=examples(5))
@given(stream=stream_inputs(max_substreams=3, max_items=8), keyed=st.booleans())
def test_random_map_stateful_keeps_its_state_across_epochs(jet: Any, stream: StreamInput, keyed: bool) -> None:
    check_stateful(jet, numbered(stream), keyed)


def rolling(stream: StreamInput, keyed: bool, operation: str) -> Pipeline:
    """A rolling aggregation per (substream, key), or global over the one substream ``stream`` must then
    have: rule 9 fixes the order of either's items."""
    p = Pipeline.create()
    stage = stream.source(p).filter(lambda e: e["v"] != 7)
    if keyed:
        stage = stage.grouping_key(lambda e: (e["s"], e["k"]))
    stage.rolling_aggregate(OPERATIONS[operation]).write_to(Sinks.list("out"))
    return p


@settings(max_examples=examples(5))
@given(stream=stream_inputs(max_substreams=3, max_items=8), keyed=st.booleans(),
       operation=st.sampled_from(sorted(OPERATIONS)))
def test_random_rolling_aggregations_keep_their_accumulators_across_epochs(jet: Any, stream: StreamInput, keyed: bool,
                                                                           operation: str) -> None:
    if not keyed:
        stream = StreamInput(stream.substreams[:1], stream.items_per_batch, stream.allowed_lag_ms)
    p = rolling(stream, keyed, operation)
    expected = run_stream_reference(p).outputs["out"]
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert as_multiset(got) == as_multiset(expected)


def test_a_global_rolling_count_over_several_substreams_counts_every_item_once(jet: Any) -> None:
    """Whatever the interleaving of the substreams, a running count goes 1, 2, ..., n."""
    substreams = [[{"s": s, "k": 0, "v": i, "t": i} for i in range(5 + s)] for s in range(3)]
    p = rolling(StreamInput(substreams, 2, 0), keyed=False, operation="counting")
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert sorted(got) == list(range(1, sum(map(len, substreams)) + 1))


def test_state_from_epoch_0_is_seen_in_epoch_2(jet: Any) -> None:
    """One item per epoch: key 0 in epochs 0 and 2, key 1 in epoch 1 between them."""
    items = [{"s": 0, "k": k, "v": v, "t": 10 * i, "i": i} for i, (k, v) in enumerate([(0, 3), (1, 4), (0, 5)])]
    got = check_stateful(jet, StreamInput([items], 1, 0), keyed=True)
    last = next(o for o in got if o["i"] == 2)
    assert last["key"] == 0 and last["mine"] == (0, 2)  # the item of epoch 0, then its own


def test_the_cut_of_the_micro_batches_does_not_change_stateful_outputs(jet: Any) -> None:
    """One stream into a keyed map_stateful and, per (substream, key), a rolling sum: both outputs equal
    the reference's, whether the stream comes 1, 7 or 100 items per epoch."""
    substreams = [[{"s": s, "k": i % 3, "v": i * (s + 1), "t": s * 5 + i * 4, "i": i} for i in range(6)] for s in range(2)]
    outputs = []
    for per_batch in (1, 7, 100):
        p = Pipeline.create()
        source = StreamInput(substreams, per_batch, 0).source(p)
        stateful_from(source, keyed=True)
        source.grouping_key(lambda e: (e["s"], e["k"])).rolling_aggregate(OPERATIONS["summing"]).write_to(Sinks.list("sums"))
        expected = run_stream_reference(p).outputs
        job, (got, sums) = run_job(jet, p, "out", "sums")
        assert job.status is JobStatus.COMPLETED
        assert as_multiset(sums) == as_multiset(expected["sums"])
        mine = as_multiset((o["key"], o["s"], o["i"], o["mine"]) for o in got)
        assert mine == as_multiset((o["key"], o["s"], o["i"], o["mine"]) for o in expected["out"])
        outputs.append((mine, as_multiset(sums)))
    assert outputs[0] == outputs[1] == outputs[2]


def test_ties_break_by_arrival_across_epochs(jet: Any) -> None:
    """max_by keeps the first of tied items: the one of epoch 0, not the later one of epoch 1, although a
    new task takes epoch 1."""
    items = [{"s": 0, "k": 0, "v": v, "t": i, "i": i} for i, v in enumerate([1, 5, 5])]
    p = rolling(StreamInput([items], 2, 0), keyed=False, operation="max_by")
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    assert as_multiset(got) == as_multiset(run_stream_reference(p).outputs["out"])
    assert [r["i"] for r in got] == [0, 1, 1]



PIPELINED_RUNNER_JOB = """
import sys
sys.path.insert(0, "tests")
import jetspark as js
from jetspark import Pipeline, Sinks
from stream_strategies import StreamInput

jet = js.session(master="local[1]", conf={"spark.ui.enabled": "false", "spark.python.udf.pipelined.enabled": "true"})
p = Pipeline.create()
(StreamInput([[{"s": 0, "k": 0, "v": 1, "t": 0}]], 1, 0).source(p).grouping_key("k")
 .map_stateful(lambda: 0, lambda n, k, e: (n + 1, n + 1)).set_name("running").write_to(Sinks.list("out")))
try:
    jet.new_job(p).join(timeout=300)
    print("COMPLETED")
except js.JobFailedError as e:
    print("FAILED", e)
jet.stop()
"""


@pytest.mark.slow
def test_spark_s_pipelined_python_runner_is_refused_naming_the_stateful_stage() -> None:
    """A Python stage with state hands its state to the UDF's input on the task's own thread, which Spark's
    pipelined runner (a static setting, so a session of its own) would not pull from."""
    done = run_python(PIPELINED_RUNNER_JOB, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FAILED" in done.stdout and "spark.python.udf.pipelined.enabled=true" in done.stdout, done.stdout[-2000:]
    assert "'running" in done.stdout, done.stdout[-2000:]
