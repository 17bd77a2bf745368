"""Light-job latency (issue 27): the time from submit to ``join()`` returning for a small pipeline, measured
every way in one run, on local[2] bound to 127.0.0.1.

The pipeline: ``Sources.items(range(100))``, a filter, a keyed sum, a list sink. Timed, each after a
warm-up, p50 and p99 (nearest rank) of:

- Python light job: ``jet.new_light_job(p).join()``, the pipeline written in Python once (lambdas for the
  filter, the key and the summed value), ``--runs`` times. The list is cleared between runs, outside the
  timed part.
- JVM light job: the same pipeline built with the Scala API (JVM functions), timed inside the JVM with
  ``System.nanoTime`` around ``LocalEngine.default.newLightJob(...).join()``, ``--runs`` times, percentiles
  computed in the JVM (``io.jetspark.benchmarks.LightJobLatency``, called through py4j): once submitting
  the pipeline (it is planned at every submit), once its planned DAG.
- Spark job: ``jet.new_job(p).join()`` of the Python pipeline on the Spark engine, ``--spark-runs`` times
  (fewer: each takes a Spark job's time).
- Bare py4j call: a static JVM method (``System.nanoTime``) through a py4j member looked up once, so one
  round trip each, ``--runs`` times.

It prints them with the ratios the issue's targets are about: Python light p50 / bare py4j p50 (target at
most 3), Spark job p50 / Python light p50 (target at least 50), the JVM light p50 in µs (target: tens of
µs). Every kind of job's result is checked once against the expected sums. A measurement, not a test:
nothing here asserts a time.

The JVM side lives in the benchmarks' jar (``benchmarks/jvm``), which this script builds with
``dev/sbt benchmarks/package`` when it is missing or older than its sources or jetspark's jar, and puts on
the driver's classpath.

    python benchmarks/python/light_jobs.py
    python benchmarks/python/light_jobs.py --runs 200 --spark-runs 10    # quick
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

TOP = Path(__file__).resolve().parents[2]
BENCHMARKS_JVM = TOP / "benchmarks" / "jvm"
ITEMS = 100
LIST = "light-job-latency-py"


def benchmark_jar() -> str:
    """The benchmarks' jar, built first when it is missing or stale."""
    import jetspark

    def newest_jar() -> Path | None:
        jars = sorted(glob.glob(str(BENCHMARKS_JVM / "target" / "scala-2.13" / "benchmarks_2.13-*.jar")),
                      key=os.path.getmtime)
        return Path(jars[-1]) if jars else None

    jar = newest_jar()
    inputs = [Path(p) for p in glob.glob(str(BENCHMARKS_JVM / "src" / "**" / "*.scala"), recursive=True)]
    inputs.append(Path(jetspark.jar_path()))
    if jar is None or any(p.stat().st_mtime > jar.stat().st_mtime for p in inputs):
        print("building the benchmarks' jar: dev/sbt benchmarks/package", file=sys.stderr)
        subprocess.run([str(TOP / "dev" / "sbt"), "benchmarks/package"], cwd=TOP, check=True,
                       stdout=sys.stderr)
        jar = newest_jar()
        if jar is None:
            raise SystemExit("dev/sbt benchmarks/package made no jar under benchmarks/jvm/target/scala-2.13")
    return str(jar)


