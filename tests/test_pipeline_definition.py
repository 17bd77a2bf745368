"""What the Python layer records for the JVM, and the argument errors it raises at definition time.
(Planner rules are the JVM's; see test_plan.py.)"""

from __future__ import annotations

import json

import pytest

from jetspark import AggregateOperations as ops
from jetspark import (JoinClause, Pipeline, PipelineDefinitionError, Sinks, Sources, StreamSourceStage,
                      WindowDefinition)


def nodes(p: Pipeline) -> list[dict]:
    spec, _ = p.to_spec()
    json.dumps(spec)  # the spec crosses to the JVM as JSON: it must be JSON-able as a whole
    return spec["nodes"]


def test_a_chain_records_one_node_per_call_in_order():
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2])).map(str).filter(bool).write_to(Sinks.list("out"))
    assert [(n["op"], n["inputs"]) for n in nodes(p)] == [("source", []), ("map", [0]), ("filter", [1]), ("sink", [2])]


def test_rebalance_marks_only_the_input_of_the_next_transform():
    #   source ──local──▶ map ──round-robin──▶ flat_map ──local──▶ sink
    p = Pipeline.create()
    p.read_from(Sources.items([1])).map(str).rebalance().flat_map(list).write_to(Sinks.noop())
    assert [n["rebalance"] for n in nodes(p)] == [[], [None], ["round_robin"], [None]]


def test_rebalance_by_key_records_the_key():
    p = Pipeline.create()
    p.read_from(Sources.items([{"k": 1}])).rebalance("k").map(str).write_to(Sinks.noop())
    assert nodes(p)[1]["rebalance"] == [{"key": {"kind": "field", "name": "k"}}]


def test_keyed_aggregate_records_the_grouping_key_and_the_operation():
    p = Pipeline.create()
    p.read_from(Sources.items([])).grouping_key("user").aggregate(ops.summing("amount")).write_to(Sinks.noop())
    agg = nodes(p)[1]
    assert agg["keys"] == [{"kind": "field", "name": "user"}]
    assert agg["args"]["op"]["name"] == "summing" and agg["args"]["op"]["can_deduct"] is True


def test_python_callables_travel_by_reference():
    p = Pipeline.create()
    fn = lambda x: x + 1  # noqa: E731
    p.read_from(Sources.items([1])).map(fn).write_to(Sinks.noop())
    spec, objects = p.to_spec()
    ref = spec["nodes"][1]["args"]["fn"]
    assert ref["kind"] == "python" and objects[ref["ref"]] is fn


def test_a_keyed_window_records_window_and_key():
    p = Pipeline.create()
    (p.read_from(Sources.items_stream([1], [2])).with_timestamps(lambda e: e, allowed_lag_ms=5)
     .grouping_key("k").window(WindowDefinition.sliding(10, 2)).aggregate(ops.counting())
     .write_to(Sinks.list("w")))
    src, win = nodes(p)[0], nodes(p)[1]
    assert src["args"]["timestamps"]["allowed_lag_ms"] == 5
    assert win["op"] == "window_aggregate" and win["args"]["window"]["size_ms"] == 10
    assert win["keys"][0] == {"kind": "field", "name": "k"}


def test_hash_join_takes_the_enriching_side_as_input_one():
    p = Pipeline.create()
    left = p.read_from(Sources.items([1]))
    right = p.read_from(Sources.items([2]))
    left.hash_join(right, JoinClause.on("id", "id")).write_to(Sinks.noop())
    assert nodes(p)[2]["inputs"] == [0, 1]


def test_a_stream_source_must_choose_timestamps_before_anything_else():
    stage = Pipeline.create().read_from(Sources.items_stream([1]))
    assert isinstance(stage, StreamSourceStage)
    for transform in ("map", "filter", "grouping_key", "window", "write_to", "merge", "rebalance"):
        with pytest.raises(PipelineDefinitionError) as e:
            getattr(stage, transform)
        assert e.value.rule == "stream-source-timestamps" and e.value.stage == stage.name
        assert "breaks rule 'stream-source-timestamps'" in str(e.value) and f"'{transform}'" in str(e.value)
        for way in ("with_timestamps", "with_native_timestamps", "with_ingestion_timestamps", "without_timestamps"):
            assert way in str(e.value)
    with pytest.raises(AttributeError):
        stage.no_such_transform
    stage.without_timestamps()
    with pytest.raises(ValueError, match="already chosen"):
        stage.with_ingestion_timestamps()


