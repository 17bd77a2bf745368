"""The life of light jobs (docs/light-jobs.md, "The light job checker"): many started at once do not
interfere, every execution leaves the JVM's registry when its job ends, and a job calls this process
back once per batch of items. The checker's removal of lost inits and orphaned executions needs faults
that only the JVM's tests can cause (``LightJobCheckerTest``)."""

from __future__ import annotations

import random
import threading
from typing import Any

from test_light_jobs import wait_until_no_light_execution

from jetspark import AggregateOperations as ops
from jetspark import JobConfig, Pipeline, Sinks, Sources, _protocol
from jetspark._items import unpack_frames
from jetspark.light_job import _Callback

JOBS = 100


def _job(i: int, all_started: threading.Event) -> tuple[Pipeline, str, list[tuple[int, int]]]:
    """Job ``i`` of many: its own items, map, filter, key and list sink; with its expected list, computed
    item by item over plain Python. Its map waits until every job has started: they all run at once."""
    rng = random.Random(i)
    items = [rng.randrange(-500, 500) for _ in range(rng.randrange(20, 120))]
    factor, residue, keys = i + 1, i % 3, i % 7 + 2
    sink = f"life-{i}"

    def scaled(x: int) -> int:
        all_started.wait(120)
        return x * factor

    p = Pipeline.create()
    (p.read_from(Sources.items(items)).map(scaled).filter(lambda x: x % 3 != residue)
     .grouping_key(lambda x: x % keys).aggregate(ops.summing(lambda x: x)).write_to(Sinks.list(sink)))
    sums: dict[int, int] = {}
    for x in items:
        y = x * factor
        if y % 3 != residue:
            sums[y % keys] = sums.get(y % keys, 0) + y
    return p, sink, sorted(sums.items())


def test_a_hundred_light_jobs_at_once_do_not_interfere(jet):
    all_started = threading.Event()
    jobs = [_job(i, all_started) for i in range(JOBS)]
    for _, sink, _ in jobs:
        jet.clear_list(sink)
    try:
        # Each handed to the engine's threads at once: run on this thread first, it would wait for ever.
        started = [jet.new_light_job(p, JobConfig(light_job_start_us=0)) for p, _, _ in jobs]
        assert _protocol.light_executions(jet._bridge) == JOBS  # all running at once
    finally:
        all_started.set()
    for job in started:
        job.join(timeout=300)
    for (_, sink, expected), job in zip(jobs, started):
        got = jet.get_list(sink)
        jet.clear_list(sink)
        assert sorted(got) == expected, f"{job}: {sink}"
    # Sanity of the inputs: the jobs' expected results differ from each other.
    assert len({tuple(expected) for _, _, expected in jobs}) == JOBS
    wait_until_no_light_execution(jet)


def test_python_is_called_once_per_batch_of_items_never_per_item(jet, monkeypatch):
    batch = _protocol.light_batch_size(jet._bridge)
    n = 20 * batch
    sizes: list[int] = []
    original = _Callback.call

    def counted(self: _Callback, work: str, data: Any) -> bytes:
        sizes.append(len(unpack_frames(bytes(data))))
        return original(self, work, data)

    monkeypatch.setattr(_Callback, "call", counted)
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(n)))).map(lambda x: x + 1).write_to(Sinks.list("life-batched"))
    jet.clear_list("life-batched")
    jet.new_light_job(p).join(timeout=120)
    assert sorted(jet.get_list("life-batched")) == list(range(1, n + 1))
    jet.clear_list("life-batched")
    # Every item went through a counted call, none carried more than a batch; a call per item would make
    # n calls. Batches are whole but for the first and last of each processor instance (and whatever a
    # Python faster than its source finds in its queue), so a quarter batch per call on average is a
    # floor no sound run goes below.
    assert sum(sizes) == n and max(sizes) <= batch
    assert len(sizes) <= n // (batch // 4), f"{len(sizes)} calls for {n} items, batches of {batch}: {sizes[:20]}..."
    wait_until_no_light_execution(jet)

