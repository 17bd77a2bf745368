"""The built-in aggregate operations as Python runs them (python/jetspark/worker/operations.py: the parts of an
operation that has a user-defined part), against hand-computed results and the brute-force reference:
the JVM's number semantics, ties and NaN ordering as AnyOrdering has them, partial accumulators that
combine as one pass would, and a record that fails in one part of an all_of leaving every part as it was.
No Spark here: the operations are driven as the engine's UDF drives them."""

from __future__ import annotations

import math
import pickle
from decimal import Decimal
from fractions import Fraction

import pytest
from reference import as_sequence, run_reference

from jetspark import AggregateOperation, Pipeline, Sinks, Sources
from jetspark import AggregateOperations as ops
from jetspark.worker.operations import compare, operation_of

SQUARES = AggregateOperation.of(lambda: 0, lambda a, x: a + x * x, combine=lambda a, b: a + b)
SQUARES_OF_V = AggregateOperation.of(lambda: 0, lambda a, x: a + x["v"] ** 2, combine=lambda a, b: a + b)


def spec_of(op: AggregateOperation) -> tuple[dict, list]:
    """The spec the JVM sends back for ``op``: its own spec with each built-in part's ``slots`` numbered
    as ``PythonOperationReader`` numbers them (pre-order, an operation's own extractors first;
    top_n/bottom_n without a key take the item), and the extractors in that order."""
    objects: list = []
    spec = op.to_spec(objects)
    extractors: list = []

    def number(node: dict) -> dict:
        own = node["extractors"] or ([{"kind": "item"}] if node["name"] in ("top_n", "bottom_n") else [])
        out = dict(node, slots=list(range(len(extractors), len(extractors) + len(own))))
        extractors.extend(own)
        if "parts" in node:
            out["parts"] = [number(part) for part in node["parts"]]
        return out

    slotted = number(spec)
    return dict(slotted, extractors_in_slot_order=extractors), objects


def values_of(extractors: list[dict], item) -> list:
    """What the engine's extraction gives for ``item`` (field names, callables, the item itself)."""
    def one(e: dict):
        if e["kind"] == "item":
            return item
        if e["kind"] == "field":
            return item[e["name"]]
        raise AssertionError(e)
    return [one(e) for e in extractors]


def run(op: AggregateOperation, *partitions: list, atomic: bool = False, final: bool = True):
    """``op`` over each partition's items, accumulated apart, pickled (the shuffle) and combined in order;
    one partition runs one stage. Returns the result and the records whose accumulate failed."""
    spec, objects = spec_of(op)
    operation = operation_of(spec, objects, atomic)
    partials, failed = [], []
    for items in partitions:
        acc = operation.create()
        for item in items:
            try:
                commit = operation.prepare(acc, item, values_of(spec["extractors_in_slot_order"], item))
            except Exception:  # noqa: BLE001 - a record's failure, as the engine catches it
                failed.append(item)
                continue
            acc = commit()
        partials.append(pickle.loads(pickle.dumps(acc)))
    acc = partials[0]
    for other in partials[1:]:
        acc = operation.combine(acc, other)
    return (operation.finish(acc) if final else operation.export(acc)), failed


def v(x) -> dict:
    return {"v": x}


# -- numbers --------------------------------------------------------------------------------------------

def test_integer_sums_stay_exact_beyond_64_bits_and_a_float_makes_the_sum_a_float():
    big = 2 ** 63 - 1
    assert run(ops.summing("v"), [v(big), v(big)], [v(True), v(-1)])[0] == 2 ** 64 - 2
    assert run(ops.summing("v"), [])[0] == 0 and type(run(ops.summing("v"), [])[0]) is int
    total = run(ops.summing("v"), [v(1), v(2)], [v(0.5)])[0]
    assert total == 3.5 and type(total) is float
    assert run(ops.summing("v"), [v(Decimal("1.25")), v(1)])[0] == 2.25  # a decimal is taken as a float


def test_averaging_of_nothing_is_nan_and_of_huge_integers_divides_the_exact_sum():
    assert math.isnan(run(ops.averaging("v"), [])[0])
    big = 2 ** 64 + 1
    # The exact sum, 3·big, over 3 is big: its nearest float (a sum of floats would not be exact).
    assert run(ops.averaging("v"), [v(big)], [v(big), v(big)])[0] == float(Fraction(3 * big, 3)) == 2.0 ** 64
    assert run(ops.averaging("v"), [v(1), v(2)], [v(2)])[0] == 5 / 3


def test_variance_is_the_population_variance_and_nan_for_nothing():
    assert math.isnan(run(ops.variance("v"), [])[0])
    assert run(ops.variance("v"), [v(2), v(4)], [v(4), v(4), v(5), v(5), v(7), v(9)])[0] == pytest.approx(4.0, rel=1e-15)
    assert run(ops.variance("v"), [v(3)])[0] == 0.0
    # Combining a partial into an empty one gives it as it is: the JVM's combine keeps it bit for bit.
    alone = run(ops.variance("v"), [v(0.1), v(0.7), v(0.3)])[0]
    assert run(ops.variance("v"), [], [v(0.1), v(0.7), v(0.3)])[0] == alone


