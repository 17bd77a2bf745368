"""Aggregate operations as Python runs them: where an operation has a user-defined part
(:meth:`AggregateOperation.of`, itself, inside ``all_of`` or on one side of ``aggregate2``), the Spark
batch engine runs the whole operation in Python (:mod:`jetspark.worker.custom_aggregations`), its built-in parts too, so that one
accumulator per group holds every part. Operations without a user-defined part run in the JVM
(``io.jetspark.core.aggregate.AggregateOperations``) or in Catalyst; the built-ins here give the JVM's
results exactly, so a part's result does not depend on which side of that line its operation falls:

- numbers follow ``PythonNumbers``: booleans count as 0/1, decimals as floats, integers sum exactly
  and any float makes the result a float; anything else is not a number and fails its record;
- ``averaging`` of nothing is NaN; of integers it divides the exact sum as the JVM does (to 34 digits,
  then to the nearest float), ``variance`` is Welford's update and Chan's combine in the JVM's order of
  float operations, ``linear_trend`` sums exactly;
- values that ``min_by``/``max_by``/``top_n``/``bottom_n`` compare are ordered as ``AnyOrdering`` orders
  them (numbers across kinds, NaN above every number, lists and tuples element by element); of tied
  items the first encountered wins (``top_n``/``bottom_n``: ranks first), also across combined partials.

Every operation has the functions of one protocol: ``create()``, ``prepare(acc, item, values)``,
``combine(acc, other)``, ``deduct`` (``deduct(acc, other)``, or None where the operation cannot deduct:
a sliding window then combines its frames in two stacks instead), ``export(acc)``, ``finish(acc)``.
``values`` are what the engine extracted from the item for the operation's built-in parts, each at the
``slots`` the JVM numbered
(``PythonOperationReader``). ``prepare`` does everything that can fail for the item and returns the
commit, which cannot fail and gives the new accumulator: so a record that fails in any part of an
``all_of`` leaves every part as it was (it goes to the stage's dead letters, or fails the job).
"""

from __future__ import annotations

import copy
import decimal
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Commit = Callable[[], Any]

#: ``MathContext.DECIMAL128``: how the JVM divides exact integers before rounding to a double.
_DECIMAL128 = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN)


def operation_of(spec: Mapping[str, Any], objects: Sequence[Any], atomic: bool) -> Any:
    """The operation that ``spec`` (an operation's spec with its ``slots``, as the JVM sends it) describes;
    a user-defined part's functions are ``objects[spec["ref"]]``. ``atomic``: a record whose
    ``accumulate`` fails must leave the accumulator as it was (the stage has a dead-letter sink), so a
    user-defined ``accumulate``, which may update its accumulator in place, works on a copy."""
    name, slots = spec["name"], spec.get("slots", [])
    if name == "custom":
        return UserDefined(objects[spec["ref"]], atomic)
    if name == "all_of":
        return AllOf([operation_of(part, objects, atomic) for part in spec["parts"]])
    if name in ("top_n", "bottom_n"):
        return Ranking(slots[0], spec["n"], greatest_first=name == "top_n")
    if name in ("min_by", "max_by"):
        return Picking(slots[0], greatest=name == "max_by")
    built_in = _BUILT_INS.get(name)
    if built_in is None:
        raise ValueError(f"unknown aggregate operation {name!r}")
    return built_in(*slots)


class UserDefined:
    """:meth:`AggregateOperation.of`'s functions, with the defaults filled in: ``export`` gives the
    accumulator itself, ``finish`` is ``export``."""

    def __init__(self, functions: Mapping[str, Callable[..., Any] | None], atomic: bool) -> None:
        self.create: Callable[[], Any] = functions["create"]  # type: ignore[assignment]
        self._accumulate: Callable[[Any, Any], Any] = functions["accumulate"]  # type: ignore[assignment]
        self.combine: Callable[[Any, Any], Any] = functions["combine"]  # type: ignore[assignment]
        self.deduct: Callable[[Any, Any], Any] | None = functions["deduct"]
        self.export: Callable[[Any], Any] = functions["export"] or _unchanged
        self.finish: Callable[[Any], Any] = functions["finish"] or self.export
        self._atomic = atomic

    def prepare(self, acc: Any, item: Any, values: Sequence[Any]) -> Commit:
        updated = self._accumulate(copy.deepcopy(acc) if self._atomic else acc, item)
        return lambda: updated


