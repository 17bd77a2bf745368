"""Pipelines from API.md's examples, defined in Python and planned by the JVM: explain() works
without a job run, shows what the design docs say the plan must be, and definition errors come back as
PipelineDefinitionError naming the stage and the rule."""

from __future__ import annotations

import pytest
from pyspark.sql.functions import col

from jetspark import AggregateOperation, JoinClause, Pipeline, PipelineDefinitionError, Sinks, Sources, WindowDefinition
from jetspark import AggregateOperations as ops


def edges(plan: str) -> list[str]:
    return [line.strip() for line in plan.split("Edges:")[1].splitlines()[1:] if "->" in line]


def test_a_chain_of_python_steps_is_one_vertex_and_one_python_round_trip(jet):
    #   items ──▶ [map → filter → flat_map] ──▶ list
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2])).map(lambda x: x).filter(bool).flat_map(lambda x: [x]).write_to(Sinks.list("o"))
    plan = p.explain()
    assert "fused: map -> filter -> flatMap" in plan
    assert "python round trips: [map, filter, flatMap]" in plan


def test_keyed_aggregation_of_a_combinable_op_is_two_stage_partitioned_by_key(jet):
    #   items ──▶ accumulate ══partitioned by 'user'══▶ combine ──▶ list
    p = Pipeline.create()
    p.read_from(Sources.items([])).grouping_key("user").aggregate(ops.summing("amount")).write_to(Sinks.list("o"))
    plan = p.explain(parallelism=3)
    assert "stage 1 of 2: accumulate" in plan and "stage 2 of 2: combine" in plan
    assert any("partitioned by field 'user'" in e for e in edges(plan))


def test_rebalance_before_a_keyed_aggregation_makes_it_single_stage(jet):
    # Design doc 008: rebalance().groupingKey(k).aggregate(...) drops the local first stage.
    p = Pipeline.create()
    p.read_from(Sources.items([])).rebalance().grouping_key("k").aggregate(ops.counting()).write_to(Sinks.noop())
    plan = p.explain()
    assert "single stage" in plan and "accumulate" not in plan


def test_a_custom_operation_without_combine_is_single_stage(jet):
    op = AggregateOperation.of(create=list, accumulate=lambda acc, x: acc + [x])
    p = Pipeline.create()
    p.read_from(Sources.items([])).grouping_key("k").aggregate(op).write_to(Sinks.noop())
    assert "single stage" in p.explain()


def test_windows_of_every_kind_plan(jet):
    p = Pipeline.create()
    stream = p.read_from(Sources.items_stream([1], [2])).with_timestamps("ts", allowed_lag_ms=100)
    stream.window(WindowDefinition.tumbling(1000)).aggregate(ops.counting()).write_to(Sinks.list("t"))
    stream.grouping_key("k").window(WindowDefinition.sliding(1000, 100)).aggregate(ops.max_by("v")).write_to(Sinks.list("s"))
    stream.grouping_key("k").window(WindowDefinition.session(500).set_early_results_period(50)) \
        .aggregate(ops.to_list()).write_to(Sinks.list("x"))
    plan = p.explain()
    assert "tumbling(1000ms" in plan and "sliding(1000ms, slide 100ms" in plan and "session(timeout 500ms" in plan
    assert "timestamps from field 'ts', lag 100ms" in plan


def test_hash_join_broadcasts_the_enriching_side(jet):
    p = Pipeline.create()
    orders = p.read_from(Sources.items([]))
    users = p.read_from(Sources.items([])).rebalance()  # doc 008: no effect on an enriching side
    orders.hash_join(users, JoinClause.on("user_id", "id")).write_to(Sinks.noop())
    assert any("broadcast" in e for e in edges(p.explain()))


def test_batch_transforms_and_sinks_of_api_md_plan(jet, tmp_path):
    df = jet.spark.range(3)
    p = Pipeline.create()
    a = p.read_from(Sources.dataframe(df))
    b = p.read_from(Sources.files(str(tmp_path), format="json"))
    a.aggregate2(b, ops.counting(), ops.summing(col("id") * 2)).write_to(Sinks.console())
    a.sort(key="id", reverse=True).write_to(Sinks.files(str(tmp_path / "out")))
    a.distinct().peek().write_to(Sinks.foreach_batch(lambda df, batch_id: None))
    a.merge(b).rolling_aggregate(ops.averaging("id")).write_to(Sinks.noop())
    a.grouping_key("id").map_stateful(lambda: 0, lambda s, k, x: (s + 1, s)).write_to(Sinks.noop())
    a.map(lambda x: 1 / x).on_error(Sinks.dead_letter("bad")).write_to(Sinks.noop())
    plan = p.explain()
    for expected in ("sort (local runs)", "sort (merge of sorted runs)", "merge of 2 inputs", "rollingAggregate",
                     "mapStateful by field 'id'", "distinct by whole item", "deadLetter(name=bad)"):
        assert expected in plan, expected
    assert p.to_dot().startswith("digraph jetspark {")


def test_stream_sources_of_api_md_plan(jet):
    p = Pipeline.create()
    p.read_from(Sources.rate_stream(10, partitions=2)).with_ingestion_timestamps().write_to(Sinks.noop())
    p.read_from(Sources.kafka("localhost:9092", "events")).with_native_timestamps(0).write_to(Sinks.noop())
    plan = p.explain()
    assert "rateStream" in plan and "kafka" in plan and "native timestamps" in plan


def test_preserve_order_keeps_order_sensitive_edges_isolated(jet):
    #   items ──isolated──▶ map ──isolated──▶ map_stateful ──▶ sink   (equal parallelism, no round-robin)
    p = Pipeline.create(preserve_order=True)
    p.read_from(Sources.items([])).map(str).map_stateful(lambda: 0, lambda s, x: (s, x)).write_to(Sinks.noop())
    plan = p.explain(parallelism=4)
    assert "round-robin" not in plan
    assert any(e.startswith("items-source:0 -> map:0") and "isolated" in e for e in edges(plan))


@pytest.mark.parametrize("build,rule", [
    (lambda p: p.read_from(Sources.items([1])).rebalance().rolling_aggregate(ops.counting()).write_to(Sinks.noop()),
     "rebalance-before-stateful"),
    (lambda p: p.read_from(Sources.items_stream([1])), "stream-source-timestamps"),
    (lambda p: p.read_from(Sources.items([1])).map(str), "unattached-stage"),
    (lambda p: p.set_preserve_order(True).read_from(Sources.items([1])).rebalance().map(str)
     .map_stateful(lambda: 0, lambda s, x: (s, x)).write_to(Sinks.noop()), "unkeyed-rebalance-breaks-order"),
])
def test_definition_errors_name_the_stage_and_the_rule(jet, build, rule):
    p = Pipeline.create()
    build(p)
    with pytest.raises(PipelineDefinitionError) as e:
        p.explain()
    assert e.value.rule == rule and f"breaks rule '{rule}'" in str(e.value) and e.value.stage in str(e.value)
