"""The progress line of a running stream job (``JobConfig.progress_interval_ms``): one line on stderr every
interval, from the job's metrics, so that a job that runs for hours shows that it moves."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

_INFINITE = 2**63 - 1


def progress_line(name: str, metrics: dict[str, Any]) -> str:
    """One line of a stream job's progress (its metrics, docs/streaming.md): epochs done, the watermark
    and its lag behind the wall clock, items read by the sources and written by the sinks, late drops and
    the state kept.

    >>> progress_line("q5", {"epochs": 12, "watermark": 61_000, "watermark_lag_ms": 2_500, "items_read": 1200,
    ...                      "items_written": 40, "late_events_dropped": 3, "state_bytes": 2_000_000})
    '[jetspark q5] epoch 12 | watermark 61000 (lag 2.5 s) | read 1,200 | written 40 | late 3 | state 2.0 MB'
    >>> progress_line("q5", {"epochs": 0, "watermark": None, "items_read": 0, "items_written": 0,
    ...                      "late_events_dropped": 0, "state_bytes": 0})
    '[jetspark q5] epoch 0 | no watermark yet | read 0 | written 0 | late 0 | state 0.0 MB'
    >>> progress_line("q5", {})
    '[jetspark q5] starting'
    """
    if "epochs" not in metrics:
        return f"[jetspark {name}] starting"
    watermark = metrics["watermark"]
    if watermark is None:
        mark = "no watermark yet"
    elif watermark == _INFINITE:
        mark = "watermark done"
    else:
        lag = metrics.get("watermark_lag_ms")
        mark = f"watermark {watermark}" + ("" if lag is None else f" (lag {lag / 1000:.1f} s)")
    return (f"[jetspark {name}] epoch {metrics['epochs']} | {mark} | read {metrics['items_read']:,} | "
            f"written {metrics['items_written']:,} | late {metrics['late_events_dropped']} | "
            f"state {metrics['state_bytes'] / 1e6:.1f} MB")


class ProgressReporter:
    """Writes :func:`progress_line` of ``metrics()`` to ``out`` every ``interval_ms`` until stopped."""

    def __init__(self, name: str, metrics: Callable[[], dict[str, Any]], interval_ms: int,
                 out: TextIO | None = None) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(name, metrics, interval_ms / 1000, out),
                                        name=f"jetspark progress {name}", daemon=True)
        self._thread.start()

    def _run(self, name: str, metrics: Callable[[], dict[str, Any]], interval_s: float, out: TextIO | None) -> None:
        while not self._stop.wait(interval_s):
            print(progress_line(name, metrics()), file=out or sys.stderr, flush=True)

    def stop(self) -> None:
        """Stops the reports; returns once the last one is written."""
        self._stop.set()
        self._thread.join()