def _unchanged(acc: Any) -> Any:
    """``export`` by default: the accumulator itself (the engine pickles a result at once, so later items
    do not change a result already given)."""
    return acc


class AllOf:
    """Every part over the same items; the accumulator is the list of the parts', the result the tuple
    of their results."""

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.deduct = self._deduct if all(part.deduct is not None for part in parts) else None

    def _deduct(self, acc: list[Any], other: list[Any]) -> list[Any]:
        return [part.deduct(a, b) for part, a, b in zip(self.parts, acc, other)]

    def create(self) -> list[Any]:
        return [part.create() for part in self.parts]

    def prepare(self, acc: list[Any], item: Any, values: Sequence[Any]) -> Commit:
        commits = [part.prepare(a, item, values) for part, a in zip(self.parts, acc)]
        return lambda: [commit() for commit in commits]

    def combine(self, acc: list[Any], other: list[Any]) -> list[Any]:
        return [part.combine(a, b) for part, a, b in zip(self.parts, acc, other)]

    def export(self, acc: list[Any]) -> tuple[Any, ...]:
        return tuple(part.export(a) for part, a in zip(self.parts, acc))

    def finish(self, acc: list[Any]) -> tuple[Any, ...]:
        return tuple(part.finish(a) for part, a in zip(self.parts, acc))


class _BuiltIn:
    """A built-in operation whose result is computed from its accumulator without changing it: ``finish``
    is ``export``. Python deducts none (the JVM deducts where windows of built-ins alone run): a window
    with a built-in part slides in two stacks."""

    deduct: Callable[[Any, Any], Any] | None = None

    def export(self, acc: Any) -> Any:
        raise NotImplementedError

    def finish(self, acc: Any) -> Any:
        return self.export(acc)


class Counting(_BuiltIn):
    def create(self) -> int:
        return 0

    def prepare(self, acc: int, item: Any, values: Sequence[Any]) -> Commit:
        return lambda: acc + 1

    def combine(self, acc: int, other: int) -> int:
        return acc + other

    def export(self, acc: int) -> int:
        return acc


class Summing(_BuiltIn):
    def __init__(self, slot: int) -> None:
        self.slot = slot

    def create(self) -> int | float:
        return 0

    def prepare(self, acc: int | float, item: Any, values: Sequence[Any]) -> Commit:
        total = acc + number(values[self.slot])
        return lambda: total

    def combine(self, acc: int | float, other: int | float) -> int | float:
        return acc + other

    def export(self, acc: int | float) -> int | float:
        return acc


class Averaging(_BuiltIn):
    """Accumulator: ``(count, exact sum)``."""

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def create(self) -> tuple[int, int | float]:
        return 0, 0

    def prepare(self, acc: tuple[int, int | float], item: Any, values: Sequence[Any]) -> Commit:
        updated = acc[0] + 1, acc[1] + number(values[self.slot])
        return lambda: updated

    def combine(self, acc: tuple[int, int | float], other: tuple[int, int | float]) -> tuple[int, int | float]:
        return acc[0] + other[0], acc[1] + other[1]

    def export(self, acc: tuple[int, int | float]) -> float:
        count, total = acc
        return math.nan if count == 0 else divide(total, count)


