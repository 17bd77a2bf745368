"""Bad input (issue 25, docs/errors.md): 10 000 fuzzed records through a stream and a batch pipeline, with
and without dead-letter sinks.

The records hold, besides good ones: missing (None), wrong-typed, NaN, 64-bit-overflowing and far-future
or far-past timestamps; keys of mixed types that Python holds equal or not (None, 1, 1.0, True, "1");
values that are strings, NaN or integers beyond 64 bits; and records a step turns into an object that
cannot be pickled. With dead-letter sinks on every stage, every record is accounted for: counted in
exactly one window, or dead-lettered by the stage that could not take it (a window's late events are its
dead letters too, and counted as late). Without them, the job fails, naming the stage and the record.
"""

from __future__ import annotations

import math
import random
import threading
from typing import Any

import pytest
from conftest import run_job

from jetspark import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition
from jetspark.errors import JobFailedError

RECORDS = 10_000
STAGES = ("time", "map", "window")


def fuzzed(seed: int, n: int = RECORDS) -> list[dict[str, Any]]:
    """``n`` records, most of them good, each field sometimes bad in one of the ways the module lists."""
    rng = random.Random(seed)

    def timestamp() -> Any:
        return rng.choice([None, "12", math.nan, 2**70, 10**15, -(10**15), 1.5]) if rng.random() < 0.05 \
            else rng.randrange(0, 60_000)

    def key() -> Any:
        return rng.choice([None, 1, 1.0, True, "1", 2])

    def value() -> Any:
        return rng.choice(["x", math.nan, 2**100, -(2**80)]) if rng.random() < 0.05 else rng.randrange(100)

    return [{"i": i, "t": timestamp(), "k": key(), "v": value(), "unpicklable": rng.random() < 0.01} for i in range(n)]


def unpicklable_for_some(e: dict[str, Any]) -> Any:
    return threading.Lock() if e["unpicklable"] else e


def windowed(stage: Any, routed: bool) -> None:
    """``stage`` (items with their time) through a map that makes some items unpicklable and a tumbling
    window counting and summing ``v`` per key, to the list ``out``; with ``routed``, each to a dead letter."""
    mapped = stage.map(unpicklable_for_some).set_name("map")
    if routed:
        mapped = mapped.on_error(Sinks.dead_letter("map"))
    window = (mapped.grouping_key(lambda e: e["k"]).window(WindowDefinition.tumbling(1_000))
              .aggregate(AggregateOperations.all_of(AggregateOperations.counting(), AggregateOperations.summing("v")))
              .set_name("window"))
    if routed:
        window = window.on_error(Sinks.dead_letter("window"))
    window.write_to(Sinks.list("out"))


def stream_pipeline(records: list[dict[str, Any]], routed: bool) -> Pipeline:
    p = Pipeline.create()
    substreams = [records[s::4] for s in range(4)]
    source = (p.read_from(Sources.items_stream(*substreams, items_per_batch=500))
              .with_timestamps(lambda e: e["t"], allowed_lag_ms=2_000).set_name("time"))
    windowed(source.on_error(Sinks.dead_letter("time")) if routed else source, routed)
    return p


def batch_pipeline(records: list[dict[str, Any]], routed: bool) -> Pipeline:
    p = Pipeline.create()
    stamped = p.read_from(Sources.items(records)).add_timestamps(lambda e: e["t"], allowed_lag_ms=2_000).set_name("time")
    windowed(stamped.on_error(Sinks.dead_letter("time")) if routed else stamped, routed)
    return p


@pytest.mark.parametrize("build", [stream_pipeline, batch_pipeline], ids=["stream", "batch"])
def test_every_fuzzed_record_is_in_one_window_or_a_dead_letter_of_its_stage(jet: Any, build: Any) -> None:
    records = fuzzed(seed=25)
    job, (windows, *letters) = run_job(jet, build(records, routed=True), "out", *STAGES, timeout=900)
    counted = sum(w.result[0] for w in windows)
    lettered = {stage: [d.record["i"] for d in got] for stage, got in zip(STAGES, letters)}
    for stage, got in zip(STAGES, letters):
        assert all(d.stage == stage for d in got), stage
    # Each record once: in a window's count, or among the dead letters of exactly one stage.
    every = [i for ids in lettered.values() for i in ids]
    assert len(every) == len(set(every))
    assert counted + len(every) == RECORDS
    # Who went where, from the records themselves: a time that is not a 64-bit int fails at the source; an
    # item made unpicklable fails the map; a value that is not a number fails the window.
    bad_time = {r["i"] for r in records if not (isinstance(r["t"], int) and -(2**63) <= r["t"] < 2**63)}
    assert set(lettered["time"]) == bad_time
    assert set(lettered["map"]) == {r["i"] for r in records if r["unpicklable"] and r["i"] not in bad_time}
    not_numbers = {r["i"] for r in records if isinstance(r["v"], str)}
    late = [i for i in lettered["window"] if i not in not_numbers]
    assert not_numbers - bad_time - set(lettered["map"]) <= set(lettered["window"])
    assert job.metrics().get("late_events_dropped", 0) == len(late)


@pytest.mark.parametrize("build", [stream_pipeline, batch_pipeline], ids=["stream", "batch"])
def test_without_dead_letters_a_bad_record_fails_the_job_naming_its_stage_and_the_record(jet: Any, build: Any) -> None:
    job = jet.new_job(build(fuzzed(seed=26), routed=False))
    with pytest.raises(JobFailedError, match="failed on record") as failure:
        job.join(timeout=600)
    assert failure.value.stage in STAGES
    jet.clear_list("out")
