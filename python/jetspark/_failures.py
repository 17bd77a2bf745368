"""What a failed job says: the root cause of a failure, dug out of the layers Spark and py4j wrap around
it, with the stage it happened in and, where a record caused it, the record (docs/errors.md).

A failure reaches the driver wrapped several times over: py4j's ``Py4JJavaError`` ("An error occurred
while calling oN.run."), Spark's ``SparkException`` ("Job aborted due to stage failure: ..."), Spark's
``PythonException`` ("An exception was thrown from the Python worker:", followed by the worker's
traceback), the engines' ``StageFailedException`` and Python's ``StepFailedError``. Both engines' jobs
describe their failure here, so that every failure reads the same way:
``stage 'S' failed on record R: TypeName: text`` (a record failed in a stage),
``stage 'S' failed: TypeName: text`` (a stage failed, not on one record), or ``TypeName: text``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

__all__ = ["Failure", "describe"]

_TRACEBACK = "Traceback (most recent call last):"
#: A failure that names its stage: Python's StepFailedError, the Spark engine's StageFailedException, the
#: light-job engine's LightJobFailedException (of a vertex).
_NAMED = re.compile(r"(?:(?:StepFailedError|StageFailedException): stage|LightJobFailedException: vertex) "
                    r"'(?P<stage>[^']*)'[^:\n]*? failed(?P<rest>.*)")
#: The package of a JVM exception's class, as its toString gives it.
_JAVA_PACKAGE = re.compile(r"\b(?:[a-z]\w*\.)+(?=[A-Z]\w*(?:Exception|Error)\b)")
#: How deep a chain of causes is followed (they may loop).
_DEPTH = 30


class Failure(NamedTuple):
    """A failure as a job reports it: ``stage`` where it happened (None where no stage is known), and
    ``text``, the whole description (the stage, the record, the root cause's type and text)."""

    stage: str | None
    text: str


def describe(error: BaseException) -> Failure:
    """The failure behind ``error``, raised by a job: a JVM error (py4j's, or the PySpark exception it was
    converted to) is read along its chain of causes."""
    layers = _jvm_layers(error) or [(type(error).__name__, str(error))]
    raised = [r for r in (_raised_in_python(message) for _, message in layers) if r]
    # The deepest layer that is not a wrapper: the last exception a Python traceback shows, else the
    # innermost JVM exception.
    root = raised[-1] if raised else _first_line(*layers[-1])
    root_named = _NAMED.search(root)
    if root_named:  # its own message names the stage (and the record, of a Python step)
        return Failure(root_named.group("stage"), f"stage '{root_named.group('stage')}' failed{root_named.group('rest')}")
    named = next((m for m in (_NAMED.search(f"{name}: {message}") for name, message in layers) if m), None)
    if named is None:
        return Failure(None, root)
    stage, reason = named.group("stage"), _JAVA_PACKAGE.sub("", named.group("rest").split("\n")[0])
    return Failure(stage, f"stage '{stage}' failed{_with_root(reason, root)}")


def _with_root(reason: str, root: str) -> str:
    """A stage's reason (what it was doing, ``: reading csv files: text``) with the root cause's type and
    text in it: where the reason quotes the text, with the type put before it, else after the reason."""
    if root in reason:
        return reason
    text = root.partition(": ")[2]
    return reason.replace(text, root, 1) if text and text in reason else f"{reason}: {root}"


def jvm_throwable(error: BaseException) -> Any:
    """The JVM exception behind a failed py4j call (py4j's error, or PySpark's conversion of it), else None."""
    return getattr(error, "java_exception", None) or getattr(error, "_origin", None)


def _jvm_layers(error: BaseException) -> list[tuple[str, str]]:
    """(simple class name, message) of each JVM throwable in the chain, outermost first."""
    layers: list[tuple[str, str]] = []
    throwable = jvm_throwable(error)
    while throwable is not None and len(layers) < _DEPTH:
        message = throwable.getMessage()
        layers.append((str(throwable.getClass().getSimpleName()), "" if message is None else str(message)))
        cause = throwable.getCause()
        throwable = None if cause is None or cause.equals(throwable) else cause
    return layers


def _raised_in_python(message: str) -> str | None:
    """The exception line at the end of the last Python traceback in ``message`` (a worker's or py4j's
    callback's), without the module of its type: ``TypeName: text``; None without a traceback."""
    at = message.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in message[at + len(_TRACEBACK):].splitlines():
        if line.strip() and not line.startswith((" ", "\t")):
            type_name, colon, text = line.partition(":")
            return f"{type_name.rsplit('.', 1)[-1]}{colon}{text}"
    return None


def _first_line(type_name: str, message: str) -> str:
    line = message.strip().split("\n")[0]
    return f"{type_name}: {line}" if line else type_name
