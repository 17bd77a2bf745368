"""``preserve_order`` on the Spark epoch engine (issue 24, docs/streaming.md): per-key order across epochs
and shuffles, and a diamond's branches merged in source order, against the brute-force stream reference.

Under ``preserve_order`` the order that rule 9 of :mod:`stream_reference` leaves open is fixed: a stage
sees an epoch's items substream after substream, each substream's in its order, as the reference takes
them. So the outputs that record the order a stage saw its items (the whole history in a
``map_stateful``'s state, a rolling or window ``to_list``) are compared with the reference's exactly,
where without ``preserve_order`` only what rule 9 fixes could be.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conftest import examples, run_job
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import as_multiset
from stream_reference import run_stream_reference
from stream_strategies import StreamInput, stream_inputs

from jetspark import AggregateOperation, AggregateOperations, JobStatus, JoinClause, Pipeline, Sinks, Sources, WindowDefinition

IN_ORDER = AggregateOperation.of(create=list, accumulate=lambda acc, e: [*acc, (e["s"], e["i"])], export=tuple)


def numbered(stream: StreamInput) -> StreamInput:
    """``stream`` with each item's offset in its substream as ``"i"``."""
    return StreamInput([[{**e, "i": i} for i, e in enumerate(sub)] for sub in stream.substreams],
                       stream.items_per_batch, stream.allowed_lag_ms)


