"""The one place where Python meets the JVM: finding the bundled jar and reaching the JVM bridge."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jetspark.errors import JarNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BRIDGE_CLASS = "io.jetspark.python.PythonBridge"


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


def bridge(spark: SparkSession) -> Any:
    """The JVM bridge object of ``spark``'s JVM; raises :class:`JarNotFoundError` with the fix when the
    jar is missing from the session's classpath or is another version."""
    from py4j.java_gateway import JavaClass

    jvm = spark.sparkContext._jvm
    node: Any = jvm
    for part in BRIDGE_CLASS.split("."):
        node = getattr(node, part)
    if not isinstance(node, JavaClass):
        raise JarNotFoundError(
            "this SparkSession was started without the jetspark jar, so the JVM side is missing. "
            "Start Spark with the jar on its classpath, before the session exists:\n"
            f"  SparkSession.builder.config('spark.jars', jetspark.jar_path())...getOrCreate()\n"
            f"  or: spark-submit --jars {jar_path_or_hint()} your_job.py\n"
            "or let jetspark start Spark for you: jetspark.session()"
        )
    jar_version = node.version()
    if jar_version != package_version():
        raise JarNotFoundError(
            f"the jetspark jar on the Spark classpath is version {jar_version}, but the Python package is "
            f"{package_version()}; use the jar bundled with this package: {jar_path_or_hint()}"
        )
    return node


def call(method: Any, *args: Any) -> Any:
    """Calls a JVM method, turning a JVM ``PipelineDefinitionError`` into the Python one (same stage,
    rule and message) and leaving other errors as they are."""
    from py4j.protocol import Py4JJavaError

    from jetspark.errors import PipelineDefinitionError

    try:
        return method(*args)
    except Py4JJavaError as e:
        cause = e.java_exception
        if cause.getClass().getName() == "io.jetspark.pipeline.PipelineDefinitionError":
            raise PipelineDefinitionError(str(cause.getMessage()), stage=str(cause.stage()),
                                          rule=str(cause.rule())) from None
        raise


def jar_path_or_hint() -> str:
    try:
        return jar_path()
    except JarNotFoundError:
        return "<path to jetspark_2.13-VERSION.jar>"
