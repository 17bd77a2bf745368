"""Every job failure says what failed, where and on which record, and a record a stage cannot process goes
to that stage's dead letters where it has them (docs/errors.md), on both engines.

Each failure kind is fuzzed: random items, some of which the stage cannot process, a random stage name,
with or without a dead-letter sink. What is expected comes from the inputs and the rules of
docs/errors.md: the good records' results, a dead letter per bad record with its error, or, without a
dead-letter sink, a failure naming the stage, one of the bad records and its error."""

from __future__ import annotations

import pickle
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetspark import AggregateOperations as ops
from jetspark import DeadLetter, JobFailedError, Pipeline, Sinks, Sources, WindowDefinition, WindowResult

FUZZ = settings(max_examples=examples(5), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
stage_names = st.text("abcdefghij-", min_size=3, max_size=8)
numbers = st.integers(-1000, 1000)
LOCK_PICKLING = "TypeError: cannot pickle '_thread.lock' object"


def run(jet: Any, p: Pipeline, light: bool) -> tuple[list[Any], list[DeadLetter]]:
    for name in ("out", "bad"):
        jet.clear_list(name)
    (jet.new_light_job(p) if light else jet.new_job(p)).join(timeout=300)
    out, bad = jet.get_list("out"), jet.get_list("bad")
    for name in ("out", "bad"):
        jet.clear_list(name)
    return out, bad


def check(jet: Any, build: Callable[[bool], Pipeline], light: bool, stage: str, bad: list[tuple[Any, str]],
          expected_out: list[Any]) -> None:
    """With a dead-letter sink: ``expected_out`` (as a multiset) and a dead letter per ``(record, error)`` of
    ``bad``; without: a failure naming ``stage`` and one of the bad records with its error (the job
    completes where there is none)."""
    out, letters = run(jet, build(True), light)
    assert Counter(map(repr, out)) == Counter(map(repr, expected_out))
    assert Counter(map(repr, letters)) == Counter(repr(DeadLetter(record, stage, error)) for record, error in bad)
    if not bad:
        return
    with pytest.raises(JobFailedError) as failed:
        run(jet, build(False), light)
    assert failed.value.stage == stage
    assert any(f"failed: stage '{stage}' failed on record {record!r}: {error}" in str(failed.value)
               for record, error in bad), str(failed.value)


@FUZZ
@given(items=st.lists(st.one_of(numbers, st.sampled_from(["x", None, (1,)])), max_size=8), stage=stage_names,
       light=st.booleans())
def test_a_value_summing_cannot_take_is_its_records_failure(jet, items, stage, light):
    def build(dead_letter: bool) -> Pipeline:
        p = Pipeline.create()
        total = p.read_from(Sources.items(items)).aggregate(ops.summing(lambda v: v)).set_name(stage)
        (total.on_error(Sinks.dead_letter("bad")) if dead_letter else total).write_to(Sinks.list("out"))
        return p

    numeric = [v for v in items if isinstance(v, int)]
    bad = [(v, f"TypeError: summing takes numbers, not {type(v).__name__} {v!r}") for v in items if not isinstance(v, int)]
    check(jet, build, light, stage, bad, [sum(numeric)])


@FUZZ
@given(items=st.lists(numbers, max_size=8), locked=st.sets(numbers), stage=stage_names, light=st.booleans(),
       chained=st.booleans())
def test_an_output_that_cannot_be_pickled_is_its_records_failure(jet, items, locked, stage, light, chained):
    # The lock is made by the last step of a fused chain, or by a lone map: either way the record is what
    # entered the map that made it.
    def build(dead_letter: bool) -> Pipeline:
        p = Pipeline.create()
        stream = p.read_from(Sources.items(items))
        if chained:
            stream = stream.filter(lambda x: True).set_name("keep")
        made = stream.map(lambda x: threading.Lock() if x in locked else x * 2).set_name(stage)
        (made.on_error(Sinks.dead_letter("bad")) if dead_letter else made).write_to(Sinks.list("out"))
        return p

    with pytest.raises(TypeError) as pickling:
        pickle.dumps(threading.Lock())
    assert f"TypeError: {pickling.value}" == LOCK_PICKLING
    check(jet, build, light, stage, [(x, LOCK_PICKLING) for x in items if x in locked],
          [x * 2 for x in items if x not in locked])


@FUZZ
@given(times=st.lists(st.one_of(st.integers(0, 99), st.integers(2**63, 2**70), st.integers(-(2**70), -(2**63) - 1)),
                      max_size=8), stage=stage_names)
def test_a_timestamp_beyond_64_bits_is_its_records_failure(jet, times, stage):
    # Spark engine only: light jobs do not run windows of Python pipelines.
    def build(dead_letter: bool) -> Pipeline:
        p = Pipeline.create()
        stamped = p.read_from(Sources.items(times)).add_timestamps(lambda t: t, 0).set_name(stage)
        stamped = stamped.on_error(Sinks.dead_letter("bad")) if dead_letter else stamped
        stamped.window(WindowDefinition.tumbling(100)).aggregate(ops.counting()).write_to(Sinks.list("out"))
        return p

    good = [t for t in times if -(2**63) <= t < 2**63]
    bad = [(t, f"OverflowError: a timestamp must be a 64-bit int (ms), not {t!r}") for t in times if t not in good]
    check(jet, build, False, stage, bad, [WindowResult(0, 100, len(good))] if good else [])


@FUZZ
@given(items=st.lists(numbers, max_size=6), failing=st.sets(numbers), stage=stage_names, light=st.booleans())
def test_a_user_function_that_raises_is_its_records_failure(jet, items, failing, stage, light):
    def build(dead_letter: bool) -> Pipeline:
        p = Pipeline.create()
        mapped = p.read_from(Sources.items(items)).map(lambda x: 1 // 0 if x in failing else x + 1).set_name(stage)
        (mapped.on_error(Sinks.dead_letter("bad")) if dead_letter else mapped).write_to(Sinks.list("out"))
        return p

    check(jet, build, light, stage, [(x, "ZeroDivisionError: integer division or modulo by zero") for x in items if x in failing],
          [x + 1 for x in items if x not in failing])


@FUZZ
@given(numbers_=st.lists(numbers, min_size=1, max_size=5), strings=st.lists(st.text("ab", min_size=1, max_size=3),
                                                                            min_size=1, max_size=5),
       seed=st.randoms(use_true_random=False), light=st.booleans())
def test_a_sort_of_values_that_cannot_be_ordered_names_its_stage_and_the_values(jet, numbers_, strings, seed, light):
    # No one record causes it: the failure names the sort and the two values it could not order.
    items: list[Any] = numbers_ + strings
    seed.shuffle(items)
    p = Pipeline.create()
    p.read_from(Sources.items(items)).sort().set_name("by-value").write_to(Sinks.list("out"))
    with pytest.raises(JobFailedError) as failed:
        run(jet, p, light)
    message = str(failed.value)
    assert failed.value.stage is not None and failed.value.stage.startswith("by-value"), message
    assert f"failed: stage '{failed.value.stage}' failed: " in message and "IllegalArgumentException: cannot order " in message
    assert any(f"{n} (java.lang." in message for n in numbers_) and any(f"{s} (java.lang.String)" in message for s in strings)


@pytest.mark.parametrize("light", [False, True])
def test_numbers_of_other_types_are_taken_as_the_built_in_numbers_they_equal(jet, light):
    # numpy's numbers are numbers to Python's sum; the JVM reads only built-in ones.
    import numpy as np

    items = [np.float64(1.5), np.int64(2), np.int32(7), np.float32(0.25), 4]
    p = Pipeline.create()
    p.read_from(Sources.items(items)).aggregate(ops.all_of(ops.summing(lambda x: x), ops.averaging(lambda x: x))) \
        .write_to(Sinks.list("out"))
    out, letters = run(jet, p, light)
    assert out == [(sum(items), sum(items) / len(items))] and letters == []
