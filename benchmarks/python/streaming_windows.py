"""Streaming sliding windows: jetspark's epoch engine against Spark Structured Streaming's ``window()``.

The dense workload of ``sliding_windows.py`` (its ``dense_events``: ``--events`` events over ``--span-s``
seconds, ``--keys`` keys, a ``--window-ms`` window), sorted by time, is written as one parquet file per
micro-batch of B events for each B of ``--batch-sizes``. Both sides read the same files, one per trigger
(``maxFilesPerTrigger=1``), on local[2] bound to 127.0.0.1:

- jetspark: ``Sources.dataframe(stream).with_timestamps("ts", allowed_lag_ms) -> grouping_key("key") ->
  window(sliding(size, slide)) -> aggregate(counting() | max_by("value")) -> Sinks.noop()``,
  ``JobConfig(trigger_interval_ms=0)``: the window reads the rows in the JVM (the script prints which
  windows did, from ``job.metrics()["typed_windows"]``). A files stream does not end: the job is cancelled
  once every file's epoch has reported its progress;
- Spark: ``withWatermark(event_time, allowed lag)``, ``groupBy(window(event_time, size, slide), key)
  .agg(count(1) | max(value))``, append mode, the noop format, ``trigger(availableNow=True)``.

Per slide, operation and B it prints each side's sustained events/s (the events over the span from the
first micro-batch's start to the last one's end, from the queries' progress) and jetspark / Spark, the
whole run's wall time of each, and the window latency: the median over micro-batches that wrote windows
of the time from the start of the micro-batch whose events moved the watermark past a window's end to
the end of the micro-batch that wrote it. jetspark writes a window in the epoch whose events closed it
(the epoch's own duration); Spark's append mode writes it one micro-batch later (from the start of the
one before to its end). Before those, each (slide, operation) measures the fixed cost of a micro-batch: a
stream of ``--tiny-epochs`` files of ``--tiny-events`` events each (spread over the span), the median
``triggerExecution`` on each side. Last, what jetspark's epochs cost beyond that fixed cost (the span
less the epochs times the fixed cost) against jetspark's batch engine over all the same events in one job
(``add_timestamps`` instead of ``with_timestamps``; the median of three). Late drops are printed too (both
0: the input is in time order). A measurement, not a test: nothing here asserts a time.

    python benchmarks/python/streaming_windows.py --events 200000 --batch-sizes 50000,100000 --slides 1000
    python benchmarks/python/streaming_windows.py          # 2M events, B = 50k, 500k, 1M, slides 2 s, 1 s, 100 ms
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from sliding_windows import add_workload_arguments, dense_events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(parser)
    parser.add_argument("--slides", type=str, default="2000,1000,100")
    parser.add_argument("--ops", type=str, default="count,max")
    parser.add_argument("--batch-sizes", type=str, default="50000,500000,1000000")
    parser.add_argument("--allowed-lag-ms", type=int, default=1_000)
    parser.add_argument("--tiny-epochs", type=int, default=20)
    parser.add_argument("--tiny-events", type=int, default=10)
    args = parser.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import jetspark as js
    import pyarrow as pa
    import pyarrow.parquet as pq
    from jetspark import AggregateOperations as ops
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener

    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                              "spark.default.parallelism": "2", "spark.driver.memory": "4g",
                                              "spark.sql.streaming.numRecentProgressUpdates": "10000"})
    spark = jet.spark
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="jetspark-streaming-bench-"))

    class BatchProgress(StreamingQueryListener):
        """Each query's micro-batches, by query name (jetspark's job names its query): when each started
        (wall-clock s) and how long it took (ms)."""

        def __init__(self) -> None:
            self.batches: dict[str, list[tuple[float, int]]] = defaultdict(list)

        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            self.batches[event.progress.name].append(batch_of(event.progress))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    def batch_of(progress: Any) -> tuple[float, int, int]:
        """A query progress's (start in wall-clock s, triggerExecution ms, rows its sink wrote)."""
        started = datetime.fromisoformat(progress["timestamp"]).timestamp()
        return started, progress["durationMs"].get("triggerExecution", 0), progress["sink"]["numOutputRows"]

    listener = BatchProgress()
    spark.streams.addListener(listener)

    ordered = dense_events(spark, args.events, args.span_s * 1000, args.keys).orderBy("ts", "key", "value").toArrow()
    every = max(1, ordered.num_rows // (args.tiny_epochs * args.tiny_events))
    tiny_table = ordered.take(list(range(0, ordered.num_rows, every))[:args.tiny_epochs * args.tiny_events])

    def parquet_batches(table: pa.Table, size: int) -> str:
        """One parquet file per micro-batch of ``size`` rows, their modification times in batch order (the
        file source takes the oldest file first)."""
        folder = work / f"in-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        count = -(-table.num_rows // size)
        first = time.time() - count - 10
        for i in range(count):
            path = folder / f"{i:06d}.parquet"
            pq.write_table(table.slice(i * size, size), path)
            os.utime(path, (first + i, first + i))
        return str(folder)

    SCHEMA = "key INT, ts LONG, value INT"
    jet_operations = {"count": ops.counting, "max": lambda: ops.max_by("value")}
    spark_operations = {"count": lambda: F.count(F.lit(1)), "max": lambda: F.max("value")}

    def run_jetspark(folder: str, slide: int, op: str) -> tuple[float, list[tuple[float, int]], int, list[str]]:
        """Wall time until the last epoch's progress was heard, the epochs (start s, ms), late drops and the
        windows that read the rows in the JVM of one jetspark stream job over the micro-batches in
        ``folder``; the job never ends by itself (a files stream), so it is cancelled then."""
        files = len(os.listdir(folder))
        df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)
        p = js.Pipeline.create()
        (p.read_from(js.Sources.dataframe(df)).with_timestamps("ts", allowed_lag_ms=args.allowed_lag_ms)
         .grouping_key("key").window(js.WindowDefinition.sliding(args.window_ms, slide)).aggregate(jet_operations[op]())
         .write_to(js.Sinks.noop()))
        name = f"jetspark-{uuid.uuid4().hex[:8]}"
        start = time.perf_counter()
        job = jet.new_job(p, js.JobConfig(name=name, trigger_interval_ms=0))
        while len(listener.batches[name]) < files:
            if job.status is js.JobStatus.FAILED:
                job.join()
            time.sleep(0.02)
        wall = time.perf_counter() - start
        metrics = job.metrics()
        job.cancel()
        try:
            job.join(timeout=120)
        except js.JobCancelledError:
            pass
        return wall, sorted(listener.batches.pop(name)), metrics["late_events_dropped"], metrics["typed_windows"]

    def run_spark(folder: str, slide: int, op: str) -> tuple[float, list[tuple[float, int, int]], int]:
        """Wall time, micro-batches (start s, ms, rows written) and late drops of one Structured Streaming query."""
        window = F.window("event_time", f"{args.window_ms} milliseconds", f"{slide} milliseconds")
        start = time.perf_counter()
        query = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)
                 .withColumn("event_time", F.timestamp_millis("ts"))
                 .withWatermark("event_time", f"{args.allowed_lag_ms} milliseconds")
                 .groupBy(window, "key").agg(spark_operations[op]().alias("result"))
                 .writeStream.outputMode("append").format("noop")
                 .option("checkpointLocation", str(work / f"checkpoint-{uuid.uuid4().hex[:8]}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        wall = time.perf_counter() - start
        progress = query.recentProgress
        dropped = sum(p["stateOperators"][0].get("numRowsDroppedByWatermark", 0) for p in progress if p["stateOperators"])
        return wall, sorted(batch_of(p) for p in progress), dropped

    def run_batch(folder: str, slide: int, op: str) -> float:
        """Seconds of jetspark's batch engine over every file of ``folder`` at once (the median of three)."""
        p = js.Pipeline.create()
        (p.read_from(js.Sources.dataframe(spark.read.schema(SCHEMA).parquet(folder))).add_timestamps("ts")
         .grouping_key("key").window(js.WindowDefinition.sliding(args.window_ms, slide)).aggregate(jet_operations[op]())
         .write_to(js.Sinks.noop()))
        times = []
        for _ in range(3):
            start = time.perf_counter()
            jet.new_job(p).join()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def span(batches: list[tuple[float, int, int]]) -> float:
        """From the first micro-batch's start to the last one's end, in s."""
        return max(started + ms / 1000 for started, ms, _ in batches) - batches[0][0]

    def jetspark_latency(batches: list[tuple[float, int, int]]) -> float:
        """ms: each epoch after the first writes the windows its own events closed, by its end."""
        return statistics.median(ms for _, ms, _ in batches[1:])

    def spark_latency(batches: list[tuple[float, int, int]]) -> float:
        """ms: a micro-batch that wrote windows wrote those the micro-batch before it closed."""
        return statistics.median((started + ms / 1000 - batches[i - 1][0]) * 1000
                                 for i, (started, ms, written) in enumerate(batches) if i > 0 and written > 0)

    slides = [int(s) for s in args.slides.split(",")]
    operations = args.ops.split(",")
    folders = {size: parquet_batches(ordered, size) for size in batch_sizes}
    tiny_folder = parquet_batches(tiny_table, args.tiny_events)
    _, _, _, typed = run_jetspark(tiny_folder, slides[0], operations[0])  # warms both up, uncounted
    run_spark(tiny_folder, slides[0], operations[0])

    print(f"{args.events:,} events over {args.span_s} s in time order, {args.keys} keys, window {args.window_ms} ms, "
          f"allowed lag {args.allowed_lag_ms} ms, local[2], one run each; jetspark's windows reading rows in the JVM: {typed}")
    print(f"fixed cost: {args.tiny_epochs} micro-batches of {args.tiny_events} events, the median; throughput: events/s "
          f"from the first micro-batch's start to the last one's end; latency: see the script's docstring")
    header = (f"  {'slide':>8} {'op':>5} {'batch':>9} {'jetspark ev/s':>14} {'Spark ev/s':>11} {'jetspark/Spark':>15} "
              f"{'wall: jetspark':>15} {'Spark':>9} {'latency: jetspark':>18} {'Spark':>9} {'batches j/S':>12} {'late j/S':>9} "
              f"{'beyond fixed / batch engine':>28}")
    print(header, flush=True)
    for slide in slides:
        for op in operations:
            jet_wall, jet_batches, jet_late, _ = run_jetspark(tiny_folder, slide, op)
            spark_wall, spark_batches, spark_late = run_spark(tiny_folder, slide, op)
            jet_epoch = statistics.median(ms for _, ms, _ in jet_batches)
            spark_batch = statistics.median(ms for _, ms, _ in spark_batches)
            print(f"  {slide:>5} ms {op:>5} {'fixed':>9} {jet_epoch:11.0f} ms {spark_batch:8.0f} ms "
                  f"{jet_epoch / spark_batch:15.2f} {jet_wall:13.1f} s {spark_wall:7.1f} s {'':>18} {'':>9} "
                  f"{len(jet_batches):>5} /{len(spark_batches):>5} {jet_late:>4}/{spark_late:<4}", flush=True)
            batch_s = run_batch(folders[batch_sizes[0]], slide, op)
            for size in batch_sizes:
                jet_wall, jet_batches, jet_late, _ = run_jetspark(folders[size], slide, op)
                spark_wall, spark_batches, spark_late = run_spark(folders[size], slide, op)
                jet_rate, spark_rate = args.events / span(jet_batches), args.events / span(spark_batches)
                # What the epochs cost beyond their fixed cost, against the batch engine over the same events.
                beyond = span(jet_batches) - len(jet_batches) * jet_epoch / 1000
                print(f"  {slide:>5} ms {op:>5} {size:>9,} {jet_rate:14,.0f} {spark_rate:11,.0f} "
                      f"{jet_rate / spark_rate:15.2f} {jet_wall:13.1f} s {spark_wall:7.1f} s "
                      f"{jetspark_latency(jet_batches):15.0f} ms {spark_latency(spark_batches):6.0f} ms "
                      f"{len(jet_batches):>5} /{len(spark_batches):>5} {jet_late:>4}/{spark_late:<4} "
                      f"{beyond:8.2f} s /{batch_s:5.2f} s = {beyond / batch_s:4.2f}", flush=True)
    print("  (fixed rows: the median micro-batch in ms, with jetspark / Spark, and each side's whole run in s;"
          " batches j/S: micro-batches reported, jetspark / Spark; beyond fixed: jetspark's span less its epochs'"
          " fixed cost, against the batch engine's job over the same events)")
    spark.streams.removeListener(listener)
    jet.stop()
    shutil.rmtree(work, ignore_errors=True)  # the micro-batches' parquet files and Spark's checkpoints


if __name__ == "__main__":
    main()
