"""The fault suite (issue 25, docs/guarantees.md): stream jobs with keyed sliding windows, session windows
and ``map_stateful`` over several substreams, run under faults that really happen, must give the
brute-force reference's output: under EXACTLY_ONCE nothing lost and nothing twice; under AT_LEAST_ONCE
nothing lost (what came twice is counted and shown).

The faults, each in runs of its own:

- ``executor-kill``: a SIGKILL of an executor JVM of a ``local-cluster[2,1,1024]`` at three random times;
- ``task-failure``: the test-only hook ``spark.jetspark.test.failCommits`` (``InjectedTaskFailures``) fails
  the first attempt of every stateful vertex's partition 0 in each odd epoch, right after its commit, and
  leaves a file for each, which the suite counts;
- ``stop-resume``: the job is cancelled after a random number of epochs, and a new job resumes from its
  ``checkpoint_dir``;
- ``driver-kill``: the driver's process (Python and its JVM) is killed with SIGKILL once the query has
  committed a random number of epochs, and a new process resumes from the ``checkpoint_dir``; its sinks
  are files (a list lives in the driver and dies with it).

Each run draws its input from its own seed, printed with its result. Run by hand:
``python tests/fault_suite.py --runs 20 [--seed S]``; ``tests/test_faults.py`` runs it in CI and checks its
report, which ends with the runs, the faults injected, the records tried, lost and duplicated, and the
peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Every Spark here binds to loopback, the drivers this starts too.
os.environ.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable})

KINDS = ["executor-kill", "task-failure", "stop-resume", "driver-kill"]
SINKS = ("sliding", "session", "state")
CLUSTER = "local-cluster[2,1,1024]"
CLUSTER_CONF = {"spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.default.parallelism": "4"}


# -- one run's job --------------------------------------------------------------------------------------------

def substreams_of(seed: int) -> list[list[dict[str, int]]]:
    """Three substreams of 15 items (five epochs), each running from its own random start, some items out
    of order."""
    rng = random.Random(seed)
    out = []
    for s in range(3):
        start, step = rng.randrange(0, 3_000), rng.randrange(5, 15)
        out.append([{"s": s, "k": rng.randrange(3), "v": rng.randrange(100),
                     "t": start + i * step - (rng.randrange(30) if rng.random() < 0.2 else 0)} for i in range(15)])
    return out


def pipeline(seed: int, files: str | None = None) -> Any:
    """Keyed sliding windows, keyed sessions and a ``map_stateful`` keyed by substream (a running sum, whose
    order each substream fixes), written to lists, or with ``files``, to JSON files under it."""
    from jetspark import AggregateOperations, Pipeline, Sinks, WindowDefinition
    from stream_strategies import StreamInput

    def sink(name: str) -> Any:
        return Sinks.list(name) if files is None else Sinks.files(os.path.join(files, name), format="json")

    p = Pipeline.create()
    source = StreamInput(substreams_of(seed), 3, 20).source(p)
    (source.grouping_key("k").window(WindowDefinition.sliding(40, 10)).aggregate(AggregateOperations.summing("v"))
     .map(lambda r: {"start": r.start, "key": r.key, "sum": r.result}).write_to(sink("sliding")))
    (source.grouping_key("k").window(WindowDefinition.session(15)).aggregate(AggregateOperations.counting())
     .map(lambda r: {"start": r.start, "end": r.end, "key": r.key, "count": r.result}).write_to(sink("session")))
    (source.grouping_key("s").map_stateful(lambda: 0, lambda n, k, e: (n + e["v"], {"s": k, "v": e["v"], "sum": n + e["v"]}))
     .write_to(sink("state")))
    return p


def expected_of(seed: int) -> dict[str, Counter[str]]:
    from stream_reference import run_stream_reference

    outputs = run_stream_reference(pipeline(seed)).outputs
    return {name: counted(outputs[name]) for name in SINKS}


def counted(items: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(item, sort_keys=True) for item in items)


def compared(seed: int, got: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Records tried, lost (expected, not got) and duplicated (got more often than expected)."""
    expected = expected_of(seed)
    tried = lost = duplicated = 0
    for name in SINKS:
        have = counted(got[name])
        tried += sum(expected[name].values())
        lost += sum((expected[name] - have).values())
        duplicated += sum((have - expected[name]).values())
    return {"tried": tried, "lost": lost, "duplicated": duplicated}


def session(master: str, extra: dict[str, str] | None = None) -> Any:
    import jetspark as js

    return js.session(master=master, conf={**CLUSTER_CONF, **(extra or {})})


