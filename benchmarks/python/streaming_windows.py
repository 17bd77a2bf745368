"""Streaming sliding windows: jetspark's epoch engine against Spark Structured Streaming's ``window()``.

The dense workload of ``sliding_windows.py`` (its ``dense_events``: ``--events`` events over ``--span-s``
seconds, ``--keys`` keys, a ``--window-ms`` window), sorted by time, arrives as a stream in micro-batches
of B events for each B of ``--batch-sizes``, the same cut on both sides (local[2], bound to 127.0.0.1):

- jetspark: ``Sources.items_stream(*substreams, items_per_batch=B / substreams)`` (the events dealt in
  turn to ``--substreams`` substreams, so that an epoch holds the same B events as Spark's micro-batch)
  ``-> with_timestamps("ts", allowed_lag_ms) -> grouping_key("key") -> window(sliding(size, slide)) ->
  aggregate(counting() | max_by("value")) -> Sinks.noop()``, ``JobConfig(trigger_interval_ms=0)``;
- Spark: the same micro-batches as one parquet file each, read with ``maxFilesPerTrigger=1``,
  ``withWatermark(event_time, allowed lag)``, ``groupBy(window(event_time, size, slide), key)
  .agg(count(1) | max(value))``, append mode, the noop format, ``trigger(availableNow=True)``.

For each slide, operation and B it prints the events per second of both and jetspark / Spark, over the
span from the start of the first micro-batch (the ``timestamp`` of its query progress) to the end of the
run (the sustained rate: starting the query is left out, stopping it is in), and over the whole run's
wall time (starting included: for jetspark, pickling the items and handing them to the JVM; for Spark,
planning the query). Before those, each (slide, operation) measures the fixed cost of an epoch: a stream
of ``--tiny-epochs`` micro-batches of ``--tiny-events`` events each (spread over the span), the median
``triggerExecution`` of a micro-batch on each side. jetspark's job stops its query as soon as its last
epoch is done, before Spark reports that epoch's progress, so the median there is over all epochs but
the last. Each side's late drops are printed too (both should be 0: the input is in time order). Window
latency is not measured. A measurement, not a test: nothing here asserts a time.

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
    parser.add_argument("--substreams", type=int, default=2)
    parser.add_argument("--allowed-lag-ms", type=int, default=1_000)
    parser.add_argument("--tiny-epochs", type=int, default=20)
    parser.add_argument("--tiny-events", type=int, default=10)
    args = parser.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    for size in batch_sizes + [args.tiny_events]:
        if size % args.substreams:
            raise SystemExit(f"a micro-batch of {size} events does not divide among {args.substreams} substreams")

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

    def batch_of(progress: Any) -> tuple[float, int]:
        """A query progress's (start in wall-clock s, triggerExecution ms)."""
        started = datetime.fromisoformat(progress["timestamp"]).timestamp()
        return started, progress["durationMs"].get("triggerExecution", 0)

    listener = BatchProgress()
    spark.streams.addListener(listener)

    ordered = dense_events(spark, args.events, args.span_s * 1000, args.keys).orderBy("ts", "key", "value").toArrow()
    rows = ordered.to_pylist()
    every = max(1, len(rows) // (args.tiny_epochs * args.tiny_events))
    tiny_rows = rows[::every][:args.tiny_epochs * args.tiny_events]
    tiny_table = pa.Table.from_pylist(tiny_rows, schema=ordered.schema)

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

    jet_operations = {"count": ops.counting, "max": lambda: ops.max_by("value")}
    spark_operations = {"count": lambda: F.count(F.lit(1)), "max": lambda: F.max("value")}

    def run_jetspark(items: list[dict[str, int]], size: int, slide: int,
                     op: str) -> tuple[float, float, list[int], int]:
        """Wall time, time from the first epoch's start, epoch durations (the last one's is not reported) and
        late drops of one jetspark stream job."""
        substreams = [items[s::args.substreams] for s in range(args.substreams)]
        p = js.Pipeline.create()
        (p.read_from(js.Sources.items_stream(*substreams, items_per_batch=size // args.substreams))
         .with_timestamps("ts", allowed_lag_ms=args.allowed_lag_ms).grouping_key("key")
         .window(js.WindowDefinition.sliding(args.window_ms, slide)).aggregate(jet_operations[op]())
         .write_to(js.Sinks.noop()))
        name = f"jetspark-{uuid.uuid4().hex[:8]}"
        start = time.perf_counter()
        job = jet.new_job(p, js.JobConfig(name=name, trigger_interval_ms=0))
        job.join()
        end = time.time()
        wall = time.perf_counter() - start
        metrics = job.metrics()
        deadline = time.monotonic() + 10  # the listener hears of the epochs asynchronously
        while len(listener.batches[name]) < metrics["epochs"] - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        batches = sorted(listener.batches.pop(name))
        if not batches:
            raise SystemExit(f"no epoch's progress was reported for {len(items)} items in micro-batches of {size}: "
                             "a stream of one epoch has none (its query stops first); use smaller micro-batches")
        return wall, end - batches[0][0], [ms for _, ms in batches], metrics["late_events_dropped"]

    def run_spark(folder: str, slide: int, op: str) -> tuple[float, float, list[int], int]:
        """Wall time, time from the first micro-batch's start, micro-batch durations and late drops of one
        Structured Streaming query."""
        window = F.window("event_time", f"{args.window_ms} milliseconds", f"{slide} milliseconds")
        start = time.perf_counter()
        query = (spark.readStream.schema("key INT, ts LONG, value INT").option("maxFilesPerTrigger", 1).parquet(folder)
                 .withColumn("event_time", F.timestamp_millis("ts"))
                 .withWatermark("event_time", f"{args.allowed_lag_ms} milliseconds")
                 .groupBy(window, "key").agg(spark_operations[op]().alias("result"))
                 .writeStream.outputMode("append").format("noop")
                 .option("checkpointLocation", str(work / f"checkpoint-{uuid.uuid4().hex[:8]}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        end = time.time()
        wall = time.perf_counter() - start
        progress = query.recentProgress
        dropped = sum(p["stateOperators"][0].get("numRowsDroppedByWatermark", 0) for p in progress if p["stateOperators"])
        batches = sorted(batch_of(p) for p in progress)
        return wall, end - batches[0][0], [ms for _, ms in batches], dropped

    slides = [int(s) for s in args.slides.split(",")]
    operations = args.ops.split(",")
    folders = {size: parquet_batches(ordered, size) for size in batch_sizes}
    tiny_folder = parquet_batches(tiny_table, args.tiny_events)
    run_jetspark(tiny_rows, args.tiny_events, slides[0], operations[0])  # warms both up, uncounted
    run_spark(tiny_folder, slides[0], operations[0])

    print(f"{args.events:,} events over {args.span_s} s in time order, {args.keys} keys, window {args.window_ms} ms, "
          f"allowed lag {args.allowed_lag_ms} ms, jetspark over {args.substreams} substreams, local[2], one run each")
    print(f"fixed cost: {args.tiny_epochs} micro-batches of {args.tiny_events} events; throughput: events/s over the "
          f"time from the first micro-batch's start (sustained) and over the whole run (wall); window latency not measured")
    header = (f"  {'slide':>8} {'op':>5} {'batch':>9} {'jetspark ev/s':>14} {'Spark ev/s':>11} {'jetspark/Spark':>15} "
              f"{'wall: jetspark':>15} {'Spark':>9} {'jetspark/Spark':>15} {'batches j/S':>12} {'late j/S':>9}")
    print(header, flush=True)
    for slide in slides:
        for op in operations:
            jet_wall, _, jet_ms, jet_late = run_jetspark(tiny_rows, args.tiny_events, slide, op)
            spark_wall, _, spark_ms, spark_late = run_spark(tiny_folder, slide, op)
            jet_epoch, spark_batch = statistics.median(jet_ms), statistics.median(spark_ms)
            print(f"  {slide:>5} ms {op:>5} {'fixed':>9} {jet_epoch:11.0f} ms {spark_batch:8.0f} ms "
                  f"{jet_epoch / spark_batch:15.2f} {jet_wall:13.1f} s {spark_wall:7.1f} s "
                  f"{jet_wall / spark_wall:15.2f} {len(jet_ms):>5} /{len(spark_ms):>5} {jet_late:>4}/{spark_late:<4}",
                  flush=True)
            for size in batch_sizes:
                jet_wall, jet_span, jet_ms, jet_late = run_jetspark(rows, size, slide, op)
                spark_wall, spark_span, spark_ms, spark_late = run_spark(folders[size], slide, op)
                jet_rate, spark_rate = len(rows) / jet_span, len(rows) / spark_span
                print(f"  {slide:>5} ms {op:>5} {size:>9,} {jet_rate:14,.0f} {spark_rate:11,.0f} "
                      f"{jet_rate / spark_rate:15.2f} {len(rows) / jet_wall:15,.0f} {len(rows) / spark_wall:9,.0f} "
                      f"{spark_wall / jet_wall:15.2f} {len(jet_ms):>5} /{len(spark_ms):>5} {jet_late:>4}/{spark_late:<4}",
                      flush=True)
    print("  (fixed rows: the median micro-batch in ms and each side's whole run in s, with jetspark / Spark of those;"
          " batches j/S: micro-batches reported, jetspark / Spark)")
    spark.streams.removeListener(listener)
    jet.stop()
    shutil.rmtree(work, ignore_errors=True)  # the micro-batches' parquet files and Spark's checkpoints


if __name__ == "__main__":
    main()