def percentile(values: list[float], q: float) -> float:
    """Nearest rank, as ``LightJobLatency.percentile`` computes the JVM's."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def expected_sums() -> list[tuple[int, int]]:
    sums: dict[int, int] = {}
    for x in range(ITEMS):
        if x % 3 != 0:
            sums[x % 10] = sums.get(x % 10, 0) + x
    return sorted(sums.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="timed runs of each light job and the py4j call")
    parser.add_argument("--warmup", type=int, default=2000, help="untimed runs before them (the JVM's: 20000)")
    parser.add_argument("--spark-runs", type=int, default=50, help="timed runs of the Spark job")
    args = parser.parse_args()

    jar = benchmark_jar()
    import jetspark as js
    from jetspark import AggregateOperations as ops

    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                              "spark.jars": jar})
    spark = jet.spark
    jvm_bench = spark._jvm.io.jetspark.benchmarks.LightJobLatency
    if not isinstance(jvm_bench, type(spark._jvm.java.lang.System)):
        raise SystemExit(f"io.jetspark.benchmarks.LightJobLatency is not on the driver's classpath ({jar})")

    p = js.Pipeline.create()
    (p.read_from(js.Sources.items(list(range(ITEMS)))).filter(lambda x: x % 3 != 0)
     .grouping_key(lambda x: x % 10).aggregate(ops.summing(lambda x: x)).write_to(js.Sinks.list(LIST)))

    def checked(run) -> None:
        run()
        got = sorted(jet.get_list(LIST))
        jet.clear_list(LIST)
        if got != expected_sums():
            raise SystemExit(f"wrong result: {got}")

    checked(lambda: jet.new_light_job(p).join())
    checked(lambda: jet.new_job(p).join())

    def time_light() -> float:
        start = time.perf_counter()
        jet.new_light_job(p).join()
        took = time.perf_counter() - start
        jet.clear_list(LIST)  # not timed
        return took

    def time_spark() -> float:
        start = time.perf_counter()
        jet.new_job(p).join()
        took = time.perf_counter() - start
        jet.clear_list(LIST)
        return took

    nano_time = spark._jvm.java.lang.System.nanoTime  # looked up once: a call is then one round trip

    def time_py4j() -> float:
        start = time.perf_counter()
        nano_time()
        return time.perf_counter() - start

    results: dict[str, tuple[float, float, int]] = {}  # name -> (p50 µs, p99 µs, runs)
    started = time.time()

    # The bare call and the Python light job interleaved, so that a drift of the machine falls on both.
    for _ in range(args.warmup):
        time_light()
        time_py4j()
    light, py4j_calls = [], []
    for _ in range(args.runs):
        light.append(time_light())
        py4j_calls.append(time_py4j())
    results["Python light job"] = (percentile(light, 0.5) * 1e6, percentile(light, 0.99) * 1e6, args.runs)
    results["bare py4j call"] = (percentile(py4j_calls, 0.5) * 1e6, percentile(py4j_calls, 0.99) * 1e6, args.runs)

    # The JVM's C2 compiles the engine's paths only after about ten thousand jobs.
    jvm_p50, jvm_p99, dag_p50, dag_p99 = list(jvm_bench.measure(args.runs, 20000))
    results["JVM light job (pipeline)"] = (jvm_p50, jvm_p99, args.runs)
    results["JVM light job (planned DAG)"] = (dag_p50, dag_p99, args.runs)

    for _ in range(min(5, args.spark_runs)):
        time_spark()
    spark_times = [time_spark() for _ in range(args.spark_runs)]
    results["Spark job"] = (percentile(spark_times, 0.5) * 1e6, percentile(spark_times, 0.99) * 1e6, args.spark_runs)
    elapsed = time.time() - started

    print(f"{ITEMS} items -> filter -> keyed sum -> list sink, local[2]; submit to join() returning, the list "
          f"cleared between runs outside the timed part; the Spark job run fewer times "
          f"({elapsed:.0f} s of runs, load average {os.getloadavg()[0]:.2f} at the end)")
    print(f"{'':<30} {'p50 (µs)':>10} {'p99 (µs)':>10} {'runs':>6}")
    for name, (p50, p99, runs) in results.items():
        print(f"{name:<30} {p50:>10.1f} {p99:>10.1f} {runs:>6}")
    light_p50, py4j_p50 = results["Python light job"][0], results["bare py4j call"][0]
    print(f"Python light p50 / bare py4j p50: {light_p50 / py4j_p50:8.1f}   (target at most 3)")
    print(f"Spark job p50 / Python light p50: {results['Spark job'][0] / light_p50:8.1f}   (target at least 50)")
    print(f"JVM light job p50:                {jvm_p50:8.1f} µs (target: tens of µs; planned DAG {dag_p50:.1f} µs)")
    jet.stop()


if __name__ == "__main__":
    main()
