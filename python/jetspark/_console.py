"""A stream job's console sinks, the driver's side: what the epochs write to them is printed as it comes.

The JVM collects each epoch's items of a console sink into a registry list (``EpochSinks``); this prints
and takes them out of it, so that a long job holds none of them for long.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from jetspark import _protocol


class ConsolePrinter:
    """Prints the items of a stream job's console ``lists`` to ``out`` (standard output), every
    ``interval_s`` seconds while the job runs and once more when it stops."""

    def __init__(self, bridge: Any, lists: list[str], interval_s: float = 0.2, out: TextIO | None = None) -> None:
        self._bridge, self._lists, self._out = bridge, lists, out
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if lists:
            self._thread = threading.Thread(target=self._run, args=(interval_s,), name="jetspark console", daemon=True)
            self._thread.start()

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self._print()

    def _print(self) -> None:
        for name in self._lists:
            for item in _protocol.drain_list(self._bridge, name):
                print(item, file=self._out or sys.stdout, flush=True)

    def stop(self) -> None:
        """Stops printing, once what the job wrote so far is printed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._print()
