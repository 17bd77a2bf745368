"""Job configuration."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["JobConfig", "JobStatus", "ProcessingGuarantee"]


class ProcessingGuarantee(enum.Enum):
    """What a job promises after a failure: nothing, no loss (maybe duplicates), or exactly once."""

    NONE = "NONE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    EXACTLY_ONCE = "EXACTLY_ONCE"


class JobStatus(enum.Enum):
    NOT_RUNNING = "NOT_RUNNING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True)
class JobConfig:
    """How a job runs. A job started again with the same ``checkpoint_dir`` resumes from its last snapshot.

    Examples
    --------
    >>> JobConfig(name="q5", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE).snapshot_interval_ms
    10000
    >>> JobConfig(snapshot_interval_ms=0)
    Traceback (most recent call last):
    ...
    ValueError: JobConfig(snapshot_interval_ms): must be positive, not 0
    """

    name: str | None = None
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE
    snapshot_interval_ms: int = 10_000
    checkpoint_dir: str | None = None
    partition_idle_timeout_ms: int = 60_000

    def __post_init__(self) -> None:
        if not isinstance(self.processing_guarantee, ProcessingGuarantee):
            raise TypeError("JobConfig(processing_guarantee): must be a ProcessingGuarantee")
        for name in ("snapshot_interval_ms", "partition_idle_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"JobConfig({name}): must be positive, not {value!r}")
