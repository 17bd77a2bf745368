"""A soak of the epoch engine (issue 25): a rate stream at a fixed rate through keyed sliding windows and
keyed session windows, for ``--minutes`` (20 by default), on local[2] bound to 127.0.0.1.

``Sources.rate_stream(--rate, partitions=2).with_native_timestamps(1000)`` feeds, keyed by ``sequence %
--keys``, a ``sliding(10 s, 1 s)`` count and a ``session(2 s)`` count (a key's events come every
``--keys / --rate`` seconds, so a session closes only where the rate leaves gaps; ``--keys`` large enough
makes every key's session end), each to a noop sink, with a one-second trigger. Every ``--every`` seconds
it prints the epochs done, the watermark's lag, the state the window vertices committed last (bytes), and
the heap the driver's JVM holds after a GC (local[2]: the executors are that JVM). At the end it prints
each figure's mean over the first and the last quarter of the samples after the first ten epochs, and
their ratio: flat is about 1.
A measurement, not a test: nothing here asserts.

    python benchmarks/python/soak.py                     # 20 minutes at 2 000 events/s
    python benchmarks/python/soak.py --minutes 2 --every 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--rate", type=int, default=2_000, help="events per second")
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--every", type=float, default=30, help="seconds between samples")
    args = parser.parse_args()

    import jetspark as js
    from jetspark import AggregateOperations, JobConfig, Pipeline, Sinks, Sources, WindowDefinition

    jet = js.session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.driver.memory": "2g"})
    p = Pipeline.create()
    source = p.read_from(Sources.rate_stream(args.rate, partitions=2)).with_native_timestamps(1_000)
    keys = args.keys
    keyed = source.grouping_key(lambda e: e.sequence % keys)
    keyed.window(WindowDefinition.sliding(10_000, 1_000)).aggregate(AggregateOperations.counting()).set_name("sliding") \
        .write_to(Sinks.noop())
    keyed.window(WindowDefinition.session(2_000)).aggregate(AggregateOperations.counting()).set_name("session") \
        .write_to(Sinks.noop())
    job = jet.new_job(p, JobConfig(name="soak", trigger_interval_ms=1_000))
    jvm = jet.spark.sparkContext._jvm
    runtime = jvm.java.lang.Runtime.getRuntime()
    samples: list[dict[str, Any]] = []
    deadline = time.monotonic() + args.minutes * 60
    print(f"soak: {args.minutes} min at {args.rate} events/s over {keys} keys, a sample every {args.every} s", flush=True)
    print(f"{'s':>6} {'epochs':>7} {'lag_ms':>8} {'sliding_state':>14} {'session_state':>14} {'driver_heap_mb':>15}")
    started = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(args.every)
        metrics = job.metrics()
        vertices = metrics.get("vertices", {})
        jvm.java.lang.System.gc()
        sample = {
            "s": round(time.monotonic() - started),
            "epochs": metrics.get("epochs", 0),
            "lag_ms": metrics.get("watermark_lag_ms") or 0,
            "sliding_state": sum(v.get("state_bytes", 0) for name, v in vertices.items() if name.startswith("sliding")),
            "session_state": sum(v.get("state_bytes", 0) for name, v in vertices.items() if name.startswith("session")),
            "driver_heap_mb": round((runtime.totalMemory() - runtime.freeMemory()) / 2**20),
        }
        samples.append(sample)
        print(f"{sample['s']:>6} {sample['epochs']:>7} {sample['lag_ms']:>8} {sample['sliding_state']:>14} "
              f"{sample['session_state']:>14} {sample['driver_heap_mb']:>15}", flush=True)
    job.cancel()
    try:
        job.join(timeout=300)
    except Exception:  # noqa: BLE001 - cancelled, as asked
        pass
    # The warm-up left out: the samples once the windows' first ten seconds have gone by.
    steady = [s for s in samples if s["epochs"] >= 10] or samples
    quarter = max(1, len(steady) // 4)
    print("\nfigure            first quarter   last quarter   last / first   (after the first 10 epochs)")
    for figure in ("lag_ms", "sliding_state", "session_state", "driver_heap_mb"):
        first = statistics.mean(s[figure] for s in steady[:quarter])
        last = statistics.mean(s[figure] for s in steady[-quarter:])
        ratio = last / first if first else float("nan")
        print(f"{figure:<16} {first:>15.0f} {last:>14.0f} {ratio:>14.2f}")
    jet.stop()


if __name__ == "__main__":
    main()
