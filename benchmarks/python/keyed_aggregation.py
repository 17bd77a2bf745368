"""Keyed aggregation on the typed path against the same DataFrame's own ``groupBy().agg()``.

Builds ``--rows`` rows over ``--keys`` keys as a cached DataFrame (local[2], bound to 127.0.0.1), then
times, ``--runs`` times each and alternating:

- Spark: ``df.groupBy("key").agg(count, sum(value), avg(value))`` written to the noop format;
- jetspark: ``Sources.dataframe(df) -> grouping_key("key") -> aggregate(all_of(counting, summing,
  averaging)) -> Sinks.noop()``, a whole job each time (planning, the py4j calls, metrics included).

Prints the median of each and their ratio (jetspark / Spark), after checking once that both give the
same results. A measurement, not a test: nothing here asserts a time.

    python benchmarks/python/keyed_aggregation.py --rows 1000000      # quick
    python benchmarks/python/keyed_aggregation.py                     # 10M rows by 10k keys
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import jetspark as js
    from jetspark import AggregateOperations as ops
    from pyspark.sql import functions as F

    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                              "spark.driver.memory": "2g"})
    spark = jet.spark
    df = (spark.range(args.rows, numPartitions=2)
          .select((F.col("id") % args.keys).alias("key"), (F.col("id") * 7919 % 100_000).cast("int").alias("value"))
          .cache())
    df.count()

    def spark_query():
        return df.groupBy("key").agg(F.count(F.lit(1)), F.sum("value"), F.avg("value"))

    def pipeline(sink):
        p = js.Pipeline.create()
        (p.read_from(js.Sources.dataframe(df)).grouping_key("key")
         .aggregate(ops.all_of(ops.counting(), ops.summing("value"), ops.averaging("value"))).write_to(sink))
        return p

    def run_spark() -> None:
        spark_query().write.format("noop").mode("overwrite").save()

    def run_jetspark() -> None:
        job = jet.new_job(pipeline(js.Sinks.noop()))
        job.join()
        assert job.metrics()["catalyst"], "the aggregation did not run in Catalyst"

    # Same results first (sums exact, means to the last bit).
    jet.new_job(pipeline(js.Sinks.list("bench"))).join()
    ours = sorted(jet.get_list("bench"))
    jet.clear_list("bench")
    theirs = sorted((r[0], (r[1], r[2], r[3])) for r in spark_query().collect())
    if ours != theirs:
        raise SystemExit(f"results differ: {ours[:3]} ... vs {theirs[:3]} ...")

    times: dict[str, list[float]] = {"spark": [], "jetspark": []}
    for run in range(args.runs + 1):  # the first round warms up and is not counted
        for name, fn in (("spark", run_spark), ("jetspark", run_jetspark)):
            start = time.perf_counter()
            fn()
            if run:
                times[name].append(time.perf_counter() - start)
    spark_median, ours_median = statistics.median(times["spark"]), statistics.median(times["jetspark"])
    print(f"{args.rows:,} rows by {args.keys:,} keys, local[2], {args.runs} runs each (median)")
    print(f"  Spark groupBy().agg() -> noop        {spark_median * 1000:8.0f} ms   runs: "
          + ", ".join(f"{t * 1000:.0f}" for t in times["spark"]))
    print(f"  jetspark aggregate -> Sinks.noop()   {ours_median * 1000:8.0f} ms   runs: "
          + ", ".join(f"{t * 1000:.0f}" for t in times["jetspark"]))
    print(f"  ratio jetspark / Spark               {ours_median / spark_median:8.2f}")
    jet.stop()


if __name__ == "__main__":
    main()
