"""Keys follow Python's equality in every keyed stage, on both engines (docs/semantics.md): ``1``,
``1.0`` and ``True`` are one key, also inside tuples, and a result carries the int it equals.
Expected outputs come from the reference, which groups as a dict does.

    items   0    1    2    3    4    5  ...   key of x: x % 3 as int (x//3 % 3 == 0), float (1) or bool (2)
    key     0  1.0    2  0.0 True  2.0  ...   -> three keys, 0, 1 and 2, whatever the types
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from reference import as_multiset, as_sequence, run_reference

from jetspark import AggregateOperations as ops
from jetspark import JoinClause, Pipeline, Sinks, Sources

ITEMS = list(range(30))


# Lambdas, so that cloudpickle sends them by value: Spark's workers cannot import this module.
mixed: Callable[[int], Any] = lambda x: (x % 3, float(x % 3), x % 3 == 1 if x % 3 < 2 else x % 3)[x // 3 % 3]  # noqa: E731
mixed_pair: Callable[[int], Any] = lambda x: ((x % 3, float(x % 3), x % 3 == 1 if x % 3 < 2 else x % 3)[x // 3 % 3], "a")  # noqa: E731


STAGES: dict[str, Callable[[Any, Callable[[int], Any]], Any]] = {
    "aggregate": lambda s, key: s.grouping_key(key).aggregate(ops.all_of(ops.counting(), ops.to_list())),
    "distinct": lambda s, key: s.grouping_key(key).distinct(),
    "map_stateful": lambda s, key: s.grouping_key(key).map_stateful(lambda: 0, lambda n, k, x: (n + 1, (k, n + 1, x))),
    "rolling_aggregate": lambda s, key: s.grouping_key(key).rolling_aggregate(ops.counting()),
    "rebalance": lambda s, key: s.rebalance(key).grouping_key(key).map_stateful(lambda: 0, lambda n, k, x: (n + 1, (k, n + 1))),
}
#: The stages light jobs of Python pipelines run.
LIGHT = ["aggregate", "distinct", "map_stateful", "rolling_aggregate"]


def _pipeline(stage: str, key: Callable[[int], Any]) -> Pipeline:
    p = Pipeline.create(preserve_order=True)  # per-key order, so that every output is determined
    STAGES[stage](p.read_from(Sources.items(ITEMS)), key).write_to(Sinks.list("mixed"))
    return p


def _run(jet: Any, p: Pipeline, light: bool) -> list[Any]:
    jet.clear_list("mixed")
    (jet.new_light_job(p) if light else jet.new_job(p)).join(timeout=300)
    got = jet.get_list("mixed")
    jet.clear_list("mixed")
    return got


@pytest.mark.parametrize("key", [mixed, mixed_pair], ids=["number", "tuple"])
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_keys_python_holds_equal_are_one_key_on_the_spark_engine(jet, stage, key):
    p = _pipeline(stage, key)
    expected = run_reference(p)["mixed"]
    assert as_multiset(_run(jet, p, light=False)) == as_multiset(expected)


@pytest.mark.parametrize("key", [mixed, mixed_pair], ids=["number", "tuple"])
@pytest.mark.parametrize("stage", LIGHT)
def test_keys_python_holds_equal_are_one_key_in_light_jobs(jet, stage, key):
    p = _pipeline(stage, key)
    assert as_multiset(_run(jet, p, light=True)) == as_multiset(run_reference(p)["mixed"])


def test_results_carry_each_key_as_the_int_it_equals(jet):
    p = _pipeline("aggregate", mixed)
    expected = [(k, (10, [x for x in ITEMS if x % 3 == k])) for k in (0, 1, 2)]
    assert as_multiset(run_reference(p)["mixed"]) == as_multiset(expected)
    assert as_multiset(_run(jet, p, light=False)) == as_multiset(expected)


def test_a_join_matches_keys_python_holds_equal(jet):
    p = Pipeline.create()
    right = p.read_from(Sources.items([{"k": 1.0, "name": "one"}, {"k": True, "name": "true"}, {"k": 2, "name": "two"}]))
    (p.read_from(Sources.items(ITEMS)).inner_hash_join(right, JoinClause.on(mixed, "k"), lambda x, r: (x, r["name"]))
     .write_to(Sinks.list("mixed")))
    expected = run_reference(p)["mixed"]
    assert len(expected) == 10 * 2 + 10  # each x with x % 3 == 1 matches both 1.0 and True
    assert as_sequence(sorted(_run(jet, p, light=False))) == as_sequence(sorted(expected))
