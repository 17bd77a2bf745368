"""The main job: sliding windows over skewed substreams (``python -m jetspark.demo``; from a checkout,
``bash dev/run.sh``).

Two substreams (think Kafka partitions) carry sensor readings; one lags 30 s behind the other in event
time. Each micro-batch brings 10 s of each substream. We count readings per sensor in 10 s windows
sliding by 2 s, allowing 5 s of disorder, three ways:

* the truth: a brute-force count over all readings;
* Spark Structured Streaming: ``withWatermark`` + ``window(ts, 10 s, 2 s)``: one watermark per query (the
  max event time seen, minus the delay), so the lagging substream's readings are dropped as late, and
  the last windows are never emitted because a finite input never raises the watermark to the end;
* jetspark: a watermark per substream, coalesced (the minimum over substreams), frames with deduct:
  nothing is dropped, every window is emitted when the stream ends.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import jetspark

SIZE_MS, SLIDE_MS, LAG_MS = 10_000, 2_000, 5_000
BATCH_MS, SKEW_MS = 10_000, 30_000
SENSORS = ["s1", "s2", "s3"]


def skewed_batches(duration_ms: int, period_ms: int) -> list[list[dict]]:
    """Micro-batches of readings: substream 0 is on time; substream 1 delivers readings SKEW_MS older,
    and catches up after substream 0 ends (a finite stream delivers everything)."""
    readings = [[{"substream": s, "sensor": SENSORS[(t // period_ms + s) % len(SENSORS)], "ts": t}
                 for t in range(0, duration_ms, period_ms)] for s in (0, 1)]
    batches = []
    for start in range(0, duration_ms + SKEW_MS, BATCH_MS):
        batch = [r for r in readings[0] if start <= r["ts"] < start + BATCH_MS]
        batch += [r for r in readings[1] if start - SKEW_MS <= r["ts"] < start - SKEW_MS + BATCH_MS]
        batches.append(batch)
    return batches


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


def jetspark_core(jet: jetspark.JetSession, batches: list[list[dict]]) -> tuple[Counter, int]:
    """jetspark's processors over the same readings, in micro-batch order, inside a Spark task."""
    readings = [r for b in batches for r in b]
    jvm = jet.spark.sparkContext._jvm
    gateway = jet.spark.sparkContext._gateway

    def java_array(kind, values):
        array = gateway.new_array(kind, len(values))
        for i, v in enumerate(values):
            array[i] = v
        return array

    rows = jvm.io.jetspark.python.SkewedWindowsDemo.run(
        jet.spark._jsparkSession, java_array(jvm.int, [r["substream"] for r in readings]),
        java_array(jvm.String, [r["sensor"] for r in readings]), java_array(jvm.long, [r["ts"] for r in readings]),
        SIZE_MS, SLIDE_MS, LAG_MS)
    emitted, dropped = Counter(), 0
    for row in rows:
        if row[0] == "late":
            dropped = row[1]
        else:
            emitted[(row[0], row[2])] = row[3]
    return emitted, dropped


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
    parser.add_argument("--seconds", type=int, default=120, help="event time covered by each substream")
    args = parser.parse_args(argv)

    batches = skewed_batches(args.seconds * 1000, period_ms=250)
    readings = [r for b in batches for r in b]
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
        jet_windows, jet_dropped = jetspark_core(jet, batches)
        print(compare("jetspark (coalesced watermarks)", jet_windows, truth, jet_dropped))


if __name__ == "__main__":
    main()
