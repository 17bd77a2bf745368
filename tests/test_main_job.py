"""The main job (``bash dev/run.sh``, ``python -m jetspark.demo``): what it prints for jetspark's streaming
pipeline equals a brute-force count of its own input, computed here window by window, and Spark's own
streaming windows over the same micro-batches lose the lagging substream's readings, as SPARK-NOTES.md
says Spark's one watermark per query does."""

from __future__ import annotations

import re

import pytest
from conftest import run_python

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


def test_both_engines_see_the_same_skewed_micro_batches():
    substreams = demo.skewed_substreams(SECONDS * 1000)
    per_batch = demo.BATCH_MS // demo.PERIOD_MS
    batches = demo.micro_batches(substreams, per_batch)
    assert len(batches) == SECONDS * 1000 // demo.BATCH_MS
    for s, substream in enumerate(substreams):
        # Each Spark micro-batch holds the next items_per_batch readings of each substream, in order.
        assert [r for batch in batches for r in batch if r["substream"] == s] == substream
        assert all(sum(1 for r in batch if r["substream"] == s) == per_batch for batch in batches)
        # Out of order, but never by more than the allowed lag: nothing is late for a per-substream watermark.
        behind = [max(r["ts"] for r in substream[:i + 1]) - substream[i]["ts"] for i in range(len(substream))]
        assert 0 < max(behind) < demo.LAG_MS
    assert all(a["ts"] - b["ts"] == demo.SKEW_MS for a, b in zip(*substreams, strict=True))


def test_the_main_job_prints_jetspark_windows_equal_to_a_brute_force_count_and_spark_dropping_readings():
    done = run_python("from jetspark.demo import main; main()", args=["--seconds", str(SECONDS)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    readings = [r for substream in demo.skewed_substreams(SECONDS * 1000) for r in substream]
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