@pytest.mark.parametrize("call,message", [
    (lambda s: s.map(42), r"map\(fn\) must be callable"),
    (lambda s: s.grouping_key(3.5), r"grouping_key\(key\) must be a field name"),
    (lambda s: s.aggregate("count"), r"aggregate\(op\) must be an AggregateOperation"),
    (lambda s: s.write_to(Sinks.dead_letter("bad")), r"dead_letter is for on_error"),
    (lambda s: s.on_error(Sinks.list("x")), r"Sinks.dead_letter"),
    (lambda s: s.set_local_parallelism(0), r"positive int"),
    (lambda s: s.sort(key=object()), r"sort\(key\) must be"),
])
def test_bad_arguments_are_rejected_naming_the_argument(call, message):
    stage = Pipeline.create().read_from(Sources.items([1]))
    with pytest.raises((TypeError, ValueError), match=message):
        call(stage)


def test_merging_a_batch_with_a_stream_is_rejected():
    p = Pipeline.create()
    with pytest.raises(TypeError, match="same pipeline"):
        p.read_from(Sources.items([1])).merge(p.read_from(Sources.items_stream([1])).without_timestamps())


def test_stages_of_two_pipelines_do_not_mix():
    a, b = Pipeline.create(), Pipeline.create()
    with pytest.raises(ValueError, match="another pipeline"):
        a.read_from(Sources.items([1])).merge(b.read_from(Sources.items([2])))


@pytest.mark.parametrize("make,rule", [
    (lambda: WindowDefinition.sliding(10, 3), "size is a multiple of slide"),
    (lambda: WindowDefinition.tumbling(0), "positive whole milliseconds"),
    (lambda: WindowDefinition.session(-5), "positive whole milliseconds"),
    (lambda: WindowDefinition.sliding(10, 2).set_early_results_period(0), "positive whole milliseconds"),
])
def test_window_definitions_are_validated_on_construction(make, rule):
    with pytest.raises(PipelineDefinitionError) as e:
        make()
    assert e.value.rule == rule and rule in str(e.value) and "WindowDefinition." in str(e.value)


def test_operations_know_whether_they_combine_and_deduct():
    # From the operations' mathematics: counts and sums undo; extremes and lists do not.
    assert ops.counting().can_deduct and ops.variance("v").can_deduct and ops.linear_trend("x", "y").can_deduct
    assert not ops.max_by("v").can_deduct and not ops.top_n(3).can_deduct and not ops.to_list().can_deduct
    assert ops.to_list().is_order_sensitive and not ops.to_set().is_order_sensitive
    assert ops.all_of(ops.counting(), ops.summing("v")).can_deduct
    assert not ops.all_of(ops.counting(), ops.max_by("v")).can_deduct


@pytest.mark.parametrize("transform", ["aggregate", "aggregate2", "distinct"])
def test_keyed_whole_stream_results_are_refused_on_a_stream_stage(transform):
    # A stream aggregates per window (Jet's StreamStageWithKey has no aggregate); the same calls on the
    # batch stage before add_timestamps are fine.
    p = Pipeline.create()
    batch = p.read_from(Sources.items([1, 2])).grouping_key(lambda x: x % 2)
    stream = p.read_from(Sources.items([3])).add_timestamps(lambda x: x).grouping_key(lambda x: x % 2)
    calls = {"aggregate": lambda k: k.aggregate(ops.counting()), "distinct": lambda k: k.distinct(),
             "aggregate2": lambda k: k.aggregate2(k, ops.counting(), ops.counting())}
    calls[transform](batch)
    with pytest.raises(PipelineDefinitionError, match="needs a batch stage") as raised:
        calls[transform](stream)
    assert raised.value.stage.startswith("add_timestamps") and raised.value.rule == "keyed aggregation needs a batch stage"
