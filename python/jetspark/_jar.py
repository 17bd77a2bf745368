"""The jar bundled with this package: where it is and which version it is."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from jetspark.errors import JarNotFoundError


def package_version() -> str:
    """The installed jetspark version (the same number as the jar's)."""
    return metadata.version("jetspark")


def jar_path() -> str:
    """Path of the jar bundled in this package, for ``spark.jars`` or ``spark-submit --jars``.

    Examples
    --------
    >>> import jetspark
    >>> jetspark.jar_path().endswith(".jar")
    True
    """
    jars = sorted((Path(__file__).parent / "jars").glob("jetspark_*.jar"))
    if len(jars) != 1:
        raise JarNotFoundError(
            f"expected exactly one jetspark_*.jar in {Path(__file__).parent / 'jars'}, found "
            f"{[j.name for j in jars] or 'none'}; a source checkout builds it with `bash dev/bootstrap.sh`"
        )
    return str(jars[0])


def jar_path_or_hint() -> str:
    """:func:`jar_path`, or what to put there when the jar is missing (for error messages)."""
    try:
        return jar_path()
    except JarNotFoundError:
        return "<path to jetspark_2.13-VERSION.jar>"
