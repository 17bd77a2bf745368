"""Batch sliding windows against Spark's ``window()`` group-by, the floor, and its keyed, reading and per-frame group-bys.

Builds ``--events`` events over ``--span-s`` seconds and ``--keys`` keys as a cached DataFrame (local[2],
bound to 127.0.0.1; both sides shuffle into two partitions): columns ``key`` (int), ``ts`` (long, ms) and
``value`` (int). For each slide of ``--slides`` (ms; the window is ``--window-ms``) and each operation
(count, max), it times, alternating after a warm-up round, ``--runs`` runs of Spark's query and
``--fast-runs`` of jetspark's job, of the floor, of the keyed operation, of the reading and of the frames'
operation (before the first slide, ``--warmup-rounds`` rounds of the floor, the keyed operations, the
readings, and the first slide's jobs and frames' operations warm the JIT):

- Spark: ``groupBy(window(timestamp_millis(ts), size, slide), key).agg(count(1) | max(value))`` written to
  the noop format (Spark expands every event into size/slide rows before grouping);
- jetspark: ``Sources.dataframe(df) -> add_timestamps("ts") -> grouping_key("key") ->
  window(sliding(size, slide)) -> aggregate(counting() | max_by("value")) -> Sinks.noop()``, a whole job
  each time (frames with deduct for count, two stacks for max);
- the floor: ``df.groupBy("key").count()`` written to noop, the least any keyed pass over the data costs,
  timed in turn with jetspark's job for every row, so both are as warm;
- the keyed operation: the same operation per key over all time, with no windows, as Spark computes it:
  for count the floor itself, for max ``groupBy(key).agg(max_by(struct(key, ts, value), value))``, which
  reads the three columns jetspark's max reads (the floor reads one) and keeps the row of the greatest
  value, as ``max_by`` does. It shows what keeping the item costs Spark without windows;
- the reading: ``groupBy(key).agg(max(c), ...)`` of every other column jetspark's job reads (``ts`` for
  count; ``ts`` and ``value`` for max), the cheapest keyed pass that reads what the job must. Over the
  floor, it is what reading those columns alone costs, before any frame or window;
- the frames' operation: the same operation per key and frame (``groupBy(key, floor(ts / slide))``), as
  Spark computes it: a tumbling window of one slide, the frames a sliding window is made of (jetspark's
  first stage makes them before its windows slide). It shows what a group-by with as many groups as there
  are frames costs Spark, before any sliding.

Slides below ``--spark-min-slide-ms`` are timed for jetspark alone (Spark's expansion makes them take
minutes). Prints medians and the ratios Spark / jetspark, jetspark / floor, reading / floor, jetspark /
reading, jetspark / keyed operation and jetspark / frames' operation.
Before timing a slide, with ``--check`` (default when there are at most 200k events), both sides' window
counts are compared window by window. A measurement, not a test: nothing here asserts a time.

    python benchmarks/python/sliding_windows.py --events 200000          # quick
    python benchmarks/python/sliding_windows.py                          # 2M events over 400 s, 100 keys
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def dense_events(spark: SparkSession, events: int, span_ms: int, keys: int) -> DataFrame:
    """The dense workload: columns ``key`` (int), ``ts`` (long, ms) and ``value`` (int) of ``events`` events
    over ``span_ms`` and ``keys`` keys, in two partitions. Event i has key i mod ``keys``, a time spread over
    the span (not sorted: i times a large odd step, mod the span) and a value. The streaming benchmark
    (``streaming_windows.py``) reads the same events in time order."""
    from pyspark.sql import functions as F

    return spark.range(events, numPartitions=2).select(
        (F.col("id") % keys).cast("int").alias("key"),
        (F.col("id") * 7_919 % span_ms).cast("long").alias("ts"),
        (F.col("id") * 104_729 % 1_000_003).cast("int").alias("value"))


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The dense workload's options, ``--events``, ``--span-s``, ``--keys`` and ``--window-ms``, with the
    defaults both window benchmarks share."""
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--span-s", type=int, default=400)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--window-ms", type=int, default=10_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(parser)
    parser.add_argument("--slides", type=str, default="2000,1000,100,20")
    parser.add_argument("--spark-min-slide-ms", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3, help="timed runs of Spark's window() queries")
    parser.add_argument("--fast-runs", type=int, default=9,
                        help="timed runs of the jetspark jobs, the floor, the keyed operations, the readings and "
                             "the frames' operations "
                             "(each a second or less)")
    parser.add_argument("--warmup-rounds", type=int, default=5,
                        help="rounds of the floor, the keyed operations, the readings, and the first slide's jobs and frames' "
                             "operations run before any timing")
    parser.add_argument("--check", action=argparse.BooleanOptionalAction, default=None)
    args = parser.parse_args()
    check = args.events <= 200_000 if args.check is None else args.check

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import jetspark as js
    from jetspark import AggregateOperations as ops
    from pyspark.sql import functions as F

    # Both sides shuffle into one partition per core: Spark's queries by spark.sql.shuffle.partitions,
    # jetspark's jobs by spark.default.parallelism (the planner's parallelism). A session on local[2] has
    # both at 2; they are set here so that the figures do not follow the session's defaults, which until
    # 2026-11-24 were 4 on every master (the windows' second stage in two waves of tasks, 5-10 ms longer at
    # 100 ms slides).
    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                              "spark.default.parallelism": "2", "spark.driver.memory": "4g"})
    spark = jet.spark
    df = dense_events(spark, args.events, args.span_s * 1000, args.keys).cache()
    df.count()

    # Per operation: Spark's aggregate in window(), jetspark's, Spark's aggregate of the keyed and the
    # frames' operations, and the columns besides the key that jetspark's job reads.
    operations = {"count": (F.count(F.lit(1)), ops.counting, F.count(F.lit(1)), ["ts"]),
                  "max": (F.max("value"), lambda: ops.max_by("value"),
                          F.max_by(F.struct("key", "ts", "value"), "value"), ["ts", "value"])}

    def spark_query(slide: int, op: str):
        w = F.window(F.timestamp_millis("ts"), f"{args.window_ms} milliseconds", f"{slide} milliseconds")
        return df.groupBy(w.alias("w"), "key").agg(operations[op][0].alias("result"))

    def pipeline(slide: int, op: str, sink) -> js.Pipeline:
        p = js.Pipeline.create()
        (p.read_from(js.Sources.dataframe(df)).add_timestamps("ts").grouping_key("key")
         .window(js.WindowDefinition.sliding(args.window_ms, slide)).aggregate(operations[op][1]()).write_to(sink))
        return p

    def same_counts(slide: int) -> None:
        jet.new_job(pipeline(slide, "count", js.Sinks.list("bench"))).join()
        ours = sorted((r.start, r.end, r.key, r.result) for r in jet.get_list("bench"))
        jet.clear_list("bench")
        theirs = sorted((round(r.w.start.timestamp() * 1000), round(r.w.end.timestamp() * 1000), r.key, r.result)
                        for r in spark_query(slide, "count").collect())
        if ours != theirs:
            raise SystemExit(f"slide {slide} ms: window counts differ: {ours[:3]} ... vs {theirs[:3]} ...")

    def timed(fns: dict[str, tuple[Callable[[], None], int]]) -> dict[str, float]:
        """The median time of each function over its number of runs, alternating while several still run."""
        times: dict[str, list[float]] = {name: [] for name in fns}
        for run in range(max(runs for _, runs in fns.values()) + 1):  # the first round warms up, uncounted
            for name, (fn, runs) in fns.items():
                if run > runs:
                    continue
                start = time.perf_counter()
                fn()
                if run:
                    times[name].append(time.perf_counter() - start)
        return {name: statistics.median(ts) for name, ts in times.items()}

    def noop(query) -> Callable[[], None]:
        return lambda: query.write.format("noop").mode("overwrite").save()

    def jetspark_job(slide: int, op: str) -> Callable[[], None]:
        return lambda: jet.new_job(pipeline(slide, op, js.Sinks.noop())).join()

    floor = noop(df.groupBy("key").count())
    # (For count the keyed operation is the floor.)
    keyed = {op: noop(df.groupBy("key").agg(operations[op][2].alias("result"))) for op in operations if op != "count"}
    reading = {op: noop(df.groupBy("key").agg(*(F.max(c) for c in operations[op][3]))) for op in operations}

    def frames_op(slide: int, op: str) -> Callable[[], None]:
        frame = F.floor(F.col("ts") / slide).alias("frame")
        return noop(df.groupBy("key", frame).agg(operations[op][2].alias("result")))
    # The JIT warms up over the first few jobs: without these rounds the first slide's floor and jobs
    # came out up to 1.6x slower than the same queries later in the run.
    slides = [int(s) for s in args.slides.split(",")]
    for _ in range(args.warmup_rounds):
        for fn in [floor, *keyed.values(), *reading.values()] + [f(slides[0], op) for op in operations
                                                                 for f in (jetspark_job, frames_op)]:
            fn()
    print(f"{args.events:,} events over {args.span_s} s, {args.keys} keys, window {args.window_ms} ms, local[2], "
          f"medians of {args.runs} runs (Spark's window()) and {args.fast_runs} (jetspark, the floor, keyed op, "
          f"reading, frames op)")
    print(f"  {'slide':>8} {'op':>5} {'Spark window()':>15} {'jetspark':>10} {'floor':>8} {'keyed op':>9} "
          f"{'reading':>8} {'frames op':>10} {'Spark/jetspark':>15} {'jetspark/floor':>15} {'reading/floor':>14} "
          f"{'jetspark/reading':>17} {'jetspark/keyed':>15} {'jetspark/frames':>16}")
    for slide in slides:
        with_spark = slide >= args.spark_min_slide_ms
        if check and with_spark:
            same_counts(slide)
        for op in operations:
            # The floor runs alongside, warm as jetspark is: timed once up front, right after caching, it
            # came out 1.6x slower than it is, and the ratios to it better than they are.
            fns = {"jetspark": (jetspark_job(slide, op), args.fast_runs), "floor": (floor, args.fast_runs),
                   "reading": (reading[op], args.fast_runs), "frames": (frames_op(slide, op), args.fast_runs)}
            if op in keyed:
                fns["keyed"] = (keyed[op], args.fast_runs)
            if with_spark:
                fns["spark"] = (noop(spark_query(slide, op)), args.runs)
            t = timed(fns)
            t.setdefault("keyed", t["floor"])
            spark_text = f"{t['spark'] * 1000:12.0f} ms" if with_spark else f"{'-':>15}"
            ratio_text = f"{t['spark'] / t['jetspark']:15.1f}" if with_spark else f"{'-':>15}"
            print(f"  {slide:>5} ms {op:>5} {spark_text} {t['jetspark'] * 1000:7.0f} ms {t['floor'] * 1000:5.0f} ms "
                  f"{t['keyed'] * 1000:6.0f} ms {t['reading'] * 1000:5.0f} ms {t['frames'] * 1000:7.0f} ms {ratio_text} "
                  f"{t['jetspark'] / t['floor']:15.2f} {t['reading'] / t['floor']:14.2f} "
                  f"{t['jetspark'] / t['reading']:17.2f} {t['jetspark'] / t['keyed']:15.2f} "
                  f"{t['jetspark'] / t['frames']:16.2f}", flush=True)
    jet.stop()


if __name__ == "__main__":
    main()
