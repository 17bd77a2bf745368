"""What AT_LEAST_ONCE and NONE save against EXACTLY_ONCE on the epoch engine (issue 25), on local[2] bound
to 127.0.0.1.

One finite stream job, run under each guarantee in turn (``--rounds`` times each, the guarantees
interleaved so that a drift of the machine falls on all three alike): ``Sources.items_stream`` of
``--substreams`` substreams, ``--items`` items each, ``--per-batch`` items per epoch, through a keyed
sliding window (counting) and a keyed ``map_stateful``, into list sinks, each run with a checkpoint
directory of its own. It prints, per guarantee, the median time from start to ``join()`` and the median
time per epoch, and their ratio to EXACTLY_ONCE's. docs/guarantees.md says why the three should cost the
same on Spark.
A measurement, not a test: nothing here asserts.

    python benchmarks/python/guarantees.py
    python benchmarks/python/guarantees.py --rounds 5 --items 2000 --per-batch 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

GUARANTEES = ("EXACTLY_ONCE", "AT_LEAST_ONCE", "NONE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--substreams", type=int, default=2)
    parser.add_argument("--items", type=int, default=1_000, help="items per substream")
    parser.add_argument("--per-batch", type=int, default=100, help="items of each substream per epoch")
    args = parser.parse_args()

    import jetspark as js
    from jetspark import AggregateOperations, JobConfig, Pipeline, ProcessingGuarantee, Sinks, Sources, WindowDefinition

    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    substreams = [[{"k": i % 50, "t": i * 10 + s} for i in range(args.items)] for s in range(args.substreams)]
    epochs = -(-args.items // args.per_batch)

    def run(guarantee: str) -> float:
        p = Pipeline.create()
        keyed = p.read_from(Sources.items_stream(*substreams, items_per_batch=args.per_batch)) \
            .with_timestamps("t", allowed_lag_ms=100).grouping_key("k")
        keyed.window(WindowDefinition.sliding(1_000, 100)).aggregate(AggregateOperations.counting()) \
            .write_to(Sinks.list("windows"))
        keyed.map_stateful(lambda: 0, lambda n, key, e: (n + 1, n + 1)).write_to(Sinks.list("counts"))
        with tempfile.TemporaryDirectory(prefix="jetspark-guarantees-") as checkpoint:
            started = time.perf_counter()
            job = jet.new_job(p, JobConfig(processing_guarantee=ProcessingGuarantee[guarantee], checkpoint_dir=checkpoint,
                                           trigger_interval_ms=0))
            job.join(timeout=1_800)
            seconds = time.perf_counter() - started
        jet.clear_list("windows")
        jet.clear_list("counts")
        return seconds

    run("NONE")  # warm-up: the first job pays for the Python workers and the JIT
    times: dict[str, list[float]] = {g: [] for g in GUARANTEES}
    for _ in range(args.rounds):
        for guarantee in GUARANTEES:
            times[guarantee].append(run(guarantee))
    base = statistics.median(times["EXACTLY_ONCE"])
    print(f"{args.substreams} substreams x {args.items} items, {epochs} epochs, {args.rounds} rounds")
    print(f"{'guarantee':<14} {'median_s':>9} {'per_epoch_ms':>13} {'vs_exactly_once':>16}")
    for guarantee in GUARANTEES:
        median = statistics.median(times[guarantee])
        print(f"{guarantee:<14} {median:>9.2f} {median / epochs * 1000:>13.0f} {median / base:>16.2f}")
    jet.stop()


if __name__ == "__main__":
    main()
