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
only on stages that route failures to a dead letter (a failing map, or a stage whose key, value or
timestamp extractor fails). They are also determined by their definition: a
stage whose result depends on encounter order (map_stateful, rolling_aggregate, to_list, a keyed
distinct, a sort's ties) is drawn only where that order is promised (see :class:`GeneratedPipeline`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from reference import as_multiset, as_runs, as_sequence, run_reference, run_reference_with_ties

from jetspark import AggregateOperations as ops
from jetspark import AggregateOperation, JoinClause, Pipeline, Sinks, Sources, WindowDefinition

__all__ = ["GeneratedPipeline", "batch_pipelines", "int_items", "kv_items"]

#: Item types a stage can carry: ints, {"k", "v"} dicts, or anything else (results), which only a sink takes.
INT, KV, ANY = "int", "kv", "any"

int_items = st.lists(st.integers(-5, 20), max_size=12)
"""Random small int inputs (repeats likely, so ties, duplicates and shared keys are common)."""

kv_items = st.lists(st.fixed_dictionaries({"k": st.integers(0, 3), "v": st.integers(-5, 20)}), max_size=12)
"""Random ``{"k": key, "v": value}`` inputs with few distinct keys."""


def _nontrivial(items: list[Any]) -> bool:
    """At least four items of at least two keys with at least three distinct values: rejects the empty and
    the all-equal inputs that Hypothesis tries first (its simplest example), where few examples are run."""
    keys = {i["k"] if isinstance(i, dict) else i % 3 for i in items}
    return len(items) >= 4 and len(keys) >= 2 and len({repr(i) for i in items}) >= 3


@dataclass
class GeneratedPipeline:
    """A drawn pipeline with what a test needs to know about it: its list sinks, the dead letters its
    failing stages use, which sinks' order the definition promises, and a readable description of how it
    was built (shown when a test fails).

    Every sink's items *as a multiset* are determined by the definition (order-sensitive stages are only
    drawn where their input order is promised), so an engine must match :func:`reference.as_multiset` of
    :meth:`expected` on every sink. Where ``exact_order[sink]`` is true (preserve_order is on and nothing
    between the sink and where its ordered stream starts mixes orders: no keyed stage, unrelated merge or
    keyed rebalance; a hash join keeps its left side's order, a left item's outputs in the order of their
    matches, which is the enriching side's source order: one partition) the engine must also match the
    order. Where ``sorted_runs[sink]`` is true instead (a sort before the sink, only stateless stages
    since, with or without preserve_order: Jet's sort feeds its sink in order) it must match the order
    up to the sort's ties: the reference's runs of tied items one after the other, each as a multiset
    (:func:`reference.as_runs`). Dead letters compare as multisets.
    """

    pipeline: Pipeline
    sinks: list[str] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    exact_order: dict[str, bool] = field(default_factory=dict)
    sorted_runs: dict[str, bool] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def expected(self) -> dict[str, list[Any]]:
        """What every sink must receive: the reference's evaluation."""
        return run_reference(self.pipeline)

    def mismatches(self, actual: dict[str, list[Any]], float_digits: int | None = 12) -> list[str]:
        """How an engine's ``actual`` sink contents differ from the reference (empty when they match):
        in order where ``exact_order`` promises it, in order up to a sort's ties where ``sorted_runs``
        does, as multisets elsewhere and for dead letters."""
        (expected, runs), problems = run_reference_with_ties(self.pipeline), []
        for name in sorted(set(expected) | set(actual)):
            want, got = expected.get(name), actual.get(name)
            if want is None or got is None:
                problems.append(f"{name}: {'unexpected' if want is None else 'missing'}")
                continue
            if self.exact_order.get(name, False):
                compare, how = as_sequence, "in order"
            elif self.sorted_runs.get(name, False):
                compare, how = (lambda items, digits, r=runs[name]: as_runs(items, r, digits)), f"in runs of {runs[name]}"
            else:
                compare, how = as_multiset, "as a multiset"
            if compare(want, float_digits) != compare(got, float_digits):
                problems.append(f"{name}: expected {want!r}, got {got!r} ({how})")
        return problems

    def __repr__(self) -> str:
        return (f"GeneratedPipeline(preserve_order={self.pipeline.preserve_order},\n  "
                + "\n  ".join(self.steps) + "\n)")


@dataclass
class _Current:
    """A stage while drawing: its item type, whether its total order is promised (``ordered``), and the
    id of the stage where that ordered stream starts (a source or an order producer): two branches of
    one origin merge in sequence order (the diamond).

    With preserve_order, a keyed rebalance keeps the order that order-sensitive stages see (the engine
    restores it by sequence ids) but a sink after it sees it per key only (``shuffled``), until a stage
    gathers everything again (a global stateful stage). ``plain``: only stateless and stateful stages,
    hash joins, rebalances by key and diamonds since the source, so sequence ids can reach this stage
    (the Spark engine carries them through Python chains, merges, map_stateful, rolling aggregates with
    built-in operations, hash joins and add_timestamps, beside the items' time where they carry one).
    ``sorted``: a sort's order up to its ties, through stateless stages only since the sort: what a
    sink sees with or without preserve_order."""

    stage: Any
    item_type: str
    ordered: bool
    origin: int
    label: str
    plain: bool = True
    shuffled: bool = False
    sorted: bool = False


class _Builder:
    """Draws one pipeline: the current stage, and earlier ones to branch from."""

    def __init__(self, draw: Callable[[Any], Any], preserve_order: bool, nontrivial: bool = False) -> None:
        self.draw = draw
        self.nontrivial = nontrivial
        self.generated = GeneratedPipeline(Pipeline.create(preserve_order))
        self.p = self.generated.pipeline
        self.earlier: list[_Current] = []
        self.origins = 0

    def log(self, text: str) -> None:
        self.generated.steps.append(text)

    def new_origin(self) -> int:
        self.origins += 1
        return self.origins

    def source(self, item_type: str) -> _Current:
        drawn = int_items if item_type == INT else kv_items
        if self.nontrivial:
            drawn = drawn.filter(_nontrivial)
        items = self.draw(drawn)
        name = f"src{len(self.generated.steps)}"
        self.log(f"{name} = items({items!r})")
        stage = self.p.read_from(Sources.items(items)).set_name(name)
        return _Current(stage, item_type, self.p.preserve_order, self.new_origin(), name)

    def sink(self, current: _Current) -> None:
        name = f"out{len(self.generated.sinks)}"
        self.generated.sinks.append(name)
        self.generated.exact_order[name] = current.ordered and not current.shuffled
        self.generated.sorted_runs[name] = current.sorted
        self.log(f"{current.label} -> list({name!r})")
        current.stage.write_to(Sinks.list(name))

    def dead_letter(self) -> Any:
        name = f"dl{len(self.generated.dead_letters)}"
        self.generated.dead_letters.append(name)
        return Sinks.dead_letter(name)


# Each transform takes the builder and the current stage and returns (new stage, item type, ordered,
# origin, description). ``keep(c)`` / ``unordered`` / ``restart(b)`` say what happens to order.

def keep(c: _Current) -> tuple[bool, int]:
    """A stateless or global order-keeping stage: the order stays as promised as it was."""
    return c.ordered, c.origin


def unordered(b: _Builder) -> tuple[bool, int]:
    """A stage whose output order is not promised (keyed stages, joins, shuffles)."""
    return False, b.new_origin()


def restart(b: _Builder) -> tuple[bool, int]:
    """An order producer (sort, global aggregation): a new ordered stream when order is preserved."""
    return b.p.preserve_order, b.new_origin()


Result = tuple[Any, str, tuple[bool, int], str]

# Extractors are tie-free where ties would make a result depend on an order nobody promised: max_by and
# top_n rank by the whole value, so tied items are equal items.


def _int_map(b: _Builder, c: _Current) -> Result:
    a, d = b.draw(st.integers(1, 3)), b.draw(st.integers(-2, 2))
    return c.stage.map(lambda x: x * a + d), INT, keep(c), f"map(x*{a}{d:+d})"


def _int_map_to_none(b: _Builder, c: _Current) -> Result:
    m = b.draw(st.integers(2, 4))
    return c.stage.map(lambda x: None if x % m == 0 else x + 1), INT, keep(c), f"map(None if x%{m}==0 else x+1)"


def _int_filter(b: _Builder, c: _Current) -> Result:
    m = b.draw(st.integers(2, 3))
    return c.stage.filter(lambda x: x % m == 0), INT, keep(c), f"filter(x%{m}==0)"


def _int_flat_map(b: _Builder, c: _Current) -> Result:
    if b.draw(st.booleans()):
        return c.stage.flat_map(lambda x: [x, x + 1]), INT, keep(c), "flat_map([x, x+1])"
    return c.stage.flat_map(lambda x: [x] * (x % 3)), INT, keep(c), "flat_map([x]*(x%3))"


def _int_peek(b: _Builder, c: _Current) -> Result:
    return c.stage.peek(), INT, keep(c), "peek()"


def _int_rebalance_map(b: _Builder, c: _Current) -> Result:
    # An unkeyed rebalance reorders; with preserve_order in front of a sink that is a definition error.
    if b.p.preserve_order:
        if not c.plain:  # sequence ids would have to pass a stage the engine carries none through
            return c.stage.map(lambda x: x - 1), INT, keep(c), "map(x-1)"
        # order restored by sequence ids where it matters; a new origin: no diamond spans the shuffle
        return (c.stage.rebalance(lambda x: x % 3).map(lambda x: x - 1), INT, (c.ordered, b.new_origin()),
                "rebalance(x%3).map(x-1)")
    if b.draw(st.booleans()):
        return c.stage.rebalance(lambda x: x % 3).map(lambda x: x - 1), INT, unordered(b), "rebalance(x%3).map(x-1)"
    return c.stage.rebalance().map(lambda x: x - 1), INT, unordered(b), "rebalance().map(x-1)"


def _int_failing_map(b: _Builder, c: _Current) -> Result:
    m = b.draw(st.integers(3, 5))
    stage = c.stage.map(lambda x: 60 // (x % m)).on_error(b.dead_letter())
    return stage, INT, keep(c), f"map(60//(x%{m})).on_error(dead_letter)"


def _int_failing_extractor(b: _Builder, c: _Current) -> Result:
    """A stage whose key, value or timestamp extractor raises where ``x % m == 0``: the record is that
    stage's dead letter (API.md "Errors"), also where the extractor was given to the keyed stage before it."""
    m = b.draw(st.integers(3, 5))
    kinds = ["grouping_key", "summing", "join_key", "timestamp"] + ([] if b.p.preserve_order else ["rebalance_key"])
    kind = b.draw(st.sampled_from(kinds))
    if kind == "grouping_key":
        stage = c.stage.grouping_key(lambda x: 60 // (x % m) % 3).aggregate(ops.counting())
        result, order, text = ANY, unordered(b), f"grouping_key(60//(x%{m})%3).aggregate(counting)"
    elif kind == "summing":
        stage = c.stage.aggregate(ops.summing(lambda x: 60 // (x % m)))
        result, order, text = INT, restart(b), f"aggregate(summing(60//(x%{m})))"
    elif kind == "join_key":
        right = b.source(KV)
        stage = c.stage.hash_join(right.stage, JoinClause.on(lambda x: 60 // (x % m) % 4, "k"),
                                  lambda x, r: x if r is None else x + r["v"])
        result, order, text = INT, unordered(b), f"hash_join({right.label}, 60//(x%{m})%4 = k, x + v or x)"
    elif kind == "timestamp":
        stage = c.stage.add_timestamps(lambda x: 60 // (x % m)).on_error(b.dead_letter()).window(
            WindowDefinition.tumbling(7)).aggregate(ops.counting())
        return stage, ANY, unordered(b), f"add_timestamps(60//(x%{m})).on_error(dead_letter).tumbling(7).aggregate(counting)"
    else:
        stage = c.stage.rebalance(lambda x: 60 // (x % m)).map(lambda x: x - 1)
        result, order, text = INT, unordered(b), f"rebalance(60//(x%{m})).map(x-1)"
    return stage.on_error(b.dead_letter()), result, order, f"{text}.on_error(dead_letter)"


def _int_map_stateful(b: _Builder, c: _Current) -> Result:
    if b.draw(st.booleans()):
        # running total, emitted only when it is even
        return (c.stage.map_stateful(lambda: 0, lambda t, x: (t + x, t + x if (t + x) % 2 == 0 else None)), INT,
                keep(c), "map_stateful(running total, even only)")
    # per key x%3: the how-many-th item of its key this is, folded into the item
    return (c.stage.grouping_key(lambda x: x % 3).map_stateful(lambda: 0, lambda n, k, x: (n + 1, x * 10 + n + 1)),
            INT, unordered(b), "grouping_key(x%3).map_stateful(x*10 + nth of key)")


def _int_rolling(b: _Builder, c: _Current) -> Result:
    choice = b.draw(st.sampled_from(["count", "sum", "keyed"]))
    if choice == "count":
        return c.stage.rolling_aggregate(ops.counting()), INT, keep(c), "rolling_aggregate(counting)"
    if choice == "sum":
        return c.stage.rolling_aggregate(ops.summing(lambda x: x)), INT, keep(c), "rolling_aggregate(summing)"
    return (c.stage.grouping_key(lambda x: x % 3).rolling_aggregate(ops.max_by(lambda x: x)), ANY, unordered(b),
            "grouping_key(x%3).rolling_aggregate(max_by)")


def _int_sort(b: _Builder, c: _Current) -> Result:
    if b.draw(st.booleans()):
        return c.stage.sort(), INT, restart(b), "sort()"  # ties are equal items
    reverse = b.draw(st.booleans())
    # ties of x%3 are different items, in any order: a sort produces order and keeps none of its input's
    return c.stage.sort(lambda x: x % 3, reverse=reverse), INT, unordered(b), f"sort(x%3, reverse={reverse})"


def _int_distinct(b: _Builder, c: _Current) -> Result:
    if not c.ordered or b.draw(st.booleans()):
        return c.stage.distinct(), INT, unordered(b), "distinct()"  # equal items: which one is kept is moot
    # the first item of each key depends on the order: drawn only where it is promised
    return c.stage.grouping_key(lambda x: x % 4).distinct(), INT, unordered(b), "grouping_key(x%4).distinct()"


#: name -> (operation factory, whether its result depends on encounter order)
_INT_OPS: dict[str, tuple[Callable[[], Any], bool]] = {
    "counting": (ops.counting, False),
    "summing": (lambda: ops.summing(lambda x: x), False),
    "max_by": (lambda: ops.max_by(lambda x: x), False),
    "to_list": (ops.to_list, True),
    "top_n": (lambda: ops.top_n(2), False),
    "all_of": (lambda: ops.all_of(ops.counting(), ops.bottom_n(2, lambda x: -x)), False),
}


def _op_name(b: _Builder, table: dict[str, tuple[Callable[[], Any], bool]], ordered: bool) -> str:
    return b.draw(st.sampled_from(sorted(name for name, (_, sensitive) in table.items() if ordered or not sensitive)))


def _int_aggregate(b: _Builder, c: _Current) -> Result:
    name = _op_name(b, _INT_OPS, c.ordered)
    result_type = INT if name in ("counting", "summing") else ANY
    return c.stage.aggregate(_INT_OPS[name][0]()), result_type, restart(b), f"aggregate({name})"


def _int_keyed_aggregate(b: _Builder, c: _Current) -> Result:
    m = b.draw(st.integers(2, 4))
    name = _op_name(b, _INT_OPS, c.ordered)
    stage = c.stage.grouping_key(lambda x: x % m).aggregate(_INT_OPS[name][0]())
    if name == "counting" and b.draw(st.booleans()):
        return stage.map(lambda kv: kv[1]), INT, unordered(b), f"grouping_key(x%{m}).aggregate(counting).map(count)"
    return stage, ANY, unordered(b), f"grouping_key(x%{m}).aggregate({name})"


def _mixed_key(b: _Builder) -> tuple[Callable[[int], Any], str, bool]:
    """A key of ints that is ``x % 3`` as an int, a float or (0 and 1) a bool, by ``x // 3``, maybe in a
    tuple: numbers Python holds equal (``1 == 1.0 == True``), so one key in every keyed stage, which
    results carry as the int it equals (docs/semantics.md)."""
    def mixed(x: int) -> Any:
        k = x % 3
        return (k, float(k), k == 1 if k < 2 else k)[x // 3 % 3]
    text = "(x%3 as int, float or bool by x//3)"
    if b.draw(st.booleans()):
        return mixed, text, False
    return (lambda x: (mixed(x), "a")), f"({text}, 'a')", True


def _int_mixed_key(b: _Builder, c: _Current) -> Result:
    key, text, _ = _mixed_key(b)
    if c.ordered and b.draw(st.booleans()):
        return (c.stage.grouping_key(key).rolling_aggregate(ops.summing(lambda x: x)), ANY, unordered(b),
                f"grouping_key({text}).rolling_aggregate(summing)")
    name = _op_name(b, _INT_OPS, c.ordered)
    return c.stage.grouping_key(key).aggregate(_INT_OPS[name][0]()), ANY, unordered(b), f"grouping_key({text}).aggregate({name})"


def _int_mixed_key_window(b: _Builder, c: _Current) -> Result:
    key, text, _ = _mixed_key(b)
    w, window_text = _window_definition(b)
    return (c.stage.add_timestamps(lambda x: x).grouping_key(key).window(w).aggregate(ops.summing(lambda x: x)), ANY,
            unordered(b), f"add_timestamps(x).grouping_key({text}).{window_text}.aggregate(summing)")


def _int_mixed_key_join(b: _Builder, c: _Current) -> Result:
    key, text, tupled = _mixed_key(b)
    right = b.source(KV)
    # the enriching side's keys are floats (or in tuples): each matches an int, float or bool
    right_key = (lambda d: (float(d["k"]), "a")) if tupled else (lambda d: float(d["k"]))
    return (c.stage.inner_hash_join(right.stage, JoinClause.on(key, right_key), lambda x, r: (x, r["v"])), ANY,
            unordered(b), f"inner_hash_join({right.label}, {text} = float(k))")


def _int_merge(b: _Builder, c: _Current) -> Result:
    forks = [e for e in b.earlier if e.item_type == INT]
    if b.p.preserve_order:  # see below: only forks the engine can merge back in sequence order
        forks = [e for e in forks if c.ordered and e.ordered and e.origin == c.origin and c.plain and e.plain]
    if forks and b.draw(st.booleans()):
        # the diamond: a fork of an earlier stage, changed on its way; in sequence order when both
        # branches are ordered from one origin
        fork = b.draw(st.sampled_from(forks))
        diamond = c.ordered and fork.ordered and fork.origin == c.origin
        # With preserve_order the planner orders every merge of branches from one source; the engine
        # merges only branches that sequence ids reach partition by partition: others merge a new source.
        if not b.p.preserve_order or (diamond and c.plain and fork.plain):
            order = (True, c.origin) if diamond else unordered(b)
            return c.stage.merge(fork.stage.map(lambda x: x + 100)), INT, order, f"merge({fork.label}.map(x+100))"
    other = b.source(INT)
    return c.stage.merge(other.stage), INT, unordered(b), f"merge({other.label})"  # unrelated streams interleave


def _joined(b: _Builder, c: _Current) -> tuple[bool, int]:
    """A hash join's order: with preserve_order, its left side's (Jet: a map over it), each left item's
    outputs in the order of their matches, the enriching side's order as it was collected: a source of
    items, one partition, so its source order."""
    return keep(c) if b.p.preserve_order else unordered(b)


def _int_join(b: _Builder, c: _Current) -> Result:
    right = b.source(KV)
    clause = JoinClause.on(lambda x: x % 4, "k")
    if b.draw(st.booleans()):
        return (c.stage.hash_join(right.stage, clause, lambda x, r: x if r is None else x + r["v"]), INT,
                _joined(b, c), f"hash_join({right.label}, x%4 = k, x + v or x)")
    return (c.stage.inner_hash_join(right.stage, clause, lambda x, r: x * 100 + r["v"]), INT, _joined(b, c),
            f"inner_hash_join({right.label}, x%4 = k)")


def _int_aggregate2(b: _Builder, c: _Current) -> Result:
    other = b.source(INT)
    if c.ordered and b.draw(st.booleans()):
        return (c.stage.aggregate2(other.stage, ops.to_list(), ops.counting()), ANY, restart(b),
                f"aggregate2({other.label}, to_list, counting)")
    if b.draw(st.booleans()):
        return (c.stage.aggregate2(other.stage, ops.counting(), ops.summing(lambda x: x)), ANY, restart(b),
                f"aggregate2({other.label}, counting, summing)")
    keyed = c.stage.grouping_key(lambda x: x % 3).aggregate2(
        other.stage.grouping_key(lambda x: x % 3), ops.summing(lambda x: x), ops.counting())
    return keyed, ANY, unordered(b), f"grouping_key(x%3).aggregate2({other.label} by x%3, summing, counting)"


def _int_to_kv(b: _Builder, c: _Current) -> Result:
    return c.stage.map(lambda x: {"k": x % 3, "v": x}), KV, keep(c), "map({k: x%3, v: x})"


# -- transforms of {"k", "v"} stages -----------------------------------------------------------------------

def _kv_map(b: _Builder, c: _Current) -> Result:
    if b.draw(st.booleans()):
        return c.stage.map(lambda d: d["v"]), INT, keep(c), "map(v)"
    return c.stage.map(lambda d: {"k": d["k"], "v": d["v"] * 2 + 1}), KV, keep(c), "map(v*2+1)"


def _kv_filter(b: _Builder, c: _Current) -> Result:
    return c.stage.filter(lambda d: d["v"] % 2 == 0), KV, keep(c), "filter(v even)"


_KV_OPS: dict[str, tuple[Callable[[], Any], bool]] = {
    "counting": (ops.counting, False),
    "summing": (lambda: ops.summing("v"), False),
    "max_by": (lambda: ops.max_by(lambda d: (d["v"], d["k"])), False),
    "to_list": (ops.to_list, True),
    "top_n": (lambda: ops.top_n(2, lambda d: (d["v"], d["k"])), False),
    "averaging": (lambda: ops.averaging("v"), False),
}


def _kv_keyed_aggregate(b: _Builder, c: _Current) -> Result:
    name = _op_name(b, _KV_OPS, c.ordered)
    stage = c.stage.grouping_key("k").aggregate(_KV_OPS[name][0]())
    return stage, ANY, unordered(b), f"grouping_key(k).aggregate({name})"


def _kv_aggregate(b: _Builder, c: _Current) -> Result:
    name = _op_name(b, _KV_OPS, c.ordered)
    return c.stage.aggregate(_KV_OPS[name][0]()), ANY, restart(b), f"aggregate({name})"


def _kv_sort(b: _Builder, c: _Current) -> Result:
    # ties (equal v, or equal k) are different items, in any order: a sort keeps none of its input's
    if b.draw(st.booleans()):
        return c.stage.sort("v"), KV, unordered(b), "sort(v)"
    return c.stage.sort(lambda d: d["k"], reverse=True), KV, unordered(b), "sort(k, reverse=True)"


def _kv_distinct(b: _Builder, c: _Current) -> Result:
    if not c.ordered or b.draw(st.booleans()):
        return c.stage.distinct(), KV, unordered(b), "distinct()"
    return c.stage.grouping_key("k").distinct(), KV, unordered(b), "grouping_key(k).distinct()"


def _kv_stateful(b: _Builder, c: _Current) -> Result:
    if b.draw(st.booleans()):
        return (c.stage.grouping_key("k").rolling_aggregate(ops.summing("v")), ANY, unordered(b),
                "grouping_key(k).rolling_aggregate(summing v)")
    return (c.stage.grouping_key("k").map_stateful(lambda: 0, lambda n, k, d: (n + 1, {"k": k, "v": n + 1})), KV,
            unordered(b), "grouping_key(k).map_stateful(nth of key)")


def _kv_merge(b: _Builder, c: _Current) -> Result:
    other = b.source(KV)
    return c.stage.merge(other.stage), KV, unordered(b), f"merge({other.label})"


def _int_join2(b: _Builder, c: _Current) -> Result:
    # hash_join2: two enriching sides, so a left item may get every combination of its matches
    right1, right2 = b.source(KV), b.source(KV)
    clause1, clause2 = JoinClause.on(lambda x: x % 4, "k"), JoinClause.on(lambda x: x % 3, "k")
    if b.draw(st.booleans()):
        stage = c.stage.hash_join2(right1.stage, clause1, right2.stage, clause2,
                                   lambda x, r1, r2: x + (0 if r1 is None else r1["v"]) * 10 + (0 if r2 is None else r2["v"]))
        return stage, INT, _joined(b, c), f"hash_join2({right1.label} x%4=k, {right2.label} x%3=k)"
    stage = c.stage.inner_hash_join2(right1.stage, clause1, right2.stage, clause2,
                                     lambda x, r1, r2: (x, r1["v"], r2["v"]))
    return stage, ANY, _joined(b, c), f"inner_hash_join2({right1.label} x%4=k, {right2.label} x%3=k)"


def _custom_op(name: str, m: int) -> AggregateOperation:
    """User-defined operations over ints whose results do not depend on the order of their items:
    ``squares`` combines (two stages), ``deducting squares`` deducts too, ``sorted`` cannot combine (one
    stage), ``failing`` raises on items with ``x % m == 0`` (drawn only with a dead-letter sink)."""
    if name == "squares":
        return AggregateOperation.of(lambda: 0, lambda a, x: a + x * x, combine=lambda a, b: a + b)
    if name == "deducting squares":
        return AggregateOperation.of(lambda: 0, lambda a, x: a + x * x, combine=lambda a, b: a + b,
                                     deduct=lambda a, b: a - b)
    if name == "sorted":
        return AggregateOperation.of(lambda: [], lambda a, x: a + [x], export=lambda a: sorted(a))
    return AggregateOperation.of(lambda: [0], lambda a, x: [a[0] + 60 // (x % m)],
                                 combine=lambda a, b: [a[0] + b[0]], finish=lambda a: a[0])


def _mixed(b: _Builder, op: AggregateOperation, text: str) -> tuple[AggregateOperation, str]:
    """``op``, or (drawn) ``op`` among built-in operations in one ``all_of``: the engine then runs the whole
    operation in Python, its built-in parts too, and a record that fails in ``op`` counts in none."""
    if not b.draw(st.booleans()):
        return op, text
    return (ops.all_of(ops.counting(), op, ops.summing(lambda x: x), ops.top_n(2)),
            f"all_of(counting, {text}, summing, top_n(2))")


def _int_custom_aggregate(b: _Builder, c: _Current) -> Result:
    name, m = b.draw(st.sampled_from(["squares", "sorted", "failing"])), b.draw(st.integers(3, 5))
    op, op_text = _mixed(b, _custom_op(name, m), f"custom {name}")
    shape = b.draw(st.sampled_from(["global", "keyed", "aggregate2"]))
    if shape == "global":
        stage, text, order = c.stage.aggregate(op), f"aggregate({op_text})", restart(b)
    elif shape == "keyed":
        stage = c.stage.grouping_key(lambda x: x % 3).aggregate(op)
        text, order = f"grouping_key(x%3).aggregate({op_text})", unordered(b)
    else:
        other = b.source(INT)
        # the other side: user-defined too, or built-in (a mix: both sides run in Python)
        other_name = b.draw(st.sampled_from(["custom squares", "counting", "summing"]))
        other_op = {"custom squares": lambda: _custom_op("squares", m), "counting": ops.counting,
                    "summing": lambda: ops.summing(lambda x: x)}[other_name]()
        if b.draw(st.booleans()):
            stage = c.stage.grouping_key(lambda x: x % 3).aggregate2(other.stage.grouping_key(lambda x: x % 3), op, other_op)
            text, order = f"grouping_key(x%3).aggregate2({other.label} by x%3, {op_text}, {other_name})", unordered(b)
        else:
            stage, order = c.stage.aggregate2(other.stage, op, other_op), restart(b)
            text = f"aggregate2({other.label}, {op_text}, {other_name})"
    if name == "failing":
        stage, text = stage.on_error(b.dead_letter()), f"{text} x%{m}==0 fails, on_error(dead_letter)"
    return stage, ANY, order, text


def _int_custom_rolling(b: _Builder, c: _Current) -> Result:
    name = b.draw(st.sampled_from(["squares", "sorted"]))
    op, text = _mixed(b, _custom_op(name, 3), f"custom {name}")
    if b.draw(st.booleans()):
        return c.stage.rolling_aggregate(op), ANY, keep(c), f"rolling_aggregate({text})"
    return (c.stage.grouping_key(lambda x: x % 2).rolling_aggregate(op), ANY, unordered(b),
            f"grouping_key(x%2).rolling_aggregate({text})")


def _window_definition(b: _Builder) -> tuple[Any, str]:
    kind = b.draw(st.sampled_from(["tumbling", "sliding", "session"]))
    if kind == "tumbling":
        size = b.draw(st.integers(1, 6))
        return WindowDefinition.tumbling(size), f"tumbling({size})"
    if kind == "sliding":
        slide, frames = b.draw(st.integers(1, 4)), b.draw(st.integers(2, 4))
        return WindowDefinition.sliding(slide * frames, slide), f"sliding({slide * frames}, {slide})"
    timeout = b.draw(st.integers(1, 5))
    return WindowDefinition.session(timeout), f"session({timeout})"


#: Window operations whose results do not depend on the order of a window's items.
_WINDOW_OPS = ("counting", "summing", "max_by", "top_n", "all_of")


def _int_window(b: _Builder, c: _Current) -> Result:
    w, text = _window_definition(b)
    # to_list lists a window's items in their order where that is promised (the input's order, restored
    # per key by sequence ids), and only in a tumbling window: a sliding window lists its frames one after
    # the other, a session its merged sessions.
    listing = c.ordered and c.plain and text.startswith("tumbling")
    name = "to_list" if listing and b.draw(st.booleans()) else b.draw(st.sampled_from(_WINDOW_OPS))
    return _windowed(b, c, w, text, _INT_OPS[name][0](), name)


def _int_custom_window(b: _Builder, c: _Current) -> Result:
    """A window of a user-defined operation, alone or in an all_of with built-ins: the engine runs it in
    Python. ``sorted`` cannot combine, so it is drawn for tumbling windows only (a sliding or session
    window of it breaks rule window-needs-combine); ``failing`` is drawn with a dead-letter sink."""
    w, text = _window_definition(b)
    tumbling = w.kind == "sliding" and w.size_ms == w.slide_ms
    name = b.draw(st.sampled_from(["squares", "deducting squares", "failing"] + (["sorted"] if tumbling else [])))
    m = b.draw(st.integers(3, 5))
    op, op_text = _mixed(b, _custom_op(name, m), f"custom {name}")
    stage, item_type, order, text = _windowed(b, c, w, text, op, op_text)
    if name == "failing":
        stage, text = stage.on_error(b.dead_letter()), f"{text} x%{m}==0 fails, on_error(dead_letter)"
    return stage, item_type, order, text


def _windowed(b: _Builder, c: _Current, w: Any, text: str, op: Any, op_text: str) -> Result:
    """``add_timestamps(x)``, stages drawn between it and the window that keep each item's time, then the
    window (keyed or not) of ``op``."""
    # the item is its own timestamp: negative times and equal times are common
    before = ""  # the stages between add_timestamps and the window
    # Under preserve_order, stages that restore order by sequence ids (a keyed stateful stage, a keyed
    # rebalance, an order-sensitive window) need the ids to reach them: drawn only where they can.
    restoring = not b.p.preserve_order or c.plain
    stage = c.stage.add_timestamps(lambda x: x)
    # Stages between that keep each item's time (Jet's JetEvent), whatever they make of the item: the
    # window reads the x that add_timestamps read. The stateful ones are keyed by x, whose items all have
    # the time x: what a window gets does not depend on their order, unless the window lists its items.
    stateless = ["", "filter", "map", "flat_map", "hash_join"]
    between = b.draw(st.sampled_from(stateless + (["map_stateful", "rolling_aggregate", "rebalance"] if restoring else [])))
    if between == "map_stateful":
        stage = stage.grouping_key(lambda x: x).map_stateful(lambda: 0, lambda n, k, x: (n + 1, x * 10 + n + 1))
        before = "grouping_key(x).map_stateful(x*10 + nth of key)."
    elif between == "rolling_aggregate":
        stage = stage.grouping_key(lambda x: x).rolling_aggregate(ops.counting()).map(lambda kn: kn[0] * 10 + kn[1])
        before = "grouping_key(x).rolling_aggregate(counting).map(x*10+n)."
    elif between == "hash_join":
        # the enriching items' own v is no time the window reads
        right = b.source(KV)
        stage = stage.hash_join(right.stage, JoinClause.on(lambda x: x % 4, "k"), lambda x, r: x if r is None else x + r["v"])
        before = f"hash_join({right.label}, x%4 = k, x + v or x)."
    elif between == "filter":
        stage, before = stage.filter(lambda x: x % 5 != 0), "filter(x%5!=0)."
    elif between == "map":
        stage, before = stage.map(lambda x: x * 7 + 1), "map(x*7+1)."
    elif between == "flat_map":
        stage, before = stage.flat_map(lambda x: [x, -x]), "flat_map([x,-x])."
    elif between == "rebalance":
        stage, before = stage.rebalance(lambda x: x % 3).map(lambda x: x + 1), "rebalance(x%3).map(x+1)."
    if b.draw(st.booleans()):
        stage = stage.grouping_key(lambda x: x % 3)
        text = f"grouping_key(x%3).{text}"
    return (stage.window(w).aggregate(op), ANY, unordered(b),
            f"add_timestamps(x).{before}{text}.aggregate({op_text})")


def _kv_window(b: _Builder, c: _Current) -> Result:
    w, text = _window_definition(b)
    name = b.draw(st.sampled_from(sorted(n for n in _KV_OPS if n != "to_list")))
    stage = c.stage.add_timestamps("v")
    if b.draw(st.booleans()):
        # the window sums the new v, at the time of the old one
        stage, text = stage.map(lambda d: {"k": d["k"], "v": -d["v"]}), f"map(v=-v).{text}"
    if b.draw(st.booleans()):
        stage = stage.grouping_key("k")
        text = f"grouping_key(k).{text}"
    return (stage.window(w).aggregate(_KV_OPS[name][0]()), ANY, unordered(b),
            f"add_timestamps(v).{text}.aggregate({name})")


#: Transforms by the item type they take; the second list needs its input order promised. Hypothesis
#: leans towards the first entries of a list, so the branching and stateful ones come first.
Transform = Callable[[_Builder, _Current], Result]
_TRANSFORMS: dict[str, tuple[list[Transform], list[Transform]]] = {
    INT: ([_int_merge, _int_join, _int_aggregate2, _int_flat_map, _int_failing_map, _int_keyed_aggregate,
           _int_aggregate, _int_sort, _int_distinct, _int_map, _int_map_to_none, _int_filter, _int_peek,
           _int_rebalance_map, _int_to_kv, _int_join2, _int_custom_aggregate, _int_window, _int_failing_extractor,
           _int_custom_window, _int_mixed_key, _int_mixed_key_window, _int_mixed_key_join],
          [_int_map_stateful, _int_rolling, _int_custom_rolling]),
    KV: ([_kv_merge, _kv_keyed_aggregate, _kv_aggregate, _kv_sort, _kv_distinct, _kv_map, _kv_filter, _kv_window],
         [_kv_stateful]),
}


@st.composite
def batch_pipelines(draw: Callable[[Any], Any], max_steps: int = 5, allowed: frozenset[str] | None = None,
                    preserve_order: bool | None = None, first: tuple[str, ...] = (),
                    nontrivial: bool = False) -> GeneratedPipeline:
    """A random valid batch pipeline: a source, up to ``max_steps`` transforms, a sink at the end and
    possibly sinks on intermediate stages (fan-out). See the module docstring and
    :class:`GeneratedPipeline` for what an engine must match.

    ``allowed`` limits the transforms to those named (``"map"``, ``"keyed_aggregate"``, ...: the names of
    the step functions here without their item-type prefix), for an engine that runs only some;
    ``preserve_order`` fixes that choice instead of drawing it. ``first`` names int transforms that open
    the pipeline, in that order (the source then gives ints), before up to ``max_steps`` drawn ones: to
    make a shape that random draws reach rarely (a keyed rebalance, a fork) the start of every example.
    ``nontrivial`` draws every source's items from inputs of several keys and values only: for runs of a
    few examples, whose first would otherwise be Hypothesis's simplest, the empty input."""
    b = _Builder(draw, preserve_order=draw(st.booleans()) if preserve_order is None else preserve_order,
                 nontrivial=nontrivial)
    current = b.source(INT if first else draw(st.sampled_from([INT, KV])))
    opening = [next(t for t in _TRANSFORMS[INT][0] + _TRANSFORMS[INT][1] if t.__name__ == f"_int_{name}") for name in first]
    for step in range(len(opening) + draw(st.integers(1, max_steps))):
        if current.item_type == ANY:
            break  # results (tuples, lists, None) only go to a sink
        b.earlier.append(current)
        always, needing_order = _TRANSFORMS[current.item_type]
        candidates = needing_order + always if current.ordered else always
        if allowed is not None:
            candidates = [t for t in candidates if t.__name__.split("_", 2)[2] in allowed]
            if not candidates:
                break
        transform = opening[step] if step < len(opening) else draw(st.sampled_from(candidates))
        stage, item_type, (ordered, origin), text = transform(b, current)
        label = f"s{len(b.generated.steps)}"
        b.log(f"{label} = {text}")
        current = _Current(stage, item_type, ordered, origin, label, *_order_flags(transform, current, origin),
                           sorted=transform in _SORTS or (transform in _STATELESS and current.sorted))
        if draw(st.integers(0, 4)) == 0:
            b.sink(current)  # an intermediate sink: this stage also feeds the next transform
    b.sink(current)
    return b.generated


#: Stages of one item at a time, no state, nothing rebalanced: a sort's order passes them.
_STATELESS = frozenset({_int_map, _int_map_to_none, _int_filter, _int_flat_map, _int_peek, _int_failing_map, _int_to_kv,
                        _kv_map, _kv_filter})
_SORTS = frozenset({_int_sort, _kv_sort})


#: Stages that keep each record's sequence id (Python chains, hash joins): what they get, they pass on.
_KEEPING_IDS = _STATELESS | {_int_join, _int_join2}


#: Order-sensitive stages that give each output the sequence id of its item.
_STATEFUL = frozenset({_int_map_stateful, _int_rolling, _kv_stateful})


def _order_flags(transform: Transform, before: _Current, origin: int) -> tuple[bool, bool]:
    """``(plain, shuffled)`` of the stage ``transform`` made of ``before`` (see :class:`_Current`)."""
    if transform is _int_rebalance_map and origin != before.origin:
        return before.plain, True
    if transform in _KEEPING_IDS or (transform is _int_merge and origin == before.origin):
        return before.plain, before.shuffled
    if transform in _STATEFUL:
        # Ids pass (each output keeps its item's); a global stage gathers a shuffled stream into one
        # partition, which no branch of a diamond forked before it lines up with: no longer plain then.
        return before.plain and not before.shuffled, False
    # Any other stage gathers (global state, sort, global aggregation: its order is total again) or
    # leaves an unordered stream; either way its output is not reached by sequence ids.
    return False, False
