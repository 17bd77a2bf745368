"""The main job: sliding windows over skewed substreams (``python -m jetspark.demo``; from a checkout,
``bash dev/run.sh``).

Two substreams (think Kafka partitions) carry sensor readings, each up to 3 s out of order; substream 1's
readings are 30 s older in event time than substream 0's. Each micro-batch brings 10 s of readings of
each substream. We count readings per sensor in 10 s windows sliding by 2 s, allowing 5 s of lag, three
ways, the two engines over the same micro-batches:

* the truth: a brute-force count over all readings;
* Spark Structured Streaming: ``withWatermark`` + ``window(ts, 10 s, 2 s)`` over one JSON file per
  micro-batch: one watermark per query (the highest event time seen, minus the lag), so the lagging
  substream's readings are dropped as late, and the last windows are never emitted because a finite
  input never raises the watermark past them;
* jetspark: a streaming pipeline on Spark (``items_stream`` of the two substreams, ``with_timestamps``,
  a keyed sliding window, a list sink), each micro-batch one epoch: a watermark per substream, coalesced
  (the minimum over substreams), so nothing is dropped, and every window is emitted when the stream ends.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import jetspark
from jetspark import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

SIZE_MS, SLIDE_MS, LAG_MS = 10_000, 2_000, 5_000
BATCH_MS, SKEW_MS, PERIOD_MS = 10_000, 30_000, 250
SENSORS = ["s1", "s2", "s3"]


def skewed_substreams(duration_ms: int) -> list[list[dict]]:
    """Two substreams of readings, one every PERIOD_MS for ``duration_ms``, in delivery order. Each
    reading's timestamp is up to 3 s behind its place in the stream (disorder within the allowed lag);
    substream 0's timestamps run SKEW_MS ahead of substream 1's."""
    return [[{"substream": s, "sensor": SENSORS[(i + s) % len(SENSORS)],
              "ts": (1 - s) * SKEW_MS + i * PERIOD_MS + 3_000 - (i * 7 % 4) * 1_000}
             for i in range(duration_ms // PERIOD_MS)] for s in (0, 1)]


def micro_batches(substreams: list[list[dict]], readings_per_batch: int) -> list[list[dict]]:
    """Micro-batch ``b`` holds readings ``[b * k, (b + 1) * k)`` of every substream: the epochs of
    ``Sources.items_stream(*substreams, items_per_batch=k)``."""
    count = max(len(s) for s in substreams)
    return [[r for s in substreams for r in s[start:start + readings_per_batch]]
            for start in range(0, count, readings_per_batch)]


def true_window_counts(readings: list[dict]) -> Counter:
    """(sensor, window end) → readings in [end - SIZE_MS, end), by brute force over every window."""
    counts: Counter = Counter()
    for r in readings:
        first_end = (r["ts"] // SLIDE_MS + 1) * SLIDE_MS
        for end in range(first_end, first_end + SIZE_MS, SLIDE_MS):
            counts[(r["sensor"], end)] += 1
    return counts


def spark_structured_streaming(jet: jetspark.JetSession, batches: list[list[dict]]) -> tuple[Counter, int]:
    """Spark's own sliding-window count over the same micro-batches; returns the windows it emitted and
    the rows it dropped as late."""
    from pyspark.sql import functions as F

    spark = jet.spark
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "in")
        source.mkdir()
        for i, batch in enumerate(batches):
            (source / f"{i:04d}.json").write_text("".join(json.dumps(r) + "\n" for r in batch))
        stream = (spark.readStream.schema("substream INT, sensor STRING, ts LONG")
                  .option("maxFilesPerTrigger", 1).json(str(source))
                  .withColumn("event_time", F.timestamp_millis("ts")))
        windows = (stream.withWatermark("event_time", f"{LAG_MS // 1000} seconds")
                   .groupBy("sensor", F.window("event_time", f"{SIZE_MS // 1000} seconds", f"{SLIDE_MS // 1000} seconds"))
                   .count()
                   .select("sensor", F.unix_millis(F.col("window.end")).alias("end"), "count"))
        query = (windows.writeStream.outputMode("append").format("memory").queryName("spark_windows")
                 .option("checkpointLocation", str(Path(tmp, "checkpoint"))).trigger(availableNow=True).start())
        query.awaitTermination()
        dropped = sum(p["stateOperators"][0].get("numRowsDroppedByWatermark", 0)
                      for p in query.recentProgress if p["stateOperators"])
        emitted = Counter({(r.sensor, r.end): r["count"] for r in spark.table("spark_windows").collect()})
        spark.catalog.dropTempView("spark_windows")
    return emitted, dropped


def sensor_window_counts(substreams: list[list[dict]], readings_per_batch: int, sink: str) -> Pipeline:
    """The jetspark pipeline: readings per sensor in sliding windows, event time per substream."""
    p = Pipeline.create()
    (p.read_from(Sources.items_stream(*substreams, items_per_batch=readings_per_batch))
     .with_timestamps("ts", allowed_lag_ms=LAG_MS)
     .grouping_key("sensor")
     .window(WindowDefinition.sliding(SIZE_MS, SLIDE_MS))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.list(sink)))
    return p


def jetspark_streaming(jet: jetspark.JetSession, substreams: list[list[dict]],
                       readings_per_batch: int) -> tuple[Counter, int]:
    """The jetspark pipeline run as a stream job on Spark; returns the windows it emitted (a window
    emitted twice would add up to a wrong count) and the readings it dropped as late."""
    sink = "demo_sensor_windows"
    jet.clear_list(sink)
    job = jet.new_job(sensor_window_counts(substreams, readings_per_batch, sink))
    job.join()
    emitted: Counter = Counter()
    for window in jet.get_list(sink):
        emitted[(window.key, window.end)] += window.result
    jet.clear_list(sink)
    return emitted, job.metrics()["late_events_dropped"]


def compare(name: str, emitted: Counter, truth: Counter, dropped: int) -> str:
    correct = sum(1 for k, v in emitted.items() if truth.get(k) == v)
    missing = len(set(truth) - set(emitted))
    wrong = len(emitted) - correct
    return (f"  {name:<32} {len(emitted):>5} windows emitted, {correct:>5} correct, {wrong:>4} wrong counts, "
            f"{missing:>4} missing; {dropped:>4} readings dropped as late")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jetspark.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", default="local[2]", help="Spark master (default: local[2])")
    parser.add_argument("--seconds", type=int, default=60, help="event time covered by each substream")
    args = parser.parse_args(argv)

    readings_per_batch = BATCH_MS // PERIOD_MS
    substreams = skewed_substreams(args.seconds * 1000)
    batches = micro_batches(substreams, readings_per_batch)
    readings = [r for s in substreams for r in s]
    truth = true_window_counts(readings)

    with jetspark.session(master=args.master, conf={"spark.ui.enabled": "false",
                                                     "spark.sql.shuffle.partitions": "2"}) as jet:
        jet.spark.sparkContext.setLogLevel("ERROR")
        print(f"jetspark {jetspark.__version__} on Spark {jet.spark.version} ({args.master})")
        print(f"{len(readings)} readings of {len(SENSORS)} sensors in {len(batches)} micro-batches; substream 1 lags "
              f"{SKEW_MS // 1000} s; windows of {SIZE_MS // 1000} s sliding by {SLIDE_MS // 1000} s, "
              f"{LAG_MS // 1000} s of allowed lag")
        print(f"  {'truth (brute force)':<32} {len(truth):>5} windows")
        spark_windows, spark_dropped = spark_structured_streaming(jet, batches)
        print(compare("Spark Structured Streaming", spark_windows, truth, spark_dropped))
        jet_windows, jet_dropped = jetspark_streaming(jet, substreams, readings_per_batch)
        print(compare("jetspark (coalesced watermarks)", jet_windows, truth, jet_dropped))


if __name__ == "__main__":
    main()
