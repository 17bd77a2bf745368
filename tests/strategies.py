"""Hypothesis strategies of random batch pipelines over random small inputs.

:func:`batch_pipelines` draws a source (small ints, or dicts ``{"k": small int, "v": int}``), a chain of
transforms from API.md applicable to the items at hand, optional branches (a merge with a fork of the
same stream — the diamond — or with another source; joins; co-aggregation), optional
``preserve_order``, and one or more ``Sinks.list`` sinks with unique names. Expected outputs come from
:func:`reference.run_reference` (``GeneratedPipeline.expected()``).

Every user function is a self-contained lambda over builtins only (parameters are bound through
closures), so cloudpickle serializes it by value and a Spark worker can run it without importing this
module. The drawn pipelines are valid by construction: an unkeyed ``rebalance()`` appears only without
``preserve_order`` and only before a stateless stage (design doc 008's rules); failing functions appear
only on stages that route failures to a dead letter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from reference import run_reference

from jetspark import AggregateOperations as ops
from jetspark import JoinClause, Pipeline, Sinks, Sources

__all__ = ["GeneratedPipeline", "batch_pipelines", "int_items", "kv_items"]

#: Item types a stage can carry: ints, {"k", "v"} dicts, or anything else (results), which only a sink takes.
INT, KV, ANY = "int", "kv", "any"

int_items = st.lists(st.integers(-5, 20), max_size=12)
"""Random small int inputs (repeats likely, so ties, duplicates and shared keys are common)."""

kv_items = st.lists(st.fixed_dictionaries({"k": st.integers(0, 3), "v": st.integers(-5, 20)}), max_size=12)
"""Random ``{"k": key, "v": value}`` inputs with few distinct keys."""


@dataclass
class GeneratedPipeline:
    """A drawn pipeline with what a test needs to know about it: its list sinks, the dead letters its
    failing stages use, and a readable description of how it was built (shown when a test fails)."""

    pipeline: Pipeline
    sinks: list[str] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def expected(self) -> dict[str, list[Any]]:
        """What every sink must receive: the reference's evaluation."""
        return run_reference(self.pipeline)

    def __repr__(self) -> str:
        return (f"GeneratedPipeline(preserve_order={self.pipeline.preserve_order},\n  "
                + "\n  ".join(self.steps) + "\n)")


class _Builder:
    """Draws one pipeline: the current stage and its item type, and earlier stages to branch from."""

    def __init__(self, draw: Callable[[Any], Any], preserve_order: bool) -> None:
        self.draw = draw
        self.generated = GeneratedPipeline(Pipeline.create(preserve_order))
        self.p = self.generated.pipeline
        self.earlier: dict[str, list[tuple[Any, str]]] = {INT: [], KV: []}  # (stage, its description)

    def log(self, text: str) -> None:
        self.generated.steps.append(text)

    def source(self, item_type: str) -> tuple[Any, str]:
        items = self.draw(int_items if item_type == INT else kv_items)
        name = f"src{len(self.generated.steps)}"
        self.log(f"{name} = items({items!r})")
        return self.p.read_from(Sources.items(items)).set_name(name), name

    def sink(self, stage: Any, label: str) -> None:
        name = f"out{len(self.generated.sinks)}"
        self.generated.sinks.append(name)
        self.log(f"{label} -> list({name!r})")
        stage.write_to(Sinks.list(name))

    def dead_letter(self) -> Any:
        name = f"dl{len(self.generated.dead_letters)}"
        self.generated.dead_letters.append(name)
        return Sinks.dead_letter(name)


# -- transforms of int stages: each returns (new stage, its item type, description) ----------------------

def _int_map(b: _Builder, s: Any) -> tuple[Any, str, str]:
    a, c = b.draw(st.integers(1, 3)), b.draw(st.integers(-2, 2))
    return s.map(lambda x: x * a + c), INT, f"map(x*{a}{c:+d})"


def _int_map_to_none(b: _Builder, s: Any) -> tuple[Any, str, str]:
    m = b.draw(st.integers(2, 4))
    return s.map(lambda x: None if x % m == 0 else x + 1), INT, f"map(None if x%{m}==0 else x+1)"


def _int_filter(b: _Builder, s: Any) -> tuple[Any, str, str]:
    m = b.draw(st.integers(2, 3))
    return s.filter(lambda x: x % m == 0), INT, f"filter(x%{m}==0)"