def history(state: tuple[Any, ...], key: Any, e: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """map_stateful's function: every item the key saw, in the order it saw them."""
    state = (*state, (e["s"], e["i"], e.get("tag")))
    return state, {"key": key, "seen": state}


def by_key(outputs: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    """Each key's outputs in the order the sink got them."""
    keyed: dict[Any, list[Any]] = defaultdict(list)
    for o in outputs:
        keyed[repr(o["key"])].append(o["seen"])
    return dict(keyed)


def check(jet: Any, p: Pipeline, *sinks: str) -> list[list[Any]]:
    """Runs ``p``; every sink's outputs equal the reference's as multisets; returns them with the reference's."""
    expected = run_stream_reference(p).outputs
    job, got = run_job(jet, p, *sinks)
    assert job.status is JobStatus.COMPLETED
    for name, outputs in zip(sinks, got):
        assert as_multiset(outputs) == as_multiset(expected[name]), name
    return [[outputs, expected[name]] for name, outputs in zip(sinks, got)]


@settings(max_examples=examples(4))
@given(stream=stream_inputs(max_substreams=3, max_items=8), keyed=st.booleans(), fan_out=st.booleans())
def test_random_stateful_stages_see_each_keys_items_in_source_order(jet: Any, stream: StreamInput, keyed: bool,
                                                                   fan_out: bool) -> None:
    """Several substreams feed each key (global: the one key) across a shuffle, through a filter and, drawn,
    a flat_map; the history each key's state recorded, and the order the sink got each key's outputs
    in, are the reference's."""
    p = Pipeline.create(preserve_order=True)
    stage = numbered(stream).source(p).filter(lambda e: e["v"] != 7)
    if fan_out:
        stage = stage.flat_map(lambda e: [{**e, "tag": j} for j in range(e["v"] % 3)])
    if keyed:
        stage.grouping_key("k").map_stateful(tuple, history).write_to(Sinks.list("out"))
    else:
        stage.map_stateful(tuple, lambda state, e: history(state, None, e)).write_to(Sinks.list("out"))
    [[got, expected]] = check(jet, p, "out")
    assert by_key(got) == by_key(expected)


@settings(max_examples=examples(3))
@given(stream=stream_inputs(max_substreams=3, max_items=8), operation=st.sampled_from(["counting", "summing"]))
def test_a_built_in_rolling_aggregation_passes_its_items_ids_on_to_a_later_keyed_stage(jet: Any, stream: StreamInput,
                                                                                       operation: str) -> None:
    """A running count (or sum) per key, a built-in operation, re-keyed by the parity of its result into a
    history per parity: the ids must pass through the rolling aggregation for the history to see its
    results in source order."""
    op = AggregateOperations.counting() if operation == "counting" else AggregateOperations.summing("v")
    p = Pipeline.create(preserve_order=True)
    (numbered(stream).source(p).grouping_key("k").rolling_aggregate(op)
     .grouping_key(lambda kv: kv[1] % 2).map_stateful(tuple, lambda state, key, kv: ((*state, kv), {"key": key, "seen": (*state, kv)}))
     .write_to(Sinks.list("out")))
    [[got, expected]] = check(jet, p, "out")
    assert by_key(got) == by_key(expected)


@settings(max_examples=examples(3))
@given(stream=stream_inputs(max_substreams=3, max_items=8))
def test_random_diamond_merges_its_branches_in_source_order(jet: Any, stream: StreamInput) -> None:
    """A fork of the stream into a map and a flat_map, merged and read by one global state: it sees each
    epoch's items substream after substream, each record's outputs in branch order, as the reference
    merges them."""
    p = Pipeline.create(preserve_order=True)
    source = numbered(stream).source(p)
    plain = source.map(lambda e: {**e, "tag": "a"})
    fanned = source.flat_map(lambda e: [{**e, "tag": f"b{j}"} for j in range(e["v"] % 3)])
    plain.merge(fanned).map_stateful(tuple, lambda state, e: history(state, None, e)).write_to(Sinks.list("out"))
    [[got, expected]] = check(jet, p, "out")
    assert got == expected


@settings(max_examples=examples(3))
@given(stream=stream_inputs(max_substreams=3, max_items=8))
def test_random_order_sensitive_aggregations_get_each_keys_items_in_source_order(jet: Any, stream: StreamInput) -> None:
    """A rolling aggregation and a tumbling window that list their items, per key, over several
    substreams: their lists are the reference's, which takes an epoch's items substream after substream."""
    p = Pipeline.create(preserve_order=True)
    source = numbered(stream).source(p)
    source.grouping_key("k").rolling_aggregate(IN_ORDER).write_to(Sinks.list("rolling"))
    source.grouping_key("k").window(WindowDefinition.tumbling(30)).aggregate(AggregateOperations.to_list()) \
        .map(lambda r: (r.key, r.start, [(e["s"], e["i"]) for e in r.result])).write_to(Sinks.list("windows"))
    check(jet, p, "rolling", "windows")


def test_each_keys_state_sees_two_substreams_in_order_in_every_epoch(jet: Any) -> None:
    """Hand-worked: two substreams, both of key 0, two items of each per epoch. The state sees epoch 0's
    items of substream 0, then of substream 1, then epoch 1's the same way."""
    substreams = [[{"s": s, "k": 0, "v": 1, "t": 10 * i, "i": i} for i in range(4)] for s in range(2)]
    p = Pipeline.create(preserve_order=True)
    StreamInput(substreams, 2, 0).source(p).grouping_key("k").map_stateful(tuple, history).write_to(Sinks.list("out"))
    job, (got,) = run_job(jet, p, "out")
    assert job.status is JobStatus.COMPLETED
    last = max((o["seen"] for o in got), key=len)
    assert [(s, i) for s, i, _ in last] == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]


@settings(max_examples=examples(3))
@given(stream=stream_inputs(max_substreams=3, max_items=8), inner=st.booleans())
def test_random_hash_joins_keep_each_items_place_on_the_way_to_keyed_state(jet: Any, stream: StreamInput,
                                                                         inner: bool) -> None:
    """A join with several matches for some keys, before a keyed shuffle into state that records its
    history: each item's outputs stay together, in the order of their matches, in source order."""
    p = Pipeline.create(preserve_order=True)
    tags = p.read_from(Sources.items([{"k": 0, "tag": "a"}, {"k": 1, "tag": "b"}, {"k": 0, "tag": "c"}]))
    source = numbered(stream).source(p)
    join = source.inner_hash_join if inner else source.hash_join
    join(tags, JoinClause.on("k", "k"), mapper=lambda e, t: {**e, "tag": t and t["tag"]}) \
        .grouping_key("v").map_stateful(tuple, history).write_to(Sinks.list("out"))
    [[got, expected]] = check(jet, p, "out")
    assert by_key(got) == by_key(expected)
