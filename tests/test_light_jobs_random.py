"""Random batch pipelines (tests/strategies.py) run as light jobs on the local engine and give what the
brute-force reference (tests/reference.py) gives: in order where the definition promises order, as
multisets elsewhere. Limited to the transforms light jobs of Python pipelines run so far (see
PythonVertices). Light jobs cost milliseconds, so more examples than for the Spark engine."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from strategies import batch_pipelines
from test_batch_engine_random import sink_mismatches

# A sort's sinks compare in order up to its ties.
STATELESS = frozenset({"map", "map_to_none", "filter", "flat_map", "peek", "rebalance_map", "failing_map", "to_kv"})
AGGREGATING = STATELESS | {"aggregate", "keyed_aggregate", "distinct", "map_stateful", "sort", "mixed_key", "merge",
                           "join", "join2", "mixed_key_join", "aggregate2", "custom_aggregate",
                           "window", "mixed_key_window", "custom_window"}
ORDERED = STATELESS | {"rolling", "map_stateful", "sort", "merge", "distinct", "custom_rolling"}
# What needs sequence ids: a keyed rebalance (order restored per key behind it), a diamond (its merge in
# source order, partition by partition or gathered into one processor), both.
OPENINGS = [("rebalance_map",), ("flat_map", "merge"), ("rebalance_map", "flat_map", "merge"), ("merge", "rebalance_map")]

SETTINGS = settings(max_examples=examples(30), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def mismatches_as_light_job(jet, generated) -> list[str]:
    jet.new_light_job(generated.pipeline).join(timeout=120)
    return sink_mismatches(jet, generated)


@SETTINGS
@given(batch_pipelines(allowed=AGGREGATING, preserve_order=False))
def test_random_pipelines_match_the_reference(jet, generated):
    problems = mismatches_as_light_job(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


@SETTINGS
@given(batch_pipelines(allowed=ORDERED, preserve_order=True))
def test_random_ordered_pipelines_keep_the_reference_order(jet, generated):
    problems = mismatches_as_light_job(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


@SETTINGS
@given(batch_pipelines(allowed=AGGREGATING, first=("sort",)))
def test_random_pipelines_after_a_sort_keep_its_order(jet, generated):
    # Every example opens with a sort, with or without preserve_order: its sinks see its order, up to its ties.
    problems = mismatches_as_light_job(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)


@SETTINGS
@given(st.sampled_from(OPENINGS).flatmap(lambda first: batch_pipelines(allowed=ORDERED, preserve_order=True, first=first)))
def test_random_keyed_shuffles_and_diamonds_keep_the_reference_order(jet, generated):
    problems = mismatches_as_light_job(jet, generated)
    assert not problems, f"{generated}\n" + "\n".join(problems)
