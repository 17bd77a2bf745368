"""Exceptions raised by jetspark."""

from __future__ import annotations

__all__ = ["JetSparkError", "JarNotFoundError", "PipelineDefinitionError", "JobFailedError"]


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


class JobFailedError(JetSparkError):
    """A job failed; ``stage`` names where, ``__cause__`` holds the root cause when it is known."""

    def __init__(self, message: str, stage: str | None = None) -> None:
        super().__init__(message)
        self.stage = stage
