"""Aggregate operations: built-ins that run in the JVM, and user-defined ones from Python callables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jetspark._extractors import Extractor, ExtractorLike, extractor, optional_extractor

__all__ = ["AggregateOperation", "AggregateOperations"]

# name -> (can combine, can deduct, result depends on encounter order, its values must be numbers)
_BUILT_INS: dict[str, tuple[bool, bool, bool, bool]] = {
    "counting": (True, True, False, False),
    "summing": (True, True, False, True),
    "averaging": (True, True, False, True),
    "variance": (True, True, False, True),
    "linear_trend": (True, True, False, True),
    "min_by": (True, False, False, False),
    "max_by": (True, False, False, False),
    "top_n": (True, False, False, False),
    "bottom_n": (True, False, False, False),
    "to_set": (True, False, False, False),
    "to_list": (True, False, True, False),
}


@dataclass(frozen=True)
class AggregateOperation:
    """An aggregate operation (Jet's ``AggregateOperation``): create an accumulator, accumulate items into
    it, combine partial accumulators (enables two-stage aggregation), deduct one from another (lets a
    sliding window slide in O(1)), and export or finish the result.

    Build one with :class:`AggregateOperations` or :meth:`of`.
    """

    name: str
    extractors: tuple[Extractor, ...] = ()
    n: int | None = None
    parts: tuple[AggregateOperation, ...] = ()
    functions: dict[str, Callable[..., Any] | None] = field(default_factory=dict, compare=False)

    @property
    def can_combine(self) -> bool:
        """Whether partial accumulators combine (two-stage aggregation)."""
        return self._capability(0, all)

    @property
    def can_deduct(self) -> bool:
        """Whether an accumulator can be deducted (sliding windows slide in O(1))."""
        return self._capability(1, all)

    @property
    def is_order_sensitive(self) -> bool:
        """Whether the result depends on the order items arrive in (``to_list``). A custom operation is
        taken to accumulate commutatively, as Jet assumes."""
        return self._capability(2, any)

    def _capability(self, index: int, over_parts: Callable[[Any], bool]) -> bool:
        """Column ``index`` of the built-ins' table; a custom operation has what its functions give;
        ``all_of`` has ``over_parts`` of its parts' answers."""
        if self.name == "all_of":
            return over_parts(p._capability(index, over_parts) for p in self.parts)
        if self.name == "custom":
            function = ("combine", "deduct", None)[index]
            return function is not None and self.functions.get(function) is not None
        return _BUILT_INS[self.name][index]

    @staticmethod
    def of(
        create: Callable[[], Any],
        accumulate: Callable[[Any, Any], Any],
        combine: Callable[[Any, Any], Any] | None = None,
        deduct: Callable[[Any, Any], Any] | None = None,
        export: Callable[[Any], Any] | None = None,
        finish: Callable[[Any], Any] | None = None,
    ) -> AggregateOperation:
        """A user-defined operation from Python callables.

        ``accumulate(acc, item)``, ``combine(acc, other)`` and ``deduct(acc, other)`` return the new
        accumulator (they may update ``acc`` in place and return it); ``combine`` must be associative with
        ``create()`` as identity, and ``deduct`` must undo ``combine``. ``export(acc)`` gives the result
        without disturbing ``acc``; ``finish(acc)`` gives the final result (default: ``export``, default:
        the accumulator itself).

        Examples
        --------
        >>> mean = AggregateOperation.of(
        ...     create=lambda: (0, 0),
        ...     accumulate=lambda acc, x: (acc[0] + x, acc[1] + 1),
        ...     combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
        ...     deduct=lambda a, b: (a[0] - b[0], a[1] - b[1]),
        ...     export=lambda acc: acc[0] / acc[1] if acc[1] else float("nan"))
        >>> mean.can_combine, mean.can_deduct
        (True, True)
        """
        for name, fn in (("create", create), ("accumulate", accumulate)):
            if not callable(fn):
                raise TypeError(f"AggregateOperation.of: {name} must be callable, not {type(fn).__name__}")
        for name, fn in (("combine", combine), ("deduct", deduct), ("export", export), ("finish", finish)):
            if fn is not None and not callable(fn):
                raise TypeError(f"AggregateOperation.of: {name} must be callable or None, not {type(fn).__name__}")
        return AggregateOperation("custom", functions={"create": create, "accumulate": accumulate,
                                                       "combine": combine, "deduct": deduct,
                                                       "export": export, "finish": finish})

    def describe(self) -> str:
        if self.name == "all_of":
            return f"all_of({', '.join(p.describe() for p in self.parts)})"
        args = [e.describe() for e in self.extractors] + ([str(self.n)] if self.n is not None else [])
        return f"{self.name}({', '.join(args)})"

    def to_spec(self, objects: list[Any]) -> dict[str, Any]:
        extractors = [e.to_spec(objects) for e in self.extractors]
        if self.name in _BUILT_INS and _BUILT_INS[self.name][3]:
            # A value that is not a number is its record's failure, where it is extracted (docs/errors.md).
            extractors = [{**e, "numbers_for": self.name} for e in extractors]
        spec: dict[str, Any] = {"name": self.name, "extractors": extractors,
                                "can_combine": self.can_combine, "can_deduct": self.can_deduct,
                                "order_sensitive": self.is_order_sensitive}
        if self.n is not None:
            spec["n"] = self.n
        if self.parts:
            spec["parts"] = [p.to_spec(objects) for p in self.parts]
        if self.name == "custom":
            objects.append(self.functions)
            spec["ref"] = len(objects) - 1
        return spec


class AggregateOperations:
    """The built-in aggregate operations (Jet's ``AggregateOperations``).

    Values are extracted with a field name, a Column or a callable, like keys.

    Examples
    --------
    >>> from jetspark import AggregateOperations as ops
    >>> ops.summing("amount").describe()
    "summing('amount')"
    >>> ops.all_of(ops.counting(), ops.max_by("price")).can_deduct
    False
    """

    @staticmethod
    def counting() -> AggregateOperation:
        """Number of items."""
        return AggregateOperation("counting")

    @staticmethod
    def summing(v: ExtractorLike) -> AggregateOperation:
        """Sum of the values (integers stay exact; any float makes the sum a float)."""
        return AggregateOperation("summing", (extractor(v, "summing(v)"),))

    @staticmethod
    def averaging(v: ExtractorLike) -> AggregateOperation:
        """Mean of the values; NaN for no items."""
        return AggregateOperation("averaging", (extractor(v, "averaging(v)"),))

    @staticmethod
    def variance(v: ExtractorLike) -> AggregateOperation:
        """Population variance of the values."""
        return AggregateOperation("variance", (extractor(v, "variance(v)"),))

    @staticmethod
    def linear_trend(x: ExtractorLike, y: ExtractorLike) -> AggregateOperation:
        """Slope of the least-squares line through the ``(x, y)`` points."""
        return AggregateOperation("linear_trend", (extractor(x, "linear_trend(x)"), extractor(y, "linear_trend(y)")))

    @staticmethod
    def min_by(v: ExtractorLike) -> AggregateOperation:
        """The item with the least value (on ties the first in encounter order: docs/semantics.md)."""
        return AggregateOperation("min_by", (extractor(v, "min_by(v)"),))

    @staticmethod
    def max_by(v: ExtractorLike) -> AggregateOperation:
        """The item with the greatest value (on ties the first in encounter order: docs/semantics.md)."""
        return AggregateOperation("max_by", (extractor(v, "max_by(v)"),))

    @staticmethod
    def top_n(n: int, key: ExtractorLike | None = None) -> AggregateOperation:
        """The ``n`` greatest items (by ``key``, default the item), greatest first."""
        return AggregateOperation("top_n", _optional(key, "top_n(key)"), n=_positive(n, "top_n(n)"))

    @staticmethod
    def bottom_n(n: int, key: ExtractorLike | None = None) -> AggregateOperation:
        """The ``n`` least items (by ``key``, default the item), least first."""
        return AggregateOperation("bottom_n", _optional(key, "bottom_n(key)"), n=_positive(n, "bottom_n(n)"))

    @staticmethod
    def to_list() -> AggregateOperation:
        """The items, in encounter order."""
        return AggregateOperation("to_list")

    @staticmethod
    def to_set() -> AggregateOperation:
        """The distinct items."""
        return AggregateOperation("to_set")

    @staticmethod
    def all_of(*ops: AggregateOperation) -> AggregateOperation:
        """Several operations over the same items; the result is a tuple of their results."""
        if not ops:
            raise ValueError("all_of needs at least one operation")
        for i, op in enumerate(ops):
            if not isinstance(op, AggregateOperation):
                raise TypeError(f"all_of argument {i} must be an AggregateOperation, not {type(op).__name__}")
        return AggregateOperation("all_of", parts=tuple(ops))


def _optional(key: Any, argument: str) -> tuple[Extractor, ...]:
    e = optional_extractor(key, argument)
    return () if e is None else (e,)


def _positive(n: Any, argument: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"{argument} must be a positive int, not {n!r}")
    return n
