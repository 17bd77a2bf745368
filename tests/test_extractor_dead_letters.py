"""A key, value or timestamp extractor that raises on a record is a failure of the stage that took it
(API.md "Errors"): the record goes to that stage's dead letters where it routes them there, with the item
as the extractor saw it and the error, and never enters the stage; without a route the job fails naming
the stage. Expectations are computed by hand, and checked against the reference (tests/reference.py)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import run_job
from reference import as_multiset, run_reference

from jetspark import (DeadLetter, JobFailedError, JoinClause, Pipeline, Sinks, Sources, WindowDefinition)
from jetspark import AggregateOperations as ops

DIVISION = "ZeroDivisionError: integer division or modulo by zero"
FLOAT_DIVISION = "ZeroDivisionError: division by zero"


def run_against_reference(jet, p: Pipeline, *lists: str) -> tuple[dict, list]:
    """Runs ``p``; returns the job's vertex metrics and what each list got, after checking every list and
    dead letter against the reference."""
    job, out = run_job(jet, p, *lists)
    expected = run_reference(p)
    for name, got in zip(lists, out):
        if f"dead_letter:{name}" in expected:
            assert as_multiset((d.record, d.stage, d.error.split(":")[0]) for d in got) == \
                as_multiset(expected[f"dead_letter:{name}"]), name
        else:
            assert as_multiset(got) == as_multiset(expected[name]), name
    return job.metrics()["vertices"], out


def fails_naming(jet, p: Pipeline, stage: str, *records: object) -> None:
    """The job fails naming ``stage`` and one of the ``records`` (whichever failed first)."""
    with pytest.raises(JobFailedError) as e:
        jet.new_job(p).join(timeout=300)
    assert e.value.stage == stage and any(f"failed on record {record!r}" in str(e.value) for record in records)
    with pytest.raises(JobFailedError) as reference:
        run_reference(p)
    assert reference.value.stage == stage


def grouping_by_parity_of_twelve_by(items: list[int], dead_letter: bool) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.items(items)).grouping_key(lambda x: 12 // x % 2).aggregate(ops.counting()).set_name("counts")
    (stage.on_error(Sinks.dead_letter("bad")) if dead_letter else stage).write_to(Sinks.list("counts"))
    return p


def test_a_failing_grouping_key_sends_the_record_to_the_aggregations_dead_letter(jet):
    # 12 // x % 2 for 1, 2, 5, 12, 7: 0, 0, 0, 1, 1; 0 fails, twice.
    metrics, (counts, bad) = run_against_reference(jet, grouping_by_parity_of_twelve_by([1, 2, 0, 5, 12, 0, 7], True),
                                                   "counts", "bad")
    assert sorted(counts) == [(0, 3), (1, 2)]
    assert bad == [DeadLetter(0, "counts", DIVISION)] * 2
    accumulate = metrics["counts-accumulate"]
    assert (accumulate["items_in"], accumulate["dead_letters"]) == (7, 2)
    assert metrics["counts-dead-letter"]["items_in"] == 2


def test_a_failing_grouping_key_without_a_dead_letter_fails_the_job_naming_the_aggregation(jet):
    fails_naming(jet, grouping_by_parity_of_twelve_by([1, 0, 2], False), "counts", 0)


def summing_inverses(dead_letter: bool) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.items([4, 0, 2, -4, 0])).aggregate(ops.summing(lambda x: 1 / x)).set_name("inverses")
    (stage.on_error(Sinks.dead_letter("bad")) if dead_letter else stage).write_to(Sinks.list("sum"))
    return p


def test_a_failing_summing_value_leaves_the_record_out_of_the_sum(jet):
    _, (total, bad) = run_against_reference(jet, summing_inverses(True), "sum", "bad")
    assert total == [0.5]  # 1/4 + 1/2 - 1/4
    assert bad == [DeadLetter(0, "inverses", FLOAT_DIVISION)] * 2


def test_a_failing_summing_value_without_a_dead_letter_fails_the_job(jet):
    fails_naming(jet, summing_inverses(False), "inverses", 0)


def joined_by_inverse(dead_letter: bool) -> Pipeline:
    p = Pipeline.create()
    left = p.read_from(Sources.items([1, 0, 2, 3]))
    right = p.read_from(Sources.items([{"id": 1, "name": "one"}, {"id": 2, "name": "two"}, {"name": "nameless"}]))
    stage = left.hash_join(right, JoinClause.on(lambda x: 6 // x, lambda r: 6 // r["id"]),
                           mapper=lambda x, r: (x, None if r is None else r["name"])).set_name("names")
    (stage.on_error(Sinks.dead_letter("bad")) if dead_letter else stage).write_to(Sinks.list("joined"))
    return p


def test_failing_join_keys_of_either_side_go_to_the_joins_dead_letter(jet):
    # Left keys 6, 3, 2 for 1, 2, 3; right keys 6, 3; 0 and the nameless record fail.
    _, (joined, bad) = run_against_reference(jet, joined_by_inverse(True), "joined", "bad")
    assert Counter(joined) == Counter([(1, "one"), (2, "two"), (3, None)])
    assert sorted((repr(d.record), d.stage, d.error) for d in bad) == \
        [("0", "names", DIVISION), ("{'name': 'nameless'}", "names", "KeyError: 'id'")]


def test_a_failing_join_key_without_a_dead_letter_fails_the_job(jet):
    fails_naming(jet, joined_by_inverse(False), "names", 0, {"name": "nameless"})


def stamped_by_inverse(dead_letter: bool) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.items([1, 2, 0, 4, 5])).add_timestamps(lambda x: 1000 // x, 0).set_name("stamp")
    stage = stage.on_error(Sinks.dead_letter("bad")) if dead_letter else stage
    stage.map(lambda x: x * 10).window(WindowDefinition.tumbling(300)).aggregate(ops.to_list()).write_to(Sinks.list("windows"))
    return p


def test_a_failing_timestamp_keeps_the_record_out_of_every_window(jet):
    # Times 1000, 500, 250, 200 for 1, 2, 4, 5: windows [0, 300) and [300, 600) and [900, 1200).
    _, (windows, bad) = run_against_reference(jet, stamped_by_inverse(True), "windows", "bad")
    assert sorted((w.start, w.end, sorted(w.result)) for w in windows) == \
        [(0, 300, [40, 50]), (300, 600, [20]), (900, 1200, [10])]
    assert bad == [DeadLetter(0, "stamp", DIVISION)]


def test_a_failing_timestamp_without_a_dead_letter_fails_the_job_naming_add_timestamps(jet):
    fails_naming(jet, stamped_by_inverse(False), "stamp", 0)


def test_failing_sort_distinct_and_rebalance_keys_go_to_their_stages_dead_letters(jet):
    p = Pipeline.create(preserve_order=True)  # the sink gets the sorted order
    items = p.read_from(Sources.items([3, 1, 0, 2, 0]))
    items.sort(lambda x: 1 / x).set_name("by-inverse").on_error(Sinks.dead_letter("bad-sort")).write_to(Sinks.list("sorted"))
    (items.grouping_key(lambda x: 2 // x).distinct().set_name("firsts").on_error(Sinks.dead_letter("bad-distinct"))
     .write_to(Sinks.list("distinct")))
    (items.rebalance(lambda x: 1 // x).map(lambda x: x + 1).set_name("plus-one").on_error(Sinks.dead_letter("bad-map"))
     .write_to(Sinks.list("mapped")))
    _, (ordered, bad_sort, firsts, bad_distinct, mapped, bad_map) = run_against_reference(
        jet, p, "sorted", "bad-sort", "distinct", "bad-distinct", "mapped", "bad-map")
    assert ordered == [3, 2, 1]
    assert Counter(firsts) == Counter([3, 1, 2]) and Counter(mapped) == Counter([4, 2, 3])  # keys 0, 2, 1
    assert bad_sort == [DeadLetter(0, "by-inverse", FLOAT_DIVISION)] * 2
    assert bad_distinct == [DeadLetter(0, "firsts", DIVISION)] * 2
    assert bad_map == [DeadLetter(0, "plus-one", DIVISION)] * 2


def test_a_python_key_of_a_dataframes_rows_sends_its_failures_to_the_dead_letter(jet):
    # Typed rows whose key is a Python callable: the row, as the callable saw it, is the dead letter.
    df = jet.spark.createDataFrame([(1, 10), (0, 20), (2, 30), (4, 40)], "a INT, b INT")
    p = Pipeline.create()
    (p.read_from(Sources.dataframe(df)).grouping_key(lambda r: 4 // r.a).aggregate(ops.summing("b")).set_name("sums")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("sums")))
    _, (sums, bad) = run_against_reference(jet, p, "sums", "bad")
    assert sorted(sums) == [(1, 40), (2, 30), (4, 10)]
    assert [(d.record.asDict(), d.stage, d.error) for d in bad] == [({"a": 0, "b": 20}, "sums", DIVISION)]


def rebalanced_by_twelve_by(dead_letter: bool) -> Pipeline:
    p = Pipeline.create()
    stage = p.read_from(Sources.items([3, 0, 4, 0, 6])).rebalance(lambda x: 12 // x).map(lambda x: x + 1).set_name("plus-one")
    (stage.on_error(Sinks.dead_letter("bad")) if dead_letter else stage).write_to(Sinks.list("plus"))
    return p


@pytest.mark.parametrize("build, results, stage, error", [
    (lambda: grouping_by_parity_of_twelve_by([1, 2, 0, 5, 12, 0, 7], True), "counts", "counts", DIVISION),
    (lambda: summing_inverses(True), "sum", "inverses", FLOAT_DIVISION),
    (lambda: rebalanced_by_twelve_by(True), "plus", "plus-one", DIVISION),
], ids=["grouping key", "summing value", "rebalance key"])
def test_a_light_job_sends_records_whose_extractors_fail_to_the_stages_dead_letter(jet, build, results, stage, error):
    # The pipelines above on the local engine: 0 fails twice, as a record of the stage that took the
    # extractor (for a rebalance key, the stage behind it), and the rest flows on without it.
    p = build()
    jet.new_light_job(p).join(timeout=120)
    got, bad = jet.get_list(results), jet.get_list("bad")
    jet.clear_list(results)
    jet.clear_list("bad")
    expected = run_reference(p)
    assert as_multiset(got) == as_multiset(expected[results])
    assert bad == [DeadLetter(0, stage, error)] * 2