def test_linear_trend_sums_integers_exactly_and_is_nan_without_two_distinct_x():
    points = [{"x": x, "y": 2 * x + 1} for x in range(5)]
    assert run(ops.linear_trend("x", "y"), points[:2], points[2:])[0] == 2.0
    assert math.isnan(run(ops.linear_trend("x", "y"), [{"x": 3, "y": 1}, {"x": 3, "y": 5}])[0])
    assert math.isnan(run(ops.linear_trend("x", "y"), [])[0])


def test_counting_counts_and_a_value_that_is_not_a_number_fails_its_own_record():
    result, failed = run(ops.all_of(ops.counting(), ops.summing("v")), [v(1), v("two"), v(3)])
    assert result == (2, 4) and failed == [v("two")]  # the failing record is not counted either


# -- picking and ranking ---------------------------------------------------------------------------------

def test_min_by_and_max_by_keep_the_first_encountered_of_tied_items_also_across_partials():
    a, b, c, d = {"v": 1, "n": "a"}, {"v": 3, "n": "b"}, {"v": 3, "n": "c"}, {"v": 1, "n": "d"}
    assert run(ops.max_by("v"), [a, b], [c, d])[0]["n"] == "b"
    assert run(ops.min_by("v"), [a, b], [c, d])[0]["n"] == "a"
    assert run(ops.min_by("v"), [])[0] is None


def test_nan_is_above_every_number_as_the_jvm_orders_it_and_numbers_compare_across_kinds():
    nan = float("nan")
    assert math.isnan(run(ops.max_by("v"), [v(1), v(nan), v(math.inf)])[0]["v"])
    assert run(ops.min_by("v"), [v(nan), v(2), v(1.5)])[0] == v(1.5)
    assert compare(2 ** 64, 2.0 ** 64) == 0 and compare(2 ** 64 + 1, 2.0 ** 64) == 1  # exact, no rounding
    assert compare(True, 0.5) == 1 and compare(-0.0, 0.0) == 0
    assert compare((1, "b"), [1, "a", 0]) == 1 and compare((1,), (1, 0)) == -1
    with pytest.raises(TypeError, match="cannot order"):
        compare(1, "1")


def test_top_n_and_bottom_n_rank_ties_by_encounter_also_across_partials():
    items = [{"v": 5, "n": i} for i in range(3)] + [{"v": 7, "n": 3}, {"v": 5, "n": 4}, {"v": 1, "n": 5}]
    one_pass = [x["n"] for x in run(ops.top_n(3, "v"), items)[0]]
    assert one_pass == [3, 0, 1]
    assert [x["n"] for x in run(ops.top_n(3, "v"), items[:2], items[2:4], items[4:])[0]] == one_pass
    assert [x["n"] for x in run(ops.bottom_n(2, "v"), items[:3], items[3:])[0]] == [5, 0]
    assert run(ops.top_n(2), [4, 9], [1, 9])[0] == [9, 9]  # without a key: the items themselves


def test_to_list_and_to_set_collect_items():
    assert run(ops.to_list(), [1, 2], [3])[0] == [1, 2, 3]
    assert run(ops.to_set(), [1, 2], [2, 3])[0] == {1, 2, 3}
    assert run(ops.to_set(), [[1]])[1] == [[1]]  # an unhashable item fails on its own record


# -- user-defined parts ----------------------------------------------------------------------------------

def test_all_of_with_a_user_defined_part_gives_a_tuple_and_combines_every_part():
    op = ops.all_of(ops.counting(), SQUARES_OF_V, ops.summing("v"))
    assert run(op, [v(1), v(2)], [v(3)])[0] == (3, 14, 6)
    assert op.can_combine and not ops.all_of(ops.counting(), AggregateOperation.of(list, lambda a, x: a)).can_combine


def test_a_record_that_fails_in_one_part_leaves_every_part_as_it_was():
    def accumulate(acc: list, x: dict) -> list:
        acc.append(x["v"])  # in place, before failing
        if x["v"] % 4 == 0:
            raise ValueError(x)
        return acc

    collect = AggregateOperation.of(list, accumulate, finish=sorted)
    items = [v(x) for x in range(1, 10)]
    result, failed = run(ops.all_of(ops.to_list(), collect, ops.counting()), items, atomic=True)
    kept = [x for x in items if x["v"] % 4]
    assert failed == [v(4), v(8)]
    assert result == (kept, [x["v"] for x in kept], len(kept))


def test_the_python_operations_agree_with_the_reference():
    items = [{"v": (x * 37) % 11 - 3, "w": x / 4} for x in range(40)]
    op = ops.all_of(ops.counting(), ops.summing("v"), ops.averaging("w"), ops.variance("w"), ops.linear_trend("v", "w"),
                    ops.min_by("v"), ops.max_by("w"), ops.top_n(3, "v"), ops.bottom_n(2, "w"), ops.to_list(),
                    SQUARES_OF_V)  # (to_set of dicts: unhashable; see above)
    p = Pipeline.create()
    p.read_from(Sources.items(items)).aggregate(op).write_to(Sinks.list("out"))
    (expected,) = run_reference(p)["out"]
    got = run(op, items[:13], items[13:29], items[29:])[0]
    assert as_sequence([got], float_digits=12) == as_sequence([expected], float_digits=12)



def test_rolling_exports_do_not_disturb_the_accumulator():
    result, _ = run(ops.all_of(ops.to_list(), SQUARES), [1, 2], final=False)
    assert result == ([1, 2], 5)