class Variance(_BuiltIn):
    """Accumulator: ``(count, mean, M2)``, updated as ``VarianceAccumulator`` updates it."""

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def create(self) -> tuple[int, float, float]:
        return 0, 0.0, 0.0

    def prepare(self, acc: tuple[int, float, float], item: Any, values: Sequence[Any]) -> Commit:
        x = float(number(values[self.slot]))
        count, mean, m2 = acc
        count += 1
        delta = x - mean
        mean += delta / count
        m2 += delta * (x - mean)
        return lambda: (count, mean, m2)

    def combine(self, acc: tuple[int, float, float], other: tuple[int, float, float]) -> tuple[int, float, float]:
        (count, mean, m2), (that_count, that_mean, that_m2) = acc, other
        if that_count == 0:
            return acc
        if count == 0:
            return other
        n = count + that_count
        delta = that_mean - mean
        return n, mean + delta * that_count / n, m2 + (that_m2 + delta * delta * float(count) * that_count / n)

    def export(self, acc: tuple[int, float, float]) -> float:
        count, _, m2 = acc
        # Math.max(m2, 0.0): rounding can leave M2 a hair below zero; NaN stays NaN.
        return math.nan if count == 0 else (0.0 if m2 <= 0.0 else m2) / count


class LinearTrend(_BuiltIn):
    """Accumulator: ``(n, Σx, Σy, Σxy, Σx²)``, exact for integers."""

    def __init__(self, x_slot: int, y_slot: int) -> None:
        self.x_slot, self.y_slot = x_slot, y_slot

    def create(self) -> tuple[Any, ...]:
        return 0, 0, 0, 0, 0

    def prepare(self, acc: tuple[Any, ...], item: Any, values: Sequence[Any]) -> Commit:
        x, y = number(values[self.x_slot]), number(values[self.y_slot])
        updated = self.combine(acc, (1, x, y, x * y, x * x))
        return lambda: updated

    def combine(self, acc: tuple[Any, ...], other: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(a + b for a, b in zip(acc, other))

    def export(self, acc: tuple[Any, ...]) -> float:
        n, sx, sy, sxy, sxx = acc
        denominator = n * sxx - sx * sx
        return math.nan if denominator == 0 else divide(n * sxy - sx * sy, denominator)


class Picking(_BuiltIn):
    """``min_by``/``max_by``. Accumulator: ``None`` or ``(item, value)``; a later item replaces it only if
    its value is strictly better."""

    def __init__(self, slot: int, greatest: bool) -> None:
        self.slot, self.sign = slot, 1 if greatest else -1

    def create(self) -> tuple[Any, Any] | None:
        return None

    def prepare(self, acc: tuple[Any, Any] | None, item: Any, values: Sequence[Any]) -> Commit:
        picked = self.combine(acc, (item, values[self.slot]))
        return lambda: picked

    def combine(self, acc: tuple[Any, Any] | None, other: tuple[Any, Any] | None) -> tuple[Any, Any] | None:
        if other is None:
            return acc
        return other if acc is None or self.sign * compare(other[1], acc[1]) > 0 else acc

    def export(self, acc: tuple[Any, Any] | None) -> Any:
        return None if acc is None else acc[0]


class Ranking(_BuiltIn):
    """``top_n``/``bottom_n``. Accumulator: ``(best, seen)``: the best ``n`` of ``(value, position, item)``
    in rank order (value, then position: the earlier item ranks first) and how many items were seen;
    a combined-in accumulator's positions follow this one's, as in one pass over both inputs."""

    def __init__(self, slot: int, n: int, greatest_first: bool) -> None:
        self.slot, self.n, self.sign = slot, n, -1 if greatest_first else 1

    def create(self) -> tuple[tuple[tuple[Any, int, Any], ...], int]:
        return (), 0

    def _rank(self, a: tuple[Any, int, Any], b: tuple[Any, int, Any]) -> int:
        return self.sign * compare(a[0], b[0]) or a[1] - b[1]

    def _insert(self, best: tuple[Any, ...], candidate: tuple[Any, int, Any]) -> tuple[Any, ...]:
        if len(best) == self.n and self._rank(candidate, best[-1]) >= 0:
            return best
        at = next((i for i, b in enumerate(best) if self._rank(b, candidate) > 0), len(best))
        return (best[:at] + (candidate,) + best[at:])[: self.n]

    def prepare(self, acc: tuple[tuple[Any, ...], int], item: Any, values: Sequence[Any]) -> Commit:
        best, seen = acc
        updated = self._insert(best, (values[self.slot], seen, item)), seen + 1
        return lambda: updated

    def combine(self, acc: tuple[tuple[Any, ...], int], other: tuple[tuple[Any, ...], int]) -> tuple[tuple[Any, ...], int]:
        best, seen = acc
        for value, position, item in other[0]:
            best = self._insert(best, (value, position + seen, item))
        return best, seen + other[1]

    def export(self, acc: tuple[tuple[Any, ...], int]) -> list[Any]:
        return [item for _, _, item in acc[0]]


class ToList(_BuiltIn):
    def create(self) -> list[Any]:
        return []

    def prepare(self, acc: list[Any], item: Any, values: Sequence[Any]) -> Commit:
        return lambda: acc.append(item) or acc

    def combine(self, acc: list[Any], other: list[Any]) -> list[Any]:
        return acc + other

    def export(self, acc: list[Any]) -> list[Any]:
        return list(acc)


class ToSet(_BuiltIn):
    def create(self) -> set[Any]:
        return set()

    def prepare(self, acc: set[Any], item: Any, values: Sequence[Any]) -> Commit:
        hash(item)  # an unhashable item fails here, on its own record, not in the commit
        return lambda: acc.add(item) or acc

    def combine(self, acc: set[Any], other: set[Any]) -> set[Any]:
        return acc | other

    def export(self, acc: set[Any]) -> set[Any]:
        return set(acc)


_BUILT_INS: dict[str, Callable[..., Any]] = {"counting": Counting, "summing": Summing, "averaging": Averaging,
                                             "variance": Variance, "linear_trend": LinearTrend, "to_list": ToList,
                                             "to_set": ToSet}


def number(value: Any) -> int | float:
    """``value`` as ``PythonNumbers.normalize`` takes it: an int (booleans 0/1) or a float (decimals too)."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (float, decimal.Decimal)):
        return float(value)
    raise TypeError(f"not a number: {value!r} ({type(value).__name__})")


def divide(a: int | float, b: int | float) -> float:
    """``PythonNumbers.divideToDouble`` (``b`` is not zero): integers divided to 34 digits, then rounded to
    the nearest float, as the JVM does; a float divides as floats do."""
    if isinstance(a, float) or isinstance(b, float):
        return float(a) / float(b)
    return float(_DECIMAL128.divide(decimal.Decimal(a), decimal.Decimal(b)))


def compare(a: Any, b: Any) -> int:
    """``AnyOrdering.compare``: numbers of any kind numerically (NaN above every other number, equal to
    NaN), strings by code point, lists and tuples element by element (shorter first on a common prefix),
    other values of related types by their own order; anything else cannot be ordered."""
    if _is_number(a) and _is_number(b):
        a, b = number(a), number(b)
        a_nan, b_nan = _is_nan(a), _is_nan(b)
        if a_nan or b_nan:
            return a_nan - b_nan
        return (a > b) - (a < b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for x, y in zip(a, b):
            c = compare(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if a is not None and b is not None and (isinstance(a, type(b)) or isinstance(b, type(a))):
        try:
            return (a > b) - (a < b)
        except TypeError:
            pass
    raise TypeError(f"cannot order {a!r} ({type(a).__name__}) against {b!r} ({type(b).__name__}): values compared by "
                    "min_by/max_by/top_n/bottom_n must be mutually comparable (numbers, strings, tuples of those, "
                    "or one comparable type)")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal))


def _is_nan(value: int | float) -> bool:
    return isinstance(value, float) and math.isnan(value)
