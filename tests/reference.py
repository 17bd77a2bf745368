"""The brute-force reference: evaluates a batch pipeline definition directly, slowly and plainly.

Every engine (local, Spark batch, Spark streaming) is tested against :func:`run_reference` on the same
pipeline. It reads the definition the way the JVM receives it (``Pipeline.to_spec()``) and writes every
semantic out from API.md, item by item, in one thread. It deliberately imports nothing of the engine
(nor ``jetspark.worker.steps``): an independent reference is what makes a comparison mean something.

Order. The reference emits items in the single-threaded encounter order, which is what
``preserve_order=True`` promises at a sink for order-sensitive stages. Each item carries a sequence id:
``(origin node id, offset)`` where its ordered stream starts (a source, or an order-producing stage such
as sort or an aggregation), extended by ``(j,)`` for the j-th item a record fans out into (flat_map, a
join with several matches). A merge emits its inputs' items by sequence id, ties in input order: for
branches forked from one stream that is the "diamond" order of DESIGN.md (rows that took different
branches do not overtake each other); between unrelated streams any order is legitimate and the
reference simply takes the lower origin first. Comparisons without that promise use :func:`as_multiset`.

Event time (Jet's ``JetEvent``). ``add_timestamps`` reads each item's timestamp once, with its extractor,
and the item carries it from there: its stream holds ``(seq, item, ts)``. ``map``, ``filter``,
``flat_map``, ``peek`` and ``merge`` give every output the ``ts`` of the item it came from (whatever the
output is), and so do ``map_stateful`` and ``rolling_aggregate`` (what they emit for an item) and a hash
join (each output for a left item; the enriching sides' times are not used), as Jet's
``JetEventFunctionAdapter`` does; a window reads that ``ts``; a window's results carry their window's
last instant, ``end - 1`` (Jet's rule). Every other stage (aggregations, distinct, sort: new items out of many) gets its inputs as
``(seq, item)``, without the time: a window after one of them is a definition error naming it (rule
``window-timestamps-from-items``). A record whose aggregation fails in a window is a dead letter once,
and counts in none of its windows (Jet accumulates each item once, into its frame or session).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import itertools
import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from jetspark import JobFailedError, KeyedWindowResult, Pipeline, PipelineDefinitionError, WindowResult

__all__ = ["as_multiset", "as_runs", "as_sequence", "canonical", "run_reference", "run_reference_with_ties"]

#: Marks a user call that is not about one record (create_fn, finish): its failure always fails the run.
_NO_RECORD = object()


def run_reference(pipeline: Pipeline) -> dict[str, list[Any]]:
    """What each sink of ``pipeline`` receives.

    Returns ``{name: items}`` for every ``Sinks.list(name)`` (in encounter order) and
    ``{"dead_letter:<name>": [(record, stage, error type name), ...]}`` for every
    ``Sinks.dead_letter(name)`` a stage routes its failures to. A user function that raises on a record
    fails the run with :class:`jetspark.JobFailedError` naming the stage, unless that stage has
    ``on_error(Sinks.dead_letter(...))``: then the record and its error go to the dead-letter list and
    the record has no further effect. A key, value or timestamp extractor is a user function of the stage
    that took it: an aggregation's grouping key and values, a join's clause keys, ``add_timestamps``'s
    timestamp, a ``rebalance(key)``'s key of the stage behind it. File sources, Columns and non-list sinks
    other than ``noop``/``console`` raise :class:`NotImplementedError`. A DataFrame source's items are its
    ``collect()`` rows, in that order (the reference's one use of Spark). A stream pipeline's outputs are
    :func:`stream_reference.run_stream_reference`'s, which says which stream stages it takes and how it
    cuts the stream into epochs.
    """
    if any(node["stream"] for node in pipeline.to_spec()[0]["nodes"]):
        from stream_reference import run_stream_reference  # it builds on this module

        return run_stream_reference(pipeline).outputs
    return run_reference_with_ties(pipeline)[0]


def run_reference_with_ties(pipeline: Pipeline) -> tuple[dict[str, list[Any]], dict[str, list[int]]]:
    """:func:`run_reference`, and for every list sink the lengths of the runs its items come in, one
    after the other, where the order within a run is not determined: items that a sort before the sink
    (with only stateless stages since) placed equally, ties, which an engine may give in any order (a
    sort produces order and keeps none, design doc 015); every other item is a run of its own, unless
    it is a copy of the item before it. Compare with :func:`as_runs`."""
    spec, objects = pipeline.to_spec()
    run = _Run(objects)
    run.evaluate_all(spec)
    runs = {name: [len(list(group)) for _, group in itertools.groupby(ties)] for name, ties in run.ties.items()}
    return run.results, runs


# ---------------------------------------------------------------------------------------------------
# Comparing results


def canonical(value: Any, float_digits: int | None = None) -> Any:
    """A hashable, totally ordered-by-repr description of ``value`` that equal results share: sets and
    dicts lose their iteration order, NaN equals NaN, types stay distinct (``1`` is not ``1.0``).
    With ``float_digits``, floats are rounded to that many significant digits (for sums taken in
    another order)."""
    if isinstance(value, float):
        if math.isnan(value):
            return ("float", "nan")
        if float_digits is not None and value != 0 and not math.isinf(value):
            value = float(f"{value:.{float_digits}g}")
        return ("float", value)
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, dict):
        pairs = [(canonical(k, float_digits), canonical(v, float_digits)) for k, v in value.items()]
        return ("dict", tuple(sorted(pairs, key=repr)))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((canonical(v, float_digits) for v in value), key=repr)))
    if isinstance(value, tuple) and hasattr(value, "__fields__"):  # a pyspark Row
        return ("Row", tuple((f, canonical(v, float_digits)) for f, v in zip(value.__fields__, value)))
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return (type(value).__name__, tuple(canonical(v, float_digits) for v in value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(canonical(v, float_digits) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple((f.name, canonical(getattr(value, f.name), float_digits))
                                            for f in dataclasses.fields(value)))
    return ("repr", repr(value))


def as_multiset(items: Iterable[Any], float_digits: int | None = None) -> list[str]:
    """``items`` as a sorted list of canonical descriptions: equal for two results that hold the same
    items any number of times in any order, also when the items are unhashable (dicts, lists, sets)."""
    return sorted(repr(canonical(x, float_digits)) for x in items)


def as_runs(items: Iterable[Any], runs: list[int], float_digits: int | None = None) -> list[list[str]]:
    """``items`` cut into consecutive runs of the lengths ``runs`` (what is left as one more), each as a
    multiset: equal for two results whose runs hold the same items, in any order within each run (see
    :func:`run_reference_with_ties`)."""
    items, out, start = list(items), [], 0
    for length in runs:
        out.append(as_multiset(items[start:start + length], float_digits))
        start += length
    return out + [as_multiset(items[start:], float_digits)]


def as_sequence(items: Iterable[Any], float_digits: int | None = None) -> list[str]:
    """``items`` in their order as canonical descriptions: for exact comparisons that must also treat
    NaN as equal to NaN and sets regardless of their iteration order."""
    return [repr(canonical(x, float_digits)) for x in items]


# ---------------------------------------------------------------------------------------------------
# Evaluation

Seq = tuple  # a sequence id, see the module docstring
Stream = list  # of (Seq, item) pairs, or (Seq, item, ts) triples where items carry their time

#: The stages that carry each item's time (see the module docstring) or read it.
_KEEP_TIME = {"map", "filter", "flat_map", "peek", "merge", "map_stateful", "rolling_aggregate", "hash_join",
              "inner_hash_join", "hash_join2", "inner_hash_join2", "window_aggregate"}
#: Of those, the stages that keep the time of their first input's items only (a join's left items).
_KEEP_FIRST_INPUT_TIME = {"hash_join", "inner_hash_join", "hash_join2", "inner_hash_join2"}

#: The stages whose input a ``rebalance(key)`` partitions by that key, so that the key is called for every
#: record (design doc 008: their own input edge is local). Elsewhere the stage's own edge wins and the key
#: is never called: a keyed stage partitions by its grouping key, a join by its clause's key, an enriching
#: side is broadcast, and whether an aggregation's or a window's first stage reads its input locally is
#: the planner's choice, which the reference does not model.
_REBALANCE_KEY_READERS = {"map", "filter", "flat_map", "peek", "merge", "add_timestamps", "sort", "sink"}


class _Run:
    def __init__(self, objects: list[Any]) -> None:
        self.objects = objects
        self.outputs: dict[int, Stream] = {}
        self.results: dict[str, list[Any]] = {}
        self.nodes: dict[int, dict[str, Any]] = {}
        self.ties: dict[str, list[Seq]] = {}  # per list sink, per item: what it ties with (see tie)

    # -- plumbing ------------------------------------------------------------------------------------

    def tie(self, seq: Seq) -> Seq:
        """Items whose order a sort leaves open share this: those of one place of the sort their stream
        started at (and what each became since); any other item is tied with copies of itself only."""
        return seq[:2] if self.nodes[seq[0]]["op"] == "sort" else seq

    def evaluate_all(self, spec: dict[str, Any]) -> None:
        for node in spec["nodes"]:  # ids are creation order, and a node's inputs always precede it
            self.evaluate(node)

    def require_supported(self, node: dict[str, Any]) -> None:
        """Refuses what this run does not evaluate: here every stream stage (see stream_reference.py)."""
        if node["stream"]:
            raise NotImplementedError(f"{_label(node)}: run_reference_with_ties evaluates batch pipelines only; "
                                      "run_reference and stream_reference.run_stream_reference take streams")

    def evaluate(self, node: dict[str, Any]) -> None:
        self.require_supported(node)
        if node["on_error"] is not None:
            self.results.setdefault(_dead_letter_key(node), [])
        method = getattr(self, "_" + node["op"], None)
        if method is None:
            raise NotImplementedError(f"{_label(node)}: the reference has no '{node['op']}' transform")
        inputs = [self.partitioned(node, ordinal, self.outputs[i]) for ordinal, i in enumerate(node["inputs"])]
        if node["op"] not in _KEEP_TIME:
            inputs = [[(seq, item) for seq, item, *_ in stream] for stream in inputs]
        self.nodes[node["id"]] = node
        self.outputs[node["id"]] = method(node, node["args"], *inputs)

    def call(self, node: dict[str, Any], record: Any, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Calls a user function for ``record``: ``(True, result)``, or ``(False, None)`` when it raised
        and the stage sends failures to a dead letter. Without one, the run fails naming the stage."""
        try:
            return True, fn(*args)
        except Exception as error:  # noqa: BLE001 - any user error is the record's failure
            label = _label(node)
            if record is not _NO_RECORD and node["on_error"] is not None:
                self.results[_dead_letter_key(node)].append((record, label, type(error).__name__))
                return False, None
            about = "" if record is _NO_RECORD else f" on record {record!r}"
            raise JobFailedError(f"stage '{label}' failed{about}: {type(error).__name__}: {error}",
                                 stage=label) from error

    def partitioned(self, node: dict[str, Any], ordinal: int, stream: Stream) -> Stream:
        """``stream`` as it enters input ``ordinal`` of ``node``: behind a ``rebalance(key)`` whose key
        partitions the items (see :data:`_REBALANCE_KEY_READERS`), every record's key is taken first, and
        a record whose key fails is ``node``'s failure: the stage that took the rebalanced input."""
        rebalance = node["rebalance"][ordinal] if node["rebalance"] else None
        if not isinstance(rebalance, dict) or node["op"] not in _REBALANCE_KEY_READERS:
            return stream
        key_of = self.extractor(rebalance["key"])
        return [entry for entry in stream if self.call(node, entry[1], key_of, entry[1])[0]]

    def fn(self, ref: dict[str, Any]) -> Callable[..., Any]:
        assert ref["kind"] == "python", ref
        return self.objects[ref["ref"]]

    def extractor(self, spec: dict[str, Any]) -> Callable[[Any], Any]:
        """API.md: a field name reads a dict key, else an attribute (namedtuple, Row, dataclass); a
        callable is called; a Column is the JVM's business and out of the reference's scope."""
        if spec["kind"] == "field":
            name = spec["name"]
            return lambda item: item[name] if isinstance(item, dict) else getattr(item, name)
        if spec["kind"] == "python":
            return self.objects[spec["ref"]]
        raise NotImplementedError(f"a {spec['kind']} extractor ({spec.get('name')}) is evaluated in the JVM; "
                                  "the reference takes field names and callables")

    def keyed(self, node: dict[str, Any], stream: Stream, ordinal: int = 0) -> list[tuple[Seq, Any, Any, tuple[int, ...]]]:
        """``(seq, key, item, time)`` for each item whose key could be taken (others are the stage's
        failures); ``time`` is ``(ts,)`` where the item carries one, else ``()``."""
        key_of = self.extractor(node["keys"][ordinal])
        out = []
        for seq, item, *time in stream:
            ok, key = self.call(node, item, key_of, item)
            if ok:
                out.append((seq, _key_value(key), item, tuple(time)))
        return out

    # -- sources and sinks ---------------------------------------------------------------------------

    def _source(self, node: dict[str, Any], args: dict[str, Any]) -> Stream:
        source = args["source"]
        if source["kind"] == "dataframe":
            # collect() gives partition 0's rows, then partition 1's, ...: numbering them in that order
            # orders them as the engines' (partition, offset) ids do.
            items = self.objects[source["refs"]["df"]].collect()
        elif source["kind"] == "items":
            items = self.objects[source["refs"]["items"]]
        else:
            raise NotImplementedError(f"{_label(node)}: the reference reads Sources.items and dataframe only, "
                                      f"not {source['kind']}")
        return [((node["id"], offset), item) for offset, item in enumerate(items)]

    def _sink(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        sink = args["sink"]
        if sink["kind"] == "list":
            self.results.setdefault(sink["params"]["name"], []).extend(item for _, item in stream)
            self.ties.setdefault(sink["params"]["name"], []).extend(self.tie(seq) for seq, *_ in stream)
        elif sink["kind"] not in ("noop", "console"):
            raise NotImplementedError(f"{_label(node)}: the reference writes to list, noop and console sinks only")
        return []

    # -- stateless -----------------------------------------------------------------------------------

    # Each output keeps the time of the item it came from, where items carry one (``*time``).

    def _map(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        fn, out = self.fn(args["fn"]), []
        for seq, item, *time in stream:
            ok, result = self.call(node, item, fn, item)
            if ok and result is not None:  # Jet: a map that returns null emits nothing
                out.append((seq, result, *time))
        return out

    def _filter(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        fn, out = self.fn(args["fn"]), []
        for seq, item, *time in stream:
            ok, keep = self.call(node, item, fn, item)
            if ok and keep:
                out.append((seq, item, *time))
        return out

    def _flat_map(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        fn, out = self.fn(args["fn"]), []
        for seq, item, *time in stream:
            # list() inside the call: an iterable that fails part-way fails the whole record
            ok, results = self.call(node, item, lambda x: list(fn(x)), item)
            if ok:
                out.extend((seq + (j,), r, *time) for j, r in enumerate(results))
        return out

    def _peek(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        # Peek logs (a side effect the reference does not reproduce); its formatter can still fail.
        fn = str if args["fn"] is None else self.fn(args["fn"])
        return [(seq, item, *time) for seq, item, *time in stream if self.call(node, item, fn, item)[0]]

    def _merge(self, node: dict[str, Any], args: dict[str, Any], *streams: Stream) -> Stream:
        # sorted() is stable: equal sequence ids (a record through both branches) keep input order.
        return sorted((pair for stream in streams for pair in stream), key=lambda pair: pair[0])

    # -- stateful, encounter order -------------------------------------------------------------------

    def _map_stateful(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        create, fn = self.fn(args["create_fn"]), self.fn(args["fn"])
        is_keyed = node["keys"][0] is not None
        states: dict[Any, Any] = {}  # per grouping key; the global stage has the single key None
        out = []
        rows = self.keyed(node, stream) if is_keyed else [(seq, None, item, tuple(time)) for seq, item, *time in stream]
        for seq, key, item, time in rows:
            group = _group(key)
            if group not in states:
                states[group] = self.call(node, _NO_RECORD, create)[1]
            call_args = (states[group], key, item) if is_keyed else (states[group], item)
            ok, result = self.call(node, item, lambda *a: _pair(fn(*a)), *call_args)
            if not ok:
                continue  # a failed record leaves the state as it was
            states[group], output = result
            if output is not None:
                out.append((seq, output, *time))
        return out

    def _rolling_aggregate(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        is_keyed = node["keys"][0] is not None
        aggregations: dict[Any, _Aggregation] = {}
        out = []
        rows = self.keyed(node, stream) if is_keyed else [(seq, None, item, tuple(time)) for seq, item, *time in stream]
        for seq, key, item, time in rows:
            group = _group(key)
            if group not in aggregations:
                aggregations[group] = _Aggregation(self, node, args["op"])
            aggregation = aggregations[group]
            if aggregation.add(item):
                running = aggregation.result(final=False)
                out.append((seq, (key, running) if is_keyed else running, *time))
        return out

    # -- joins ---------------------------------------------------------------------------------------

    def _hash_join(self, node: dict[str, Any], args: dict[str, Any], left: Stream, right: Stream,
                   inner: bool = False) -> Stream:
        return self.join(node, args, left, [(args["clause"], right)], inner)

    def join(self, node: dict[str, Any], args: dict[str, Any], left: Stream, sides: list[tuple[dict[str, Any], Stream]],
             inner: bool) -> Stream:
        """Each left item with every combination of its matches, one per enriching side (``sides``: the
        clause and the stream of each): ``mapper(left, right_1, ..., right_n)``, ``None`` for a side
        without a match; ``inner`` drops a left item that lacks a match on some side."""
        mapper = self.fn(args["mapper"])
        tables = []  # per side: the left key function and the side's (group, item), in its encounter order
        for clause, stream in sides:
            right_key, enriching = self.extractor(clause["right_key"]), []
            for _, item, *_ in stream:  # the enriching items' times are not used
                ok, key = self.call(node, item, right_key, item)
                if ok:
                    enriching.append((_group(key), item))
            tables.append((self.extractor(clause["left_key"]), enriching))
        out = []
        for seq, item, *time in left:
            matches = []  # per side
            for left_key, enriching in tables:
                ok, key = self.call(node, item, left_key, item)
                if not ok:
                    break
                matches.append([r for group, r in enriching if group == _group(key)])
            if len(matches) < len(tables) or (inner and not all(matches)):
                continue
            # hash_join: a side without a match gives one None. A failing mapper's record is what it was
            # given, the tuple (left, right_1, ..., right_n): it tells which match failed.
            for j, rights in enumerate(itertools.product(*(m or [None] for m in matches))):
                ok, result = self.call(node, (item, *rights), mapper, item, *rights)
                if ok and result is not None:  # like map: a None result emits nothing
                    out.append((seq + (j,), result, *time))
        return out

    def _inner_hash_join(self, node: dict[str, Any], args: dict[str, Any], left: Stream, right: Stream) -> Stream:
        return self._hash_join(node, args, left, right, inner=True)

    def _hash_join2(self, node: dict[str, Any], args: dict[str, Any], left: Stream, right1: Stream, right2: Stream,
                    inner: bool = False) -> Stream:
        return self.join(node, args, left, [(args["clause1"], right1), (args["clause2"], right2)], inner)

    def _inner_hash_join2(self, node: dict[str, Any], args: dict[str, Any], left: Stream, right1: Stream,
                          right2: Stream) -> Stream:
        return self._hash_join2(node, args, left, right1, right2, inner=True)

    # -- order producers: their output starts a new ordered stream ---------------------------------

    def _aggregate(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        if node["keys"][0] is None:
            aggregation = _Aggregation(self, node, args["op"])
            for _, item in stream:
                aggregation.add(item)
            return _origin(node, [aggregation.result(final=True)])  # one result, also over no items
        groups = self.groups(node, stream, 0)
        results = []
        for key, items in groups.values():
            aggregation = _Aggregation(self, node, args["op"])
            for item in items:
                aggregation.add(item)
            results.append((key, aggregation.result(final=True)))
        return _origin(node, results)

    def _aggregate2(self, node: dict[str, Any], args: dict[str, Any], left: Stream, right: Stream) -> Stream:
        def result(op: dict[str, Any], items: list[Any]) -> Any:
            aggregation = _Aggregation(self, node, op)
            for item in items:
                aggregation.add(item)
            return aggregation.result(final=True)

        if node["keys"][0] is None:
            return _origin(node, [(result(args["op0"], [i for _, i in left]),
                                   result(args["op1"], [i for _, i in right]))])
        left_groups, right_groups = self.groups(node, left, 0), self.groups(node, right, 1)
        keys = {g: key for g, (key, _) in right_groups.items()}
        keys.update({g: key for g, (key, _) in left_groups.items()})  # equal keys, as results carry them
        order = list(left_groups) + [g for g in right_groups if g not in left_groups]
        return _origin(node, [(keys[g], (result(args["op0"], left_groups.get(g, (None, []))[1]),
                                         result(args["op1"], right_groups.get(g, (None, []))[1])))
                              for g in order])

    def groups(self, node: dict[str, Any], stream: Stream, ordinal: int) -> dict[Any, tuple[Any, list[Any]]]:
        """group → (its key as results carry it, its items in encounter order); groups in first-seen order."""
        groups: dict[Any, tuple[Any, list[Any]]] = {}
        for _, key, item, _ in self.keyed(node, stream, ordinal):
            groups.setdefault(_group(key), (key, []))[1].append(item)
        return groups

    def _distinct(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        # The first item of each key (the whole item for a non-keyed stage); it keeps its place.
        rows = self.keyed(node, stream) if node["keys"][0] is not None else [(s, i, i, ()) for s, i in stream]
        seen: set[Any] = set()
        out = []
        for seq, key, item, _ in rows:
            if _group(key) not in seen:
                seen.add(_group(key))
                out.append((seq, item))
        return out

    def _sort(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        key_of = (lambda x: x) if args["key"] is None else self.extractor(args["key"])
        keyed = []
        for _, item in stream:
            ok, key = self.call(node, item, key_of, item)
            if ok:
                keyed.append((key, item))
        # Brute force, not Python's sort: an item's place is the number of distinct keys before its key.
        # Items of equal keys (ties) share it and keep their encounter order here; their id
        # ``(sort, place, position)`` tells the comparison which items tie (see run_reference_with_ties).
        ok, places = self.call(node, _NO_RECORD, _places, [key for key, _ in keyed], args["reverse"])
        items = [item for _, item in keyed]
        return [((node["id"], place, position), items[position])
                for place in sorted(set(places)) for position in range(len(items)) if places[position] == place]

    # -- event time and windows (API.md "Windows"; a batch is one epoch: nothing is late) ----------------

    def _add_timestamps(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        read, out = self.extractor(args["ts"]), []
        for seq, item in stream:
            ok, ts = self.call(node, item, lambda x: _milliseconds(read(x)), item)
            if ok:
                out.append((seq, item, ts))
        return out

    def require_carried(self, node_id: int) -> None:
        """The items leaving ``node_id`` must carry their time: it stamps them (add_timestamps, a
        window), or carries the time of its inputs' items (map, filter, flat_map, peek, merge, map_stateful,
        rolling_aggregate), or of its left input's items (a hash join)."""
        node = self.nodes[node_id]
        if node["op"] in ("add_timestamps", "window_aggregate"):
            return
        if node["op"] not in _KEEP_TIME:
            raise PipelineDefinitionError(f"stage '{_label(node)}' gives items without a timestamp to a window",
                                          _label(node), "window-timestamps-from-items")
        for i in node["inputs"][:1] if node["op"] in _KEEP_FIRST_INPUT_TIME else node["inputs"]:
            self.require_carried(i)

    def _window_aggregate(self, node: dict[str, Any], args: dict[str, Any], stream: Stream) -> Stream:
        self.require_carried(node["inputs"][0])
        window = args["window"]
        if not args["op"]["can_combine"] and (window["kind"] == "session" or window["size_ms"] != window["slide_ms"]):
            # Jet's rule: frames combine into a longer window, an event that bridges sessions merges them.
            raise PipelineDefinitionError(f"stage '{_label(node)}' breaks rule 'window-needs-combine': its "
                                          f"{window['kind']} window needs an operation that combines",
                                          _label(node), "window-needs-combine")
        is_keyed = node["keys"][0] is not None
        key_of = self.extractor(node["keys"][0]) if is_keyed else lambda _: None
        groups: dict[Any, tuple[Any, list[tuple[int, Any]]]] = {}  # group -> (key, [(ts, item)] in encounter order)
        for _, item, ts in stream:
            ok, key = self.call(node, item, key_of, item)
            if ok:
                groups.setdefault(_group(key), (_key_value(key), []))[1].append((ts, item))
        results = []
        for key, events in groups.values():
            failed: set[int] = set()  # the key's events whose record failed: a dead letter once, in no window
            numbered = [(ts, (i, item)) for i, (ts, item) in enumerate(events)]
            try:
                windows = _windows(args["window"], numbered)
            except _OutOfRange as e:  # not a record's own failure: no dead letter takes it
                label = _label(node)
                raise JobFailedError(f"stage '{label}' failed on record {e.item[1]!r}: {e}", stage=label) from e
            for start, end, members in windows:
                aggregation = _Aggregation(self, node, args["op"])
                for i, item in members:
                    if i not in failed and not aggregation.add(item):
                        failed.add(i)
                result = aggregation.result(final=True)
                results.append(KeyedWindowResult(start, end, key, result) if is_keyed else WindowResult(start, end, result))
        # A result carries its window's last instant as its time (Jet: end - 1), inside its own window.
        return [(seq, r, r.end - 1) for seq, r in _origin(node, sorted(results, key=lambda r: r.end))]


def _milliseconds(value: Any) -> int:
    """API.md: timestamps are int ms; a datetime is converted (a naive one is local time)."""
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.astimezone()
        return (aware - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(milliseconds=1)
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            raise OverflowError(f"a timestamp must be a 64-bit int (ms), not {value!r}")
        return value
    raise TypeError(f"a timestamp is int milliseconds or a datetime, not {value!r}")


def _windows(window: dict[str, Any], events: list[tuple[int, Any]]) -> list[tuple[int, int, list[Any]]]:
    """The non-empty windows of one key's ``(ts, item)`` events: ``(start, end, items in encounter order)``.

    Sliding (tumbling: slide == size): every window ``[end - size, end)`` with ``end`` a multiple of the
    slide that holds an event (an event at ``ts`` lies in those ending after ``ts`` and at most ``size``
    later). Session: each event spans ``[ts, ts + timeout)``; spans that overlap (not merely touch) join
    one session, which ends ``timeout`` after its last event; taken in time order, an event joins the
    current session iff it starts before the session's end.

    Every window that holds an event must lie in the range of 64-bit timestamps (docs/semantics.md, rule
    ``window-in-64-bit-range``): Python's ints do not wrap, so the windows are computed exactly, and an
    event that falls in one beyond the range raises :class:`_OutOfRange`."""
    if not events:
        return []
    if window["kind"] == "sliding":
        size, slide = window["size_ms"], window["slide_ms"]
        ends = set()
        for ts, item in events:
            first_end = ts // slide * slide + slide
            _require_in_range(ts, item, first_end - size, first_end - slide + size)
            ends.update(range(first_end, first_end + size, slide))
        return [(end - size, end, [item for ts, item in events if end - size <= ts < end]) for end in sorted(ends)]
    timeout = window["timeout_ms"]
    for ts, item in events:
        _require_in_range(ts, item, ts, ts + timeout)
    sessions: list[list[Any]] = []  # [start, end, positions of its events in `events`]
    for i in sorted(range(len(events)), key=lambda j: events[j][0]):
        ts = events[i][0]
        if sessions and ts < sessions[-1][1]:
            sessions[-1][1] = max(sessions[-1][1], ts + timeout)
            sessions[-1][2].append(i)
        else:
            sessions.append([ts, ts + timeout, [i]])
    # items of a session in encounter order, like every other aggregation here
    return [(start, end, [events[i][1] for i in sorted(members)]) for start, end, members in sessions]


class _OutOfRange(Exception):
    """An event that falls in a window 64-bit timestamps cannot hold: the window stage fails on it."""

    def __init__(self, ts: int, item: Any) -> None:
        super().__init__(f"the event at timestamp {ts} falls in a window that 64-bit timestamps cannot hold")
        self.item = item


def _require_in_range(ts: int, item: Any, first_start: int, last_end: int) -> None:
    """``item`` at ``ts`` falls in windows from ``first_start`` to ``last_end`` (exclusive ends)."""
    if first_start < -(2**63) or last_end > 2**63 - 1:
        raise _OutOfRange(ts, item)


class _Aggregation:
    """One aggregate operation over the items added so far. Built-in operations keep the accepted items
    (with their extracted values) and compute the result from that list each time it is asked for: slow,
    and obviously what API.md says. A user-defined operation folds its own accumulator."""

    def __init__(self, run: _Run, node: dict[str, Any], op: dict[str, Any]) -> None:
        self.run, self.node, self.op = run, node, op
        self.name = op["name"]
        self.parts = [_Aggregation(run, node, part) for part in op.get("parts", [])]
        self.extractors = [run.extractor(e) for e in op["extractors"]]
        self.rows: list[tuple[Any, tuple[Any, ...]]] = []  # (item, extracted values)
        if self.name == "custom":
            self.functions = run.objects[op["ref"]]
            self.acc = run.call(node, _NO_RECORD, self.functions["create"])[1]

    def add(self, item: Any) -> bool:
        """Adds ``item``; False when a user function failed on it (it went to the dead letter)."""
        ok, staged = self.run.call(self.node, item, self._staged_add, item)
        if ok:
            staged()
        return ok

    def _staged_add(self, item: Any) -> Callable[[], None]:
        """Does everything that can fail for ``item`` without changing this aggregation, and returns the
        commit: so that a record that fails in one part of an all_of leaves every part as it was."""
        if self.name == "all_of":
            commits = [part._staged_add(item) for part in self.parts]

            def commit_all() -> None:
                for commit in commits:
                    commit()
            return commit_all
        if self.name == "custom":
            new_acc = self.functions["accumulate"](copy.deepcopy(self.acc), item)
            return lambda: setattr(self, "acc", new_acc)
        values = tuple(extract(item) for extract in self.extractors)
        if self.name in ("summing", "averaging", "variance", "linear_trend"):
            for v in values:
                v + 0  # noqa: B018 - a value that is not a number fails on its own record
        row = (item, values)
        return lambda: self.rows.append(row)

    def result(self, final: bool) -> Any:
        """The result over the items so far: ``finish`` when ``final`` (the aggregation ends), else
        ``export`` (a rolling aggregation's running result, which must not disturb the accumulator)."""
        name, items = self.name, [item for item, _ in self.rows]
        values = [v[0] for _, v in self.rows] if self.extractors else items
        if name == "all_of":
            return tuple(part.result(final) for part in self.parts)
        if name == "custom":
            f = self.functions
            finisher = (f["finish"] or f["export"]) if final else f["export"]
            snapshot = copy.deepcopy(self.acc)  # an emitted result must not change with later items
            return snapshot if finisher is None else self.run.call(self.node, _NO_RECORD, finisher, snapshot)[1]
        if name == "counting":
            return len(items)
        if name == "summing":
            return sum(values)
        if name == "averaging":
            return sum(values) / len(values) if values else math.nan
        if name == "variance":
            if not values:
                return math.nan
            xs = [Fraction(float(v)) for v in values]  # values taken as doubles, then exact arithmetic
            mean = sum(xs) / len(xs)
            return float(sum((x - mean) ** 2 for x in xs) / len(xs))
        if name == "linear_trend":
            points = [(Fraction(x), Fraction(y)) for _, (x, y) in self.rows]
            n = len(points)
            sx, sy = sum(x for x, _ in points), sum(y for _, y in points)
            sxy, sxx = sum(x * y for x, y in points), sum(x * x for x, _ in points)
            denominator = n * sxx - sx * sx
            return math.nan if denominator == 0 else float((n * sxy - sx * sy) / denominator)
        if name in ("min_by", "max_by"):
            best = None
            for item, (v,) in self.rows:
                # strict comparison: of equal values the first encountered stays
                if best is None or (v < best[1] if name == "min_by" else v > best[1]):
                    best = (item, v)
            return None if best is None else best[0]
        if name in ("top_n", "bottom_n"):
            pairs = list(zip(items, values))
            ranked = sorted(pairs, key=lambda p: p[1], reverse=name == "top_n")  # stable both ways
            return [item for item, _ in ranked[: self.op["n"]]]
        if name == "to_list":
            return list(items)
        if name == "to_set":
            return set(items)
        raise NotImplementedError(f"aggregate operation {name!r}")


def _pair(result: Any) -> tuple[Any, Any]:
    new_state, output = result  # map_stateful's fn must return (new_state, output)
    return new_state, output


def _group(key: Any) -> Any:
    """The identity of a grouping/join key: the key itself where it is hashable (Python equality: ``1``,
    ``1.0`` and ``True`` are one key), else the canonical description of its :func:`_key_value` (keys
    compare by value, also dicts and lists, whose numbers compare as Python compares them)."""
    try:
        hash(key)
        return ("value", key)
    except TypeError:
        return ("canonical", repr(canonical(_key_value(key))))


def _key_value(key: Any) -> Any:
    """The key a result carries (docs/semantics.md): numbers that equal an int (a bool, an integral float)
    as that int, through tuples, lists, namedtuples, dicts and sets (a set as a frozenset); other
    values as they are (Rows too: each field has one Spark type)."""
    if isinstance(key, bool) or (isinstance(key, float) and key.is_integer()):
        return int(key)
    if type(key) in (tuple, list):
        return type(key)(_key_value(v) for v in key)
    if isinstance(key, tuple) and hasattr(type(key), "_make"):
        return type(key)._make(_key_value(v) for v in key)
    if isinstance(key, dict):
        return {_key_value(k): _key_value(v) for k, v in key.items()}
    if isinstance(key, (set, frozenset)):
        return frozenset(_key_value(v) for v in key)
    return key


def _places(keys: list[Any], reverse: bool) -> list[int]:
    """Each key's place among the distinct ``keys`` (equal ones, ``1 == 1.0 == True`` too, share one):
    how many come before it, ascending, or descending with ``reverse``. Comparing two keys that do not
    compare raises, as a sort of them does."""
    distinct: list[Any] = []
    for key in keys:
        if not any(key == d for d in distinct):
            distinct.append(key)
    return [sum(1 for d in distinct if (key < d if reverse else d < key)) for key in keys]


def _origin(node: dict[str, Any], items: list[Any]) -> Stream:
    return [((node["id"], offset), item) for offset, item in enumerate(items)]


def _label(node: dict[str, Any]) -> str:
    return node["name"] or f"{node['op']}#{node['id']}"


def _dead_letter_key(node: dict[str, Any]) -> str:
    return "dead_letter:" + node["on_error"]["params"]["name"]
