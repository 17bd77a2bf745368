"""Exceptions raised by jetspark."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DeadLetter", "JarNotFoundError", "JetSparkError", "JobCancelledError", "JobFailedError",
           "PipelineDefinitionError"]


class DeadLetter(NamedTuple):
    """A record that a user function failed on, as a dead-letter sink keeps it: the record as it entered
    ``stage``, and the error (``"TypeName: message"``)."""

    record: Any
    stage: str
    error: str


class JetSparkError(Exception):
    """Base class of every jetspark error."""


class JarNotFoundError(JetSparkError):
    """The jetspark jar is not on the Spark classpath (or is not the version this package expects)."""


class PipelineDefinitionError(JetSparkError):
    """A pipeline breaks a definition rule; the message names the stage and the rule."""

    def __init__(self, message: str, stage: str | None = None, rule: str | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.rule = rule


class JobCancelledError(JetSparkError):
    """``join()`` of a job that was cancelled."""


class JobFailedError(JetSparkError):
    """A job failed; ``stage`` names where, ``__cause__`` holds the root cause when it is known."""

    def __init__(self, message: str, stage: str | None = None) -> None:
        super().__init__(message)
        self.stage = stage
