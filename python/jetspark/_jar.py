"""The jars bundled with this package: where they are, and which version jetspark's is."""

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


def kafka_jar_paths() -> list[str]:
    """Paths of the jars of Spark's Kafka connector bundled in this package, for ``spark.jars``; none in a
    source checkout that has not run ``bash dev/bootstrap.sh``.

    pyspark does not ship the connector, and Spark's own way of adding it (``spark.jars.packages``)
    resolves it from a Maven repository when a session starts: that needs the network then, and brings
    tens of MB of Hadoop jars that Spark has already. These are all it needs beside Spark's own jars: the
    connector, its token provider, kafka-clients and commons-pool2 (dev/maven/kafka-connector/pom.xml).

    Examples
    --------
    >>> import os
    >>> sorted(os.path.basename(p).rsplit("-", 1)[0] for p in kafka_jar_paths())
    ['commons-pool2', 'kafka-clients', 'spark-sql-kafka-0-10_2.13', 'spark-token-provider-kafka-0-10_2.13']
    """
    return [str(jar) for jar in sorted((Path(__file__).parent / "jars" / "kafka").glob("*.jar"))]


def jar_path_or_hint() -> str:
    """:func:`jar_path`, or what to put there when the jar is missing (for error messages)."""
    try:
        return jar_path()
    except JarNotFoundError:
        return "<path to jetspark_2.13-VERSION.jar>"