def guarantee_of(seed: int) -> Any:
    """AT_LEAST_ONCE for about one run in four, drawn from the seed (not from its place in the kinds' turn,
    so that every kind of fault gets some)."""
    from jetspark import ProcessingGuarantee

    return ProcessingGuarantee.AT_LEAST_ONCE if random.Random(f"guarantee {seed}").random() < 0.25 \
        else ProcessingGuarantee.EXACTLY_ONCE


# -- the processes ----------------------------------------------------------------------------------------------

def executors_of(app: str) -> list[int]:
    """The pids of the executor JVMs of Spark application ``app``."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd and app.encode() in cmd:
            pids.append(int(pid))
    return pids


class PeakMemory:
    """Samples the driver's heap in use and the executors' resident memory (MB) until stopped."""

    def __init__(self, jet: Any) -> None:
        self.driver_heap_mb = self.executor_rss_mb = 0.0
        runtime = jet.spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
        app = jet.spark.sparkContext.applicationId
        self._stop = threading.Event()

        def sample() -> None:
            while not self._stop.wait(0.5):
                try:
                    self.driver_heap_mb = max(self.driver_heap_mb, (runtime.totalMemory() - runtime.freeMemory()) / 2**20)
                except Exception:  # noqa: BLE001 - the JVM may be going away
                    return
                for pid in executors_of(app):
                    try:
                        rss = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
                        self.executor_rss_mb = max(self.executor_rss_mb, int(rss.split()[1]) / 1024)
                    except (OSError, StopIteration):
                        pass

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {"driver_heap_mb": round(self.driver_heap_mb), "executor_rss_mb": round(self.executor_rss_mb)}


def in_process_runs(kind: str, seeds: list[int]) -> None:
    """Runs of ``kind`` (all but driver-kill) in this process, on one cluster session; prints a RESULT line each."""
    from jetspark import JobConfig

    injected = Path(tempfile.mkdtemp(prefix="jetspark-injected-"))
    jet = session(CLUSTER, {"spark.jetspark.test.failCommits": str(injected)} if kind == "task-failure" else None)
    peak = PeakMemory(jet)
    app = jet.spark.sparkContext.applicationId
    for seed in seeds:
        rng = random.Random(seed)
        for name in SINKS:
            jet.clear_list(name)
        checkpoint = tempfile.mkdtemp(prefix="jetspark-faults-")
        config = JobConfig(processing_guarantee=guarantee_of(seed), checkpoint_dir=checkpoint, trigger_interval_ms=200)
        faults = 0
        started = time.monotonic()
        job = jet.new_job(pipeline(seed), config)
        if kind == "executor-kill":  # three kills, at a random time into each of the first three epochs
            for epoch in range(3):
                while job.metrics().get("epochs", 0) < epoch and job.status.value in ("STARTING", "RUNNING"):
                    time.sleep(0.05)
                time.sleep(rng.uniform(0, 1.0))
                pids = executors_of(app)
                if pids and job.status.value == "RUNNING":
                    os.kill(rng.choice(pids), signal.SIGKILL)
                    faults += 1
        elif kind == "stop-resume":
            stop_after = rng.randrange(1, 4)
            while job.metrics().get("epochs", 0) < stop_after and job.status.value in ("STARTING", "RUNNING"):
                time.sleep(0.05)
            job.cancel()
            try:
                job.join(timeout=600)
            except Exception:  # noqa: BLE001 - cancelled, as asked
                pass
            faults += 1
            job = jet.new_job(pipeline(seed), config)
        job.join(timeout=900)
        if kind == "task-failure":  # one file per failure the hook injected
            faults = sum(1 for _ in injected.iterdir())
            for marker in injected.iterdir():
                marker.unlink()
        got = {name: jet.get_list(name) for name in SINKS}
        shutil.rmtree(checkpoint, ignore_errors=True)
        report(kind, seed, faults, compared(seed, got), time.monotonic() - started)
    print("MEMORY", json.dumps(peak.stop()), flush=True)
    jet.stop()
    shutil.rmtree(injected, ignore_errors=True)


def driver_run(seed: int, checkpoint: str, files: str) -> None:
    """One driver of a driver-kill run: the job on ``checkpoint``, its sinks files under ``files``."""
    from jetspark import JobConfig

    jet = session("local[2]")
    job = jet.new_job(pipeline(seed, files), JobConfig(processing_guarantee=guarantee_of(seed), checkpoint_dir=checkpoint,
                                                       trigger_interval_ms=200))
    job.join(timeout=900)
    jet.stop()


def driver_kill_run(seed: int) -> None:
    """Starts a driver, kills its whole process group once its query committed some epochs, resumes in a
    new driver, then compares the files; prints a RESULT line."""
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="jetspark-driver-kill-"))
    checkpoint, files = work / "checkpoint", work / "files"
    command = [sys.executable, __file__, "--driver", str(seed), str(checkpoint), str(files)]
    commits = checkpoint / "query" / "commits"
    kill_after = rng.randrange(1, 4)
    started = time.monotonic()
    first = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while first.poll() is None and (not commits.exists() or len(list(commits.glob("[0-9]*"))) < kill_after):
        time.sleep(0.05)
    faults = 0
    if first.poll() is None:
        os.killpg(first.pid, signal.SIGKILL)
        faults = 1
    first.wait()
    second = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
    if second.returncode != 0:
        raise RuntimeError(f"seed {seed}: the resumed driver failed: {second.stderr[-2000:]}")
    got = {name: [json.loads(line) for f in sorted((files / name).glob("epoch-*")) for line in f.read_text().splitlines()]
           for name in SINKS}
    shutil.rmtree(work, ignore_errors=True)
    report("driver-kill", seed, faults, compared(seed, got), time.monotonic() - started)


def report(kind: str, seed: int, faults: int, counts: dict[str, int], seconds: float) -> None:
    print("RESULT", json.dumps({"kind": kind, "seed": seed, "guarantee": guarantee_of(seed).value, "faults": faults,
                                **counts, "seconds": round(seconds, 1)}), flush=True)


# -- the suite ------------------------------------------------------------------------------------------------

def run_suite(runs: int, seed: int) -> dict[str, Any]:
    """``runs`` runs, the kinds in turn, run ``i`` with seed ``seed + i``; returns the report."""
    seeds: dict[str, list[int]] = {kind: [] for kind in KINDS}
    for i in range(runs):
        seeds[KINDS[i % len(KINDS)]].append(seed + i)
    results, memory = [], []
    for kind, kind_seeds in seeds.items():
        if not kind_seeds:
            continue
        if kind == "driver-kill":
            command = [sys.executable, __file__, "--driver-kill", *map(str, kind_seeds)]
        else:
            command = [sys.executable, __file__, "--in-process", kind, *map(str, kind_seeds)]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=3600)
        lines = done.stdout.splitlines()
        for line in lines:
            if line.startswith("RESULT "):
                results.append(json.loads(line[7:]))
                print(line, flush=True)
            elif line.startswith("MEMORY "):
                memory.append(json.loads(line[7:]))
        if done.returncode != 0:
            raise RuntimeError(f"{kind} runs failed (seeds {kind_seeds}): {done.stderr[-3000:]}")
    exactly = [r for r in results if r["guarantee"] == "EXACTLY_ONCE"]
    return {
        "runs": len(results),
        "faults_injected": sum(r["faults"] for r in results),
        "faults_by_kind": {k: sum(r["faults"] for r in results if r["kind"] == k) for k in KINDS},
        "records_tried": sum(r["tried"] for r in results),
        "records_lost": sum(r["lost"] for r in results),
        "duplicates_exactly_once": sum(r["duplicated"] for r in exactly),
        "duplicates_at_least_once": sum(r["duplicated"] for r in results if r["guarantee"] == "AT_LEAST_ONCE"),
        "peak_driver_heap_mb": max((m["driver_heap_mb"] for m in memory), default=0),
        "peak_executor_rss_mb": max((m["executor_rss_mb"] for m in memory), default=0),
        "seeds": {k: v for k, v in seeds.items() if v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--in-process", nargs="+", metavar=("KIND", "SEED"))
    parser.add_argument("--driver-kill", nargs="+", type=int, metavar="SEED")
    parser.add_argument("--driver", nargs=3, metavar=("SEED", "CHECKPOINT", "FILES"))
    args = parser.parse_args()
    if args.in_process:
        in_process_runs(args.in_process[0], [int(s) for s in args.in_process[1:]])
    elif args.driver_kill:
        for seed in args.driver_kill:
            driver_kill_run(seed)
    elif args.driver:
        driver_run(int(args.driver[0]), args.driver[1], args.driver[2])
    else:
        print(f"fault suite: {args.runs} runs from seed {args.seed}", flush=True)
        print("REPORT", json.dumps(run_suite(args.runs, args.seed)), flush=True)


if __name__ == "__main__":
    main()