def _int_flat_map(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.flat_map(lambda x: [x, x + 1]), INT, "flat_map([x, x+1])"
    return s.flat_map(lambda x: [x] * (x % 3)), INT, "flat_map([x]*(x%3))"


def _int_peek(b: _Builder, s: Any) -> tuple[Any, str, str]:
    return s.peek(), INT, "peek()"


def _int_rebalance_map(b: _Builder, s: Any) -> tuple[Any, str, str]:
    # An unkeyed rebalance reorders; with preserve_order in front of a sink that is a definition error.
    if b.p.preserve_order or b.draw(st.booleans()):
        return s.rebalance(lambda x: x % 3).map(lambda x: x - 1), INT, "rebalance(x%3).map(x-1)"
    return s.rebalance().map(lambda x: x - 1), INT, "rebalance().map(x-1)"


def _int_failing_map(b: _Builder, s: Any) -> tuple[Any, str, str]:
    m = b.draw(st.integers(3, 5))
    stage = s.map(lambda x: 60 // (x % m)).on_error(b.dead_letter())
    return stage, INT, f"map(60//(x%{m})).on_error(dead_letter)"


def _int_map_stateful(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        # running total, emitted only when it is even
        return (s.map_stateful(lambda: 0, lambda t, x: (t + x, t + x if (t + x) % 2 == 0 else None)), INT,
                "map_stateful(running total, even only)")
    # per key x%3: the how-many-th item of its key this is, folded into the item
    return (s.grouping_key(lambda x: x % 3).map_stateful(lambda: 0, lambda n, k, x: (n + 1, x * 10 + n + 1)), INT,
            "grouping_key(x%3).map_stateful(x*10 + nth of key)")


def _int_rolling(b: _Builder, s: Any) -> tuple[Any, str, str]:
    choice = b.draw(st.sampled_from(["count", "sum", "keyed"]))
    if choice == "count":
        return s.rolling_aggregate(ops.counting()), INT, "rolling_aggregate(counting)"
    if choice == "sum":
        return s.rolling_aggregate(ops.summing(lambda x: x)), INT, "rolling_aggregate(summing)"
    return (s.grouping_key(lambda x: x % 3).rolling_aggregate(ops.max_by(lambda x: x)), ANY,
            "grouping_key(x%3).rolling_aggregate(max_by)")


def _int_sort(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.sort(), INT, "sort()"
    reverse = b.draw(st.booleans())
    return s.sort(lambda x: x % 3, reverse=reverse), INT, f"sort(x%3, reverse={reverse})"


def _int_distinct(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.distinct(), INT, "distinct()"
    return s.grouping_key(lambda x: x % 4).distinct(), INT, "grouping_key(x%4).distinct()"


_INT_OPS: dict[str, Callable[[], Any]] = {
    "counting": ops.counting,
    "summing": lambda: ops.summing(lambda x: x),
    "max_by": lambda: ops.max_by(lambda x: x % 5),
    "to_list": ops.to_list,
    "top_n": lambda: ops.top_n(2),
    "all_of": lambda: ops.all_of(ops.counting(), ops.bottom_n(2, lambda x: -x)),
}


def _int_aggregate(b: _Builder, s: Any) -> tuple[Any, str, str]:
    name = b.draw(st.sampled_from(sorted(_INT_OPS)))
    result_type = INT if name in ("counting", "summing") else ANY
    return s.aggregate(_INT_OPS[name]()), result_type, f"aggregate({name})"


def _int_keyed_aggregate(b: _Builder, s: Any) -> tuple[Any, str, str]:
    m = b.draw(st.integers(2, 4))
    name = b.draw(st.sampled_from(sorted(_INT_OPS)))
    stage = s.grouping_key(lambda x: x % m).aggregate(_INT_OPS[name]())
    if name == "counting" and b.draw(st.booleans()):
        return stage.map(lambda kv: kv[1]), INT, f"grouping_key(x%{m}).aggregate(counting).map(count)"
    return stage, ANY, f"grouping_key(x%{m}).aggregate({name})"


def _int_merge(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.earlier[INT] and b.draw(st.booleans()):
        # the diamond: a fork of an earlier stage of this stream, changed on its way
        fork, label = b.draw(st.sampled_from(b.earlier[INT]))
        return s.merge(fork.map(lambda x: x + 100)), INT, f"merge({label}.map(x+100))"
    other, name = b.source(INT)
    return s.merge(other), INT, f"merge({name})"


def _int_join(b: _Builder, s: Any) -> tuple[Any, str, str]:
    right, name = b.source(KV)
    clause = JoinClause.on(lambda x: x % 4, "k")
    if b.draw(st.booleans()):
        return (s.hash_join(right, clause, lambda x, r: x if r is None else x + r["v"]), INT,
                f"hash_join({name}, x%4 = k, x + v or x)")
    return s.inner_hash_join(right, clause, lambda x, r: x * 100 + r["v"]), INT, f"inner_hash_join({name}, x%4 = k)"


def _int_aggregate2(b: _Builder, s: Any) -> tuple[Any, str, str]:
    other, name = b.source(INT)
    if b.draw(st.booleans()):
        return s.aggregate2(other, ops.counting(), ops.to_list()), ANY, f"aggregate2({name}, counting, to_list)"
    return (s.grouping_key(lambda x: x % 3).aggregate2(other.grouping_key(lambda x: x % 3), ops.summing(lambda x: x),
                                                     ops.counting()), ANY,
            f"grouping_key(x%3).aggregate2({name} by x%3, summing, counting)")


def _int_to_kv(b: _Builder, s: Any) -> tuple[Any, str, str]:
    return s.map(lambda x: {"k": x % 3, "v": x}), KV, "map({k: x%3, v: x})"


# -- transforms of {"k", "v"} stages -----------------------------------------------------------------------

def _kv_map(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.map(lambda d: d["v"]), INT, "map(v)"
    return s.map(lambda d: {"k": d["k"], "v": d["v"] * 2 + 1}), KV, "map(v*2+1)"


def _kv_filter(b: _Builder, s: Any) -> tuple[Any, str, str]:
    return s.filter(lambda d: d["v"] % 2 == 0), KV, "filter(v even)"


_KV_OPS: dict[str, Callable[[], Any]] = {
    "counting": ops.counting,
    "summing": lambda: ops.summing("v"),
    "max_by": lambda: ops.max_by("v"),
    "to_list": ops.to_list,
    "top_n": lambda: ops.top_n(2, "v"),
    "averaging": lambda: ops.averaging("v"),
}


def _kv_keyed_aggregate(b: _Builder, s: Any) -> tuple[Any, str, str]:
    name = b.draw(st.sampled_from(sorted(_KV_OPS)))
    return s.grouping_key("k").aggregate(_KV_OPS[name]()), ANY, f"grouping_key(k).aggregate({name})"


def _kv_aggregate(b: _Builder, s: Any) -> tuple[Any, str, str]:
    name = b.draw(st.sampled_from(sorted(_KV_OPS)))
    return s.aggregate(_KV_OPS[name]()), ANY, f"aggregate({name})"


def _kv_sort(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.sort("v"), KV, "sort(v)"
    return s.sort(lambda d: d["k"], reverse=True), KV, "sort(k, reverse=True)"


def _kv_distinct(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.distinct(), KV, "distinct()"
    return s.grouping_key("k").distinct(), KV, "grouping_key(k).distinct()"


def _kv_stateful(b: _Builder, s: Any) -> tuple[Any, str, str]:
    if b.draw(st.booleans()):
        return s.grouping_key("k").rolling_aggregate(ops.summing("v")), ANY, "grouping_key(k).rolling_aggregate(summing v)"
    return (s.grouping_key("k").map_stateful(lambda: 0, lambda n, k, d: (n + 1, {"k": k, "v": n + 1})), KV,
            "grouping_key(k).map_stateful(nth of key)")


def _kv_merge(b: _Builder, s: Any) -> tuple[Any, str, str]:
    other, name = b.source(KV)
    return s.merge(other), KV, f"merge({name})"


_TRANSFORMS: dict[str, list[Callable[[_Builder, Any], tuple[Any, str, str]]]] = {
    INT: [_int_map, _int_map_to_none, _int_filter, _int_flat_map, _int_peek, _int_rebalance_map, _int_failing_map,
          _int_map_stateful, _int_rolling, _int_sort, _int_distinct, _int_aggregate, _int_keyed_aggregate,
          _int_merge, _int_join, _int_aggregate2, _int_to_kv],
    KV: [_kv_map, _kv_filter, _kv_keyed_aggregate, _kv_aggregate, _kv_sort, _kv_distinct, _kv_stateful, _kv_merge],
}


@st.composite
def batch_pipelines(draw: Callable[[Any], Any], max_steps: int = 5) -> GeneratedPipeline:
    """A random valid batch pipeline: a source, up to ``max_steps`` transforms, a sink at the end and
    possibly sinks on intermediate stages (fan-out). See the module docstring."""
    b = _Builder(draw, preserve_order=draw(st.booleans()))
    item_type = draw(st.sampled_from([INT, KV]))
    stage, label = b.source(item_type)
    for _ in range(draw(st.integers(1, max_steps))):
        if item_type == ANY:
            break  # results (tuples, lists, None) only go to a sink
        b.earlier[item_type].append((stage, label))
        transform = draw(st.sampled_from(_TRANSFORMS[item_type]))
        stage, item_type, text = transform(b, stage)
        label = f"s{len(b.generated.steps)}"
        b.log(f"{label} = {text}")
        if draw(st.integers(0, 4)) == 0:
            b.sink(stage, label)  # an intermediate sink: this stage also feeds the next transform
    b.sink(stage, label)
    return b.generated
