"""Item classes for the files tests. Items travel as plain pickles, which name their class: Spark's Python
workers import this module (test_files.py ships it with ``SparkContext.addPyFile``)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float


@dataclasses.dataclass(frozen=True, slots=True)
class SlottedReading:
    sensor: str
    value: float


class Point(NamedTuple):
    y: int
    x: int
