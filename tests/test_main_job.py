"""The main job (``bash dev/run.sh``, ``python -m jetspark.demo``): what it prints for jetspark equals a
brute-force count of its own input, computed here window by window, and Spark's own streaming windows
lose the lagging substream's readings, as SPARK-NOTES.md says Spark's one watermark per query does."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_python

from jetspark import demo

pytestmark = pytest.mark.slow

SECONDS = 40


def windows_by_brute_force(readings: list[dict]) -> dict[tuple[str, int], int]:
    """(sensor, end) → readings in [end - size, end), for every window end a reading could fall in."""
    last = max(r["ts"] for r in readings)
    ends = range(demo.SLIDE_MS, last + demo.SIZE_MS + demo.SLIDE_MS, demo.SLIDE_MS)
    counts = {(sensor, end): sum(1 for r in readings if r["sensor"] == sensor and end - demo.SIZE_MS <= r["ts"] < end)
              for sensor in demo.SENSORS for end in ends}
    return {k: n for k, n in counts.items() if n}


def test_the_main_job_prints_jetspark_windows_equal_to_a_brute_force_count_and_spark_dropping_readings():
    done = run_python("from jetspark.demo import main; main()", args=["--seconds", str(SECONDS)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    readings = [r for batch in demo.skewed_batches(SECONDS * 1000, period_ms=250) for r in batch]
    truth = windows_by_brute_force(readings)
    # The job scores each engine against its own truth: that truth must be this one.
    assert dict(demo.true_window_counts(readings)) == truth
    line = re.compile(r"^\s+(.+?)\s{2,}(\d+) windows emitted,\s+(\d+) correct,\s+(\d+) wrong counts,\s+(\d+) missing;"
                      r"\s+(\d+) readings dropped as late$")
    rows = {m.group(1): tuple(map(int, m.groups()[1:])) for m in map(line.match, done.stdout.splitlines()) if m}
    assert rows["jetspark (coalesced watermarks)"] == (len(truth), len(truth), 0, 0, 0), done.stdout
    emitted, correct, wrong, missing, dropped = rows["Spark Structured Streaming"]
    assert dropped > 0 and missing > 0 and correct < len(truth), done.stdout
    assert "truth (brute force)" in done.stdout and re.search(rf"\s{len(truth)} windows\n", done.stdout), done.stdout
    assert f"{len(readings)} readings of {len(demo.SENSORS)} sensors" in done.stdout
