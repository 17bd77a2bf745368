"""Pipelines whose order preserve_order promises across keyed shuffles and diamonds, each with what the
sink must see, checked against the brute-force reference (tests/reference.py). Shared by
test_preserve_order.py (local[2]) and its two-executor run (local-cluster), which imports this module
in a fresh process.

What is promised where (DESIGN.md, Planner "Order"):

- after a keyed shuffle (``rebalance(key)``, a grouping key), each key's items in source order: the
  sink sees every key's items in the reference's order, keys interleaved in any way (``per_key``);
- where everything meets one processor again (a global ``map_stateful`` or rolling aggregate), the
  whole source order (exact);
- at the merge of a diamond, the source order, each record's outputs in branch order (exact), also
  where a branch re-partitions (a keyed stage, ``rebalance(key)``) and with any number of branches;
- through stages that carry each item's time to a window (``add_timestamps`` to the window), the same:
  ids ride beside the times, so a restore point on the way, or a window whose operation depends on
  order (``to_list``), sees each key's items in source order at their times;
- a hash join keeps its streamed side's order (Jet: a map over it), a left item's outputs in the order of
  their matches (the enriching side's order; here one partition, so its source order);
- a window's results, per key, by window end.

Sources with several substreams are DataFrames of ``PARTITIONS`` partitions: the reference numbers their
``collect()`` rows, which come partition after partition, as the engine numbers (partition, offset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference import as_sequence, run_reference

from jetspark import AggregateOperations as ops
from jetspark import AggregateOperation, JoinClause, Pipeline, Sinks, Sources, WindowDefinition

PARTITIONS = 3
#: An enriching side: several matches for k = 0 and 1, one for 2, none for 3.
TAGS = [{"k": 0, "tag": "a"}, {"k": 1, "tag": "b"}, {"k": 0, "tag": "c"}, {"k": 2, "tag": "d"}, {"k": 1, "tag": "e"},
        {"k": 0, "tag": "f"}]
TRICEPS = [("INSERT", "key1", 10), ("DELETE", "key1", 10), ("INSERT", "key1", 20), ("DELETE", "key1", 20),
           ("INSERT", "key1", -1), ("INSERT", "key2", -5), ("DELETE", "key2", -5), ("INSERT", "key2", 7)]


@dataclass
class Case:
    """A pipeline built over a Spark session, and for each sink whose order is promised per key only, the
    key of an output item (other sinks compare exactly in order)."""

    name: str
    build: Callable[[Any], Pipeline]
    per_key: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: Whether light jobs run it: not where it needs what they do not run yet (a hash join, event time,
    #: ``AggregateOperation.of``), nor where it relies on how unrelated streams are merged (there, one
    #: after the other; in a light job, interleaved as they arrive, as in Jet).
    light: bool = True


@dataclass(frozen=True)
class AsItems:
    """A Spark session for cases whose rows are read as items, in one substream: for an engine that reads
    no DataFrame sources (light jobs)."""

    spark: Any


def rows(spark: Any, n: int = 40) -> Any:
    """The source of :func:`numbers`: the DataFrame, or its rows as items where ``spark`` is :class:`AsItems`."""
    if isinstance(spark, AsItems):
        return Sources.items(numbers(spark.spark, n).collect())
    return Sources.dataframe(numbers(spark, n))


def numbers(spark: Any, n: int = 40) -> Any:
    """A DataFrame of ``n`` rows ``(id, k = id % 4, v = (id * 7) % 11 - 5)`` in ``PARTITIONS`` partitions."""
    return spark.range(0, n, 1, PARTITIONS).selectExpr("id", "id % 4 AS k", "(id * 7) % 11 - 5 AS v")


def _rebalanced_then_global_state(spark: Any) -> Pipeline:
    # items(1) ~~partitioned by x%3~~> map(2) ~~all-to-one~~> mapStateful(1) [restore] ==> out
    p = Pipeline.create(preserve_order=True)
    items = [(i * 5) % 13 for i in range(40)]
    (p.read_from(Sources.items(items)).rebalance(lambda x: x % 3).map(lambda x: x * 2)
     .map_stateful(lambda: 0, lambda total, x: (total + x, (x, total + x)))
     .write_to(Sinks.list("running")))
    return p


def _rebalanced_then_keyed_state(spark: Any) -> Pipeline:
    # df(3) ~~partitioned by v%2~~> map(2) [restore] ~~partitioned by k~~> mapStateful(2) [restore] ==> out
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).rebalance(lambda r: r.v % 2).map(lambda r: (r.k, r.id))
     .grouping_key(lambda t: t[0]).map_stateful(lambda: [], lambda seen, k, t: (seen + [t[1]], (k, t[1], seen[-2:])))
     .write_to(Sinks.list("nth")))
    return p


def _rebalanced_then_rolling(spark: Any) -> Pipeline:
    # df(3) ~~partitioned by v%2~~> map(2) ~~all-to-one~~> rollingAggregate(1) [restore] ==> sum
    #                                       ~~partitioned by k~~> rollingAggregate(2) [restore] ==> by_key
    p = Pipeline.create(preserve_order=True)
    mapped = p.read_from(rows(spark)).rebalance(lambda r: r.v % 2).map(lambda r: (r.k, r.v, r.id))
    mapped.rolling_aggregate(ops.summing(lambda t: t[1] * 100 + t[2])).write_to(Sinks.list("sum"))
    mapped.grouping_key(lambda t: t[0]).rolling_aggregate(ops.max_by(lambda t: (t[1], t[2]))).write_to(Sinks.list("by_key"))
    return p


def _diamond(source: Callable[[Pipeline, Any], Any]) -> Callable[[Any], Pipeline]:
    def build(spark: Any) -> Pipeline:
        # The dreaded diamond: A splits rows by sign into B and C, which merge again; the merge must see the
        # rows in A's order, and D, keyed, each key's rows in that order.
        #   A ~~> filter(< 0).map(negative=1) ~~\
        #                                         merge (ordered by sequence) ==> list ~~partitioned~~> D [restore]
        #   A ~~> filter(>= 0).map(negative=0) ~~/
        p = Pipeline.create(preserve_order=True)
        a = source(p, spark)
        b = a.filter(lambda r: r[2] < 0).map(lambda r: (*r, 1))
        c = a.filter(lambda r: r[2] >= 0).map(lambda r: (*r, 0))
        merged = b.merge(c)
        merged.write_to(Sinks.list("merged"))
        (merged.grouping_key(lambda r: r[1]).map_stateful(lambda: None, lambda last, k, r: (r, (k, r, last)))
         .write_to(Sinks.list("with_previous")))
        return p
    return build


def _triceps_items(p: Pipeline, spark: Any) -> Any:
    return p.read_from(Sources.items(TRICEPS))


def _triceps_dataframe(p: Pipeline, spark: Any) -> Any:
    if isinstance(spark, AsItems):
        return p.read_from(Sources.items(TRICEPS * 3))
    triceps = spark.sparkContext.parallelize(TRICEPS * 3, PARTITIONS).toDF(["op", "key", "value"])
    return p.read_from(Sources.dataframe(triceps)).map(lambda r: (r.op, r.key, r.value))


def _flat_map_around_a_diamond(spark: Any) -> Pipeline:
    # df(3) -> flat_map -> fork: (flat_map into two) and (map) -> merge ==> list
    #                                                              ~~all-to-one~~> mapStateful [restore] ==> list
    p = Pipeline.create(preserve_order=True)
    fanned = p.read_from(rows(spark, 24)).flat_map(lambda r: [r.id, -r.id] if r.k % 2 else [r.id])
    merged = fanned.flat_map(lambda x: [(x, "a"), (x, "b")]).merge(fanned.map(lambda x: (x, "m")))
    merged.write_to(Sinks.list("merged"))
    merged.map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("numbered"))
    return p


def _flat_map_then_rebalance(spark: Any) -> Pipeline:
    # df(3) -> flat_map(3) ~~partitioned by x%4~~> filter(2) ~~all-to-one~~> mapStateful(1) [restore] ==> list
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).flat_map(lambda r: [r.v] * (r.k + 1))
     .rebalance(lambda x: x % 4).filter(lambda x: x != 0)
     .map_stateful(lambda: (), lambda last3, x: ((last3 + (x,))[-3:], (last3 + (x,))[-3:]))
     .write_to(Sinks.list("windows")))
    return p


def _custom_rolling_then_restore(spark: Any) -> Pipeline:
    # df(3) -> map ~~partitioned by x%2~~> rollingAggregate(custom, 2) [restore] ~~partitioned~~> map(2) [restore]
    #   ~~all-to-one~~> mapStateful(1) [restore] ==> list   (ids carried through the user-defined operation,
    #   which runs in Python)
    running = AggregateOperation.of(lambda: 0, lambda a, x: a + 60 // (x % 7 + 1))
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).map(lambda r: r.id)
     .grouping_key(lambda x: x % 2).rolling_aggregate(running)
     .rebalance(lambda kv: kv[1] % 3).map(lambda kv: kv)
     .map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("numbered")))
    return p


def _distinct_then_restore(spark: Any) -> Pipeline:
    # df(3) -> map ~~partitioned by x%4~~> distinct(2) ~~partitioned by x%3~~> map(2) [restore]
    #   ~~all-to-one~~> mapStateful(1) [restore] ==> list   (each key's first item keeps its id)
    # df(3) ~~partitioned by k~~> distinct(2) of rows ~~partitioned by v%3~~> map(2) [restore]
    #   ~~all-to-one~~> mapStateful(1) [restore] ==> list
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).map(lambda r: r.id * 7 % 40)
     .grouping_key(lambda x: x % 4).distinct()
     .rebalance(lambda x: x % 3).map(lambda x: x)
     .map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("firsts")))
    (p.read_from(rows(spark)).grouping_key("k").distinct()
     .rebalance(lambda r: r.v % 3).map(lambda r: (r.id, r.k))
     .map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("first_rows")))
    return p


def _two_sources_merged(p: Pipeline) -> Any:
    # items(1) ─┐
    #           merge(1)   (two sources, each its own ordered stream: merged, the earlier source's items come
    # items(1) ─┘           first, as the reference orders unrelated streams by origin; keys 0 and 2 are in
    #                       both, so a keyed distinct after it must see the first source's items of a key first)
    first = p.read_from(Sources.items([0, 4, 1, 5, 8, 9, 13, 12, 2])).map(lambda x: ("first", x))
    second = p.read_from(Sources.items([2, 3, 6, 7, 10, 11, 0])).map(lambda x: ("second", x))
    return first.merge(second)


def _unrelated_sources_merged(spark: Any) -> Pipeline:
    # merge(1) ~~partitioned by x%4~~> distinct(2) ~~all-to-one~~> mapStateful(1) [restore] ==> list
    p = Pipeline.create(preserve_order=True)
    (_two_sources_merged(p).grouping_key(lambda t: t[1] % 4).distinct()
     .map_stateful(lambda: 0, lambda n, t: (n + 1, (n, t))).write_to(Sinks.list("merged_firsts")))
    return p


def _unrelated_sources_merged_without_a_restore(spark: Any) -> Pipeline:
    # merge(1) ~~partitioned by x%4~~> distinct(2) ==> list: no restore point; from the merge's one sender,
    # each key's items reach the distinct in the merge's order (only a cluster run can see a merge left in
    # two partitions, whose blocks a reducer may fetch in any order; locally it fetches them in order)
    p = Pipeline.create(preserve_order=True)
    _two_sources_merged(p).grouping_key(lambda t: t[1] % 4).distinct().write_to(Sinks.list("merged_firsts_unrestored"))
    return p


def _state_then_rebalance(spark: Any) -> Pipeline:
    # df(3) ~~partitioned by k~~> mapStateful(2) [restore] ~~partitioned by x%3~~> map(2) [restore]
    #   ~~all-to-one~~> rollingAggregate(1) [restore] ==> list     (ids carried through the keyed state)
    # items(1) ==> rollingAggregate(1) ~~partitioned by x%2~~> map(2) ~~all-to-one~~> mapStateful(1) [restore] ==> list
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).grouping_key("k")
     .map_stateful(lambda: 0, lambda n, k, r: (n + 1, None if r.v == 0 else r.v * 10 + n))
     .rebalance(lambda x: x % 3).map(lambda x: x + 1)
     .rolling_aggregate(ops.max_by(lambda x: x)).write_to(Sinks.list("max_so_far")))
    (p.read_from(Sources.items([(i * 7) % 10 for i in range(30)])).rolling_aggregate(ops.summing(lambda x: x))
     .rebalance(lambda x: x % 2).map(lambda x: x * 3)
     .map_stateful(lambda: None, lambda last, x: (x, (last, x))).write_to(Sinks.list("pairs")))
    return p


def _diamond_copies_split_then_gathered(spark: Any) -> Pipeline:
    # items(1) ==> fork: map(x) and map(x+100) ==> merge (ordered) ~~partitioned by x%3~~> map(2)
    #   ~~all-to-one~~> mapStateful(1) [restore] ==> list
    # A record's two copies may take different partitions behind the merge; gathered again, the first
    # branch's copy still comes first, as at the merge.
    p = Pipeline.create(preserve_order=True)
    a = p.read_from(Sources.items([(i * 5) % 17 for i in range(30)]))
    (a.map(lambda x: x).merge(a.map(lambda x: x + 100)).rebalance(lambda x: x % 3).map(lambda x: x * 2)
     .map_stateful(lambda: 0, lambda n, x: (n + 1, (n, x))).write_to(Sinks.list("numbered")))
    return p


def _nested_diamonds(spark: Any) -> Pipeline:
    # items(1) --> flat_map --> a ==> merge(a, items.map(x+100)) = inner ==> merge(inner, a.map(x+1000)) ==> list
    # A record's copies meet at the outer merge, one of them having passed the inner merge too: the outer
    # merge's branch order comes first (the inner merge's copy, then the other), whatever ties the inner
    # merge gave its copies.
    p = Pipeline.create(preserve_order=True)
    items = p.read_from(Sources.items([1, 2, 3, 4, 5]))
    a = items.flat_map(lambda x: [x] * (x % 3))
    inner = a.merge(items.map(lambda x: x + 100))
    inner.merge(a.map(lambda x: x + 1000)).write_to(Sinks.list("nested"))
    return p


def _flat_map_after_a_diamonds_merge(items: list[int]) -> Callable[[Any], Pipeline]:
    def build(spark: Any) -> Pipeline:
        # items(1) ~~partitioned by x%3~~> map(2) -> flat_map ==> merge(flat_map, map(x+100)) -> flat_map
        #   ==> s7 (for one record);  ~~all-to-one~~> mapStateful(1) [restore] ==> out4
        # The merge puts a record's copy that took the map branch (path []) before the flat_map branch's
        # outputs of it (paths [0], [1]); the flat_map after the merge extends those paths ([0], [1] for the
        # first copy; [0, 0], ... for the others). The restore point must give the merged items' outputs
        # together, in the merge's order: 99, 100, -1, 0, -1, 0 for items [0], not by path (99, -1, 0, 100,
        # -1, 0). The running sum passes on the even totals, so any other order changes what it emits.
        p = Pipeline.create(preserve_order=True)
        s1 = p.read_from(Sources.items(items)).rebalance(lambda x: x % 3).map(lambda x: x - 1)
        s3 = s1.flat_map(lambda x: [x] * (x % 3))
        s5 = s3.merge(s1.map(lambda x: x + 100))
        s7 = s5.flat_map(lambda x: [x, x + 1])
        if len(items) == 1:  # its keys' items meet nowhere before this sink: in order only for one record
            s7.write_to(Sinks.list("s7"))
        s7.map_stateful(lambda: 0, lambda t, x: (t + x, t + x if (t + x) % 2 == 0 else None)).write_to(Sinks.list("out4"))
        return p

    return build


def _timestamped_chain_into_a_window(spark: Any) -> Pipeline:
    # df(3) -> addTimestamps(2) -> fused(map, flat_map, filter)(2) ~~partitioned by k~~> mapStateful(2) [restore]
    #   -> windowAggregate by k (two stages) ~~partitioned by key~~> mapStateful(2) [restore] ==> previous
    #                                        ==> sums
    # Times go back and forth (id*7 % 40), so no window's items come in time order. Ids ride beside the
    # times through addTimestamps and the chain (flat_map's outputs with ids of their own) to the restore
    # point, which numbers each key's items in source order; the window sums number x value at the times
    # add_timestamps read, so a wrong order gives wrong sums; the last mapStateful pairs each window's sum
    # with its key's previous one, the window's results in the order of their ends.
    p = Pipeline.create(preserve_order=True)
    numbered = (p.read_from(rows(spark)).add_timestamps(lambda r: (r.id * 7) % 40)
                .map(lambda r: (r.k, r.v, r.id)).flat_map(lambda t: [t, (t[0], -t[1], t[2])] if t[2] % 3 == 0 else [t])
                .filter(lambda t: t[1] != 0)
                .grouping_key(lambda t: t[0]).map_stateful(lambda: 0, lambda n, k, t: (n + 1, (k, n + 1, t[1]))))
    sums = numbered.grouping_key(lambda o: o[0]).window(WindowDefinition.tumbling(10)).aggregate(
        ops.summing(lambda o: o[1] * o[2]))
    sums.write_to(Sinks.list("sums"))
    (sums.grouping_key(lambda w: w.key).map_stateful(lambda: None, lambda last, k, w: (w.result, (k, w.end, w.result, last)))
     .write_to(Sinks.list("previous")))
    return p


def _rebalanced_between_timestamps_and_a_window(spark: Any) -> Pipeline:
    # df(3) -> addTimestamps(2) ~~partitioned by v%2~~> map(2) [restore]
    #   ~~partitioned by k~~> windowAggregate(2) [restore] ==> lists
    # to_list makes the window order-sensitive: each key's items reach it in source order, at the times
    # add_timestamps read before the shuffle. Tumbling: a sliding window lists its frames one after the
    # other (Jet combines frames in time order), each frame's items in the order they came.
    p = Pipeline.create(preserve_order=True)
    (p.read_from(rows(spark)).add_timestamps(lambda r: (r.id * 7) % 40)
     .rebalance(lambda r: r.v % 2).map(lambda r: (r.k, r.id))
     .grouping_key(lambda t: t[0]).window(WindowDefinition.tumbling(10)).aggregate(ops.to_list())
     .write_to(Sinks.list("lists")))
    return p


def _hash_joins_then_restore(spark: Any) -> Pipeline:
    # df(3) -> map(2) -> innerHashJoin(2) ~~partitioned by tag~~> mapStateful(2) [restore] ==> by_tag
    #                 -> hashJoin(2) ~~partitioned by tag~~> rollingAggregate(2) [restore] ==> running
    #                 -> hashJoin2(2) ~~all-to-one~~> mapStateful(1) [restore] ==> numbered
    # items(1) ~~broadcast~~> each join
    # A left item with several matches gives an output per match (per combination for hashJoin2), in the
    # order of the matches, each with an id of its own after the item's.
    p = Pipeline.create(preserve_order=True)
    tags = p.read_from(Sources.items(TAGS))
    left = p.read_from(rows(spark)).map(lambda r: (r.k, r.v, r.id))
    (left.inner_hash_join(tags, JoinClause.on(lambda t: t[0], "k"), lambda t, e: (e["tag"], t[2], t[1]))
     .grouping_key(lambda o: o[0]).map_stateful(lambda: (), lambda last2, tag, o: ((last2 + (o[1],))[-2:], (tag, o[1], last2)))
     .write_to(Sinks.list("by_tag")))
    (left.hash_join(tags, JoinClause.on(lambda t: t[0], "k"), lambda t, e: ("-" if e is None else e["tag"], t[2]))
     .grouping_key(lambda o: o[0]).rolling_aggregate(ops.summing(lambda o: o[1] * o[1] - 7 * o[1]))
     .write_to(Sinks.list("running")))
    (left.hash_join2(tags, JoinClause.on(lambda t: t[0], "k"), tags, JoinClause.on(lambda t: (t[0] + 1) % 4, "k"),
                     lambda t, e1, e2: (t[2], e1 and e1["tag"], e2 and e2["tag"]))
     .map_stateful(lambda: 0, lambda n, o: (n + 1, (n, *o))).write_to(Sinks.list("numbered")))
    return p


def _hash_join_inside_a_diamond(spark: Any) -> Pipeline:
    # items(1) -> fork: innerHashJoin (0 to 3 outputs per item) and map ==> merge (ordered) ==> list
    # A record's copy through the map comes before its join outputs (a prefix of their paths), and those
    # keep the order of their matches: each has a fan-out path of its own.
    p = Pipeline.create(preserve_order=True)
    tags = p.read_from(Sources.items(TAGS))
    items = p.read_from(Sources.items([(i * 5) % 7 for i in range(14)]))
    joined = items.inner_hash_join(tags, JoinClause.on(lambda x: x % 4, "k"), lambda x, e: (x, e["tag"]))
    joined.merge(items.map(lambda x: (x, "itself"))).write_to(Sinks.list("merged"))
    return p


def _diamond_with_a_keyed_branch(spark: Any) -> Pipeline:
    # The diamond of the seed (shared/seeds/003), where one branch re-partitions: its rows go by key to
    # other processors than the fork's, so the branches are gathered into one merge, ordered by id.
    #   df(3) ~~partitioned by key~~> filter(< 0).grouping_key(key).map_stateful [restore] ~~all-to-one~~\
    #                                                                                      merge(1, ordered) ==> merged
    #   df(3) ~~> filter(>= 0).map(negative=0) ~~all-to-one~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~/  [restore on both inputs]
    #                                                                                      ==> map_stateful ==> numbered
    p = Pipeline.create(preserve_order=True)
    a = _triceps_dataframe(p, spark)
    b = (a.filter(lambda r: r[2] < 0).grouping_key(lambda r: r[1])
         .map_stateful(lambda: 0, lambda n, k, r: (n + 1, (*r, 1, n))))
    c = a.filter(lambda r: r[2] >= 0).map(lambda r: (*r, 0, None))
    merged = b.merge(c)
    merged.write_to(Sinks.list("merged"))
    merged.map_stateful(lambda: 0, lambda n, r: (n + 1, (n, r))).write_to(Sinks.list("numbered"))
    return p


def _diamond_with_a_rebalanced_branch(spark: Any) -> Pipeline:
    #   df(3) ~~partitioned by v%2~~> map(2) [restore] ~~all-to-one~~\
    #                                                              merge(1, ordered) ==> list
    #   df(3) ~~> flat_map(2) ~~all-to-one~~~~~~~~~~~~~~~~~~~~~~~~~~/   [restore on both inputs]
    p = Pipeline.create(preserve_order=True)
    a = p.read_from(rows(spark))
    (a.rebalance(lambda r: r.v % 2).map(lambda r: ("rebalanced", r.id))
     .merge(a.flat_map(lambda r: [("fanned", r.id)] * (r.k % 3))).write_to(Sinks.list("merged")))
    return p


def _five_branches(spark: Any) -> Pipeline:
    # Five branches of one fork merged (merges chained), one record's copies in branch order:
    #   df(3) ~~> map(+0), map(+100), map(+200), map(+300), filter(k odd) ==> merge ==> merge ==> merge ==> merge ==> aligned
    # (partition by partition), and the same with branch 2 keyed (grouping_key(k).map_stateful), which
    # gathers the merges it reaches into one processor ==> gathered
    p = Pipeline.create(preserve_order=True)
    a = p.read_from(rows(spark, 24)).map(lambda r: r.id)
    for name, keyed in (("aligned", False), ("gathered", True)):
        branches = [a.map(lambda x, d=d: x + d) for d in (0, 100)]
        branches.append(a.grouping_key(lambda x: x % 4).map_stateful(lambda: 0, lambda n, k, x: (n + 1, (k, n, x)))
                        if keyed else a.map(lambda x: x + 200))
        branches += [a.map(lambda x: x + 300), a.filter(lambda x: x % 2 == 1)]
        merged = branches[0]
        for branch in branches[1:]:
            merged = merged.merge(branch)
        merged.write_to(Sinks.list(name))
    return p


CASES = [
    Case("rebalance(key) then a global map_stateful", _rebalanced_then_global_state),
    Case("rebalance(key) then a keyed map_stateful, from a DataFrame", _rebalanced_then_keyed_state,
         per_key={"nth": lambda o: o[0]}),
    Case("rebalance(key) then global and keyed rolling aggregates", _rebalanced_then_rolling,
         per_key={"by_key": lambda o: o[0]}),
    Case("the diamond, from items", _diamond(_triceps_items), per_key={"with_previous": lambda o: o[0]}),
    Case("the diamond, from a DataFrame", _diamond(_triceps_dataframe), per_key={"with_previous": lambda o: o[0]}),
    Case("flat_map before and inside a diamond", _flat_map_around_a_diamond),
    Case("flat_map then rebalance(key)", _flat_map_then_rebalance),
    Case("stateful stages, then rebalance(key), then a global stage", _state_then_rebalance),
    Case("a rolling aggregate of AggregateOperation.of between restore points", _custom_rolling_then_restore, light=False),
    Case("keyed distincts, of items and of rows, between restore points", _distinct_then_restore),
    Case("two sources merged, then a keyed distinct and a global restore point", _unrelated_sources_merged, light=False),
    Case("two sources merged, then a keyed distinct and no restore point", _unrelated_sources_merged_without_a_restore,
         per_key={"merged_firsts_unrestored": lambda t: t[1] % 4}, light=False),
    Case("a diamond's copies split by a keyed rebalance, then gathered", _diamond_copies_split_then_gathered),
    Case("diamonds nested: copies that passed an inner merge meet again", _nested_diamonds),
    Case("a diamond's merge, then a flat_map, then a restore point", _flat_map_after_a_diamonds_merge([0])),
    Case("a diamond's merge, then a flat_map, then a restore point, of several records",
         _flat_map_after_a_diamonds_merge([0, 1, 2, 3, 4, 5, 7, 8])),
    Case("a timestamped chain into a keyed stateful stage, a keyed window and a stage after it",
         _timestamped_chain_into_a_window, per_key={"sums": lambda w: w.key, "previous": lambda o: o[0]}, light=False),
    Case("rebalance(key) between add_timestamps and an order-sensitive window",
         _rebalanced_between_timestamps_and_a_window, per_key={"lists": lambda w: w.key}, light=False),
    Case("hash joins, then keyed and global restore points", _hash_joins_then_restore,
         per_key={"by_tag": lambda o: o[0], "running": lambda o: o[0]}, light=False),
    Case("a hash join inside a diamond", _hash_join_inside_a_diamond, light=False),
    Case("the diamond with a keyed stage in a branch", _diamond_with_a_keyed_branch),
    Case("the diamond with rebalance(key) in a branch", _diamond_with_a_rebalanced_branch),
    Case("five branches merged, aligned and with a keyed branch", _five_branches),
]


def mismatches(case: Case, pipeline: Pipeline, actual: dict[str, list[Any]]) -> list[str]:
    """How the sinks' contents ``actual`` differ from the reference's (empty when they match): exactly in
    order, or per key in order where ``case.per_key`` says so."""
    problems = []
    for name, want in run_reference(pipeline).items():
        got = actual.get(name)
        key_of = case.per_key.get(name)
        if key_of is None:
            if as_sequence(want) != as_sequence(got or []):
                problems.append(f"{case.name}: {name}: expected {want!r}, got {got!r} (in order)")
        elif _by_key(want, key_of) != _by_key(got or [], key_of):
            problems.append(f"{case.name}: {name}: expected per key {want!r}, got {got!r}")
    return problems


def _by_key(items: list[Any], key_of: Callable[[Any], Any]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for item, described in zip(items, as_sequence(items)):
        groups.setdefault(repr(key_of(item)), []).append(described)
    return groups


def run_case(jet: Any, case: Case, light: bool = False) -> list[str]:
    """Runs ``case`` on ``jet``'s engine (as a light job, its rows read as items, where ``light``) and
    compares with the reference."""
    if light:
        pipeline = case.build(AsItems(jet.spark))
        jet.new_light_job(pipeline).join(timeout=120)
    else:
        pipeline = case.build(jet.spark)
        jet.new_job(pipeline).join(timeout=600)
    names = list(run_reference(pipeline))
    actual = {name: jet.get_list(name) for name in names}
    for name in names:
        jet.clear_list(name)
    return mismatches(case, pipeline, actual)
