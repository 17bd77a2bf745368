"""``jetspark.session()``: a Spark session with the jetspark jar, and the entry point for jobs."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jetspark import _protocol
from jetspark._protocol import LOOPBACK
from jetspark._jar import jar_path, kafka_jar_paths
from jetspark.job import Job, JobConfig
from jetspark.light_job import LightJob
from jetspark.pipeline import Pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JetSession", "session"]


# Small local defaults; every one can be overridden through ``conf``. (The number of partitions follows
# the master's cores: see ``session``.)
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "1g",
}


class JetSession:
    """jetspark's handle on a SparkSession: runs pipelines as jobs on it.

    Create it with :func:`session`.
    """

    def __init__(self, spark: SparkSession, owns_spark: bool) -> None:
        self._spark = spark
        self._owns_spark = owns_spark
        self._bridge = _protocol.bridge(spark)

    @property
    def spark(self) -> SparkSession:
        """The underlying SparkSession."""
        return self._spark

    @property
    def version(self) -> str:
        """The version of the jetspark jar in this session's JVM."""
        return str(self._bridge.version())

    def executor_versions(self, partitions: int = 2) -> list[str]:
        """Versions of the jar that ``partitions`` Spark tasks found on the executors (a set-up check)."""
        return list(self._bridge.executorVersions(self._spark._jsparkSession, partitions))

    def new_job(self, pipeline: Pipeline, config: JobConfig | None = None) -> Job:
        """Starts ``pipeline`` as a job on this session's Spark and returns at once; ``join()`` waits.

        Examples
        --------
        >>> import jetspark as js
        >>> jet = js.session(master="local[1]")
        >>> p = js.Pipeline.create(preserve_order=True)  # the list keeps the items' order
        >>> p.read_from(js.Sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(js.Sinks.list("tens"))
        SinkStage(list(name='tens'))
        >>> jet.new_job(p).join()
        >>> jet.get_list("tens")
        [10, 20, 30]
        >>> jet.clear_list("tens")
        >>> jet.stop()
        """
        if not isinstance(pipeline, Pipeline):
            raise TypeError(f"new_job(pipeline): expected a Pipeline, not {type(pipeline).__name__}")
        if config is not None and not isinstance(config, JobConfig):
            raise TypeError(f"new_job(config): expected a JobConfig, not {type(config).__name__}")
        return Job(self._spark, self._bridge, pipeline, config or JobConfig())

    def new_light_job(self, pipeline: Pipeline, config: JobConfig | None = None) -> LightJob:
        """Starts ``pipeline`` as a light job on the local engine in the driver's JVM (Jet 5's light job:
        no snapshots, no metadata kept, ``join()``/``cancel()`` only) and returns once it started. The engine runs
        the job on the calling thread first, for up to ``config.light_job_start_us`` (5 ms, and the batch being
        processed then): a small job has ended when this returns, so the job's functions must not wait for
        what the caller does after it. Python callables run in this
        process. DataFrame and files sources are collected to the driver first, each at most
        ``config.light_job_max_source_rows`` rows (:class:`PipelineDefinitionError` naming the limit
        otherwise). What the local engine cannot run yet raises ``NotImplementedError`` here, naming the
        vertex.

        Examples
        --------
        >>> import jetspark as js
        >>> jet = js.session(master="local[1]")
        >>> p = js.Pipeline.create()
        >>> p.read_from(js.Sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(js.Sinks.list("light-tens"))
        SinkStage(list(name='light-tens'))
        >>> jet.new_light_job(p).join()
        >>> sorted(jet.get_list("light-tens"))
        [10, 20, 30]
        >>> jet.clear_list("light-tens")
        >>> jet.stop()
        """
        if not isinstance(pipeline, Pipeline):
            raise TypeError(f"new_light_job(pipeline): expected a Pipeline, not {type(pipeline).__name__}")
        if config is not None and not isinstance(config, JobConfig):
            raise TypeError(f"new_light_job(config): expected a JobConfig, not {type(config).__name__}")
        return LightJob(self._spark, self._bridge, pipeline, config or JobConfig())

    def add_py_file(self, path: str | os.PathLike[str]) -> None:
        """Ships a Python file (``.py``) or an archive of modules (``.zip``, ``.egg``) to every worker of
        this session, for this and later jobs: Spark's ``SparkContext.addPyFile``. The workers can then
        import what it holds, also the classes of items pickled by reference (the items of
        ``Sources.items``). The functions of a pipeline need none: a module of the user's that the
        workers cannot import is pickled by value with them (docs/errors.md).

        Examples
        --------
        >>> jet.add_py_file("helpers.py")  # doctest: +SKIP
        """
        self._spark.sparkContext.addPyFile(os.fspath(path))

    def get_list(self, name: str) -> list[Any]:
        """The items that ``Sinks.list(name)`` (or ``Sinks.dead_letter(name)``) holds: what jobs have
        committed to it so far, in arrival order."""
        return _protocol.get_list(self._bridge, name)

    def clear_list(self, name: str) -> None:
        """Empties list ``name``."""
        self._bridge.clearList(name)

    def stop(self) -> None:
        """Stops the SparkSession if :func:`session` started it; a wrapped session is left running."""
        if self._owns_spark:
            self._spark.stop()

    def __enter__(self) -> JetSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"JetSession(master={self._spark.sparkContext.master!r}, version={self.version!r})"


def session(
    spark: SparkSession | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> JetSession:
    """Starts (or wraps) a SparkSession that can run jetspark pipelines.

    Parameters
    ----------
    spark : SparkSession, optional
        An existing session to wrap. It must have been started with the jetspark jar on its classpath
        (``spark.jars`` in the builder config, or ``spark-submit --jars``); otherwise
        :class:`~jetspark.errors.JarNotFoundError` says how to add it.
    master : str, optional
        The Spark master when jetspark starts Spark: ``local[*]``, ``local[2]``,
        ``local-cluster[2,1,1024]``, a cluster URL. By default the master ``spark-submit`` was given
        (``--master``), else ``local[*]``.
    conf : mapping, optional
        Spark settings applied on top of jetspark's small local defaults, or, in a script run by
        ``spark-submit``, on top of its settings, which then replace jetspark's defaults. When a
        SparkSession is already running in this process, it is wrapped as it is (``master`` and ``conf`` do
        not apply to it) and :meth:`JetSession.stop` leaves it running.

    Returns
    -------
    JetSession

    Notes
    -----
    A Spark that jetspark starts binds to the loopback address only (``spark.driver.host`` and
    ``spark.driver.bindAddress`` are 127.0.0.1 unless ``conf`` says otherwise), and its Python workers
    run this interpreter, so they see the same packages. Its ``spark.jars`` has the jars of Spark's Kafka
    connector too, which the package bundles, so that Spark's ``kafka`` format needs no network access.
    In a script run by ``spark-submit`` the Spark is the one it configured: its master, its ``--conf``
    settings and its ``--jars``, with none of jetspark's local defaults. Its driver's JVM is running before
    the script starts, so it takes the jar (and the Kafka connector's) only from ``--jars``
    (``jetspark.jar_path()`` gives its path); otherwise :class:`~jetspark.errors.JarNotFoundError` says so.

    On a local master (``local``, ``local[N]``, ``local[*]``, ``local-cluster[E,C,M]``) the shuffles have
    one partition per core unless Spark's configuration (``conf``, ``spark-defaults.conf``,
    ``spark-submit --conf``) sets their number. ``spark.default.parallelism``, the parallelism jetspark
    plans a job with, is Spark's own for ``local[N]`` (N); for ``local-cluster[E,C,M]`` jetspark sets it
    to E×C unless ``conf`` sets it (over ``spark-defaults.conf``), as Spark would count only the executors
    registered by then. ``spark.sql.shuffle.partitions`` of the returned session (Spark's DataFrame
    shuffles, 200 by default) is set to the same number. On a cluster's master both are Spark's defaults;
    set ``spark.default.parallelism`` there, as Spark counts the cores of the executors registered when a
    job is planned (at least 2).

    Examples
    --------
    >>> import jetspark as js
    >>> jet = js.session(master="local[1]")
    >>> jet.version == js.__version__
    True
    >>> jet.stop()
    """
    if spark is not None:
        return JetSession(spark, owns_spark=False)

    from pyspark.sql import SparkSession

    # Executors (local-cluster, standalone on this machine) take their bind address from the environment.
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    # Python workers run PYSPARK_PYTHON; without it they run `python3` from PATH, which may lack pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    # Under spark-submit its settings are the session's already (a SparkConf loads them): the builder gets
    # only what is set on top of them.
    submitted = submitted_settings()
    settings = {**({} if submitted else LOCAL_DEFAULTS), **(conf or {})}
    # (The builder's config would outrank its master, so conf's spark.master is taken out to be the master.)
    master = settings.pop("spark.master", None) or master or submitted.get("spark.master") or "local[*]"
    cluster_cores = local_cluster_cores(master)
    if cluster_cores is not None and "spark.default.parallelism" not in submitted:
        # Spark counts the cores of the executors registered when it is asked, which right after start may
        # be none yet: planned then, a job would run at parallelism 2. (conf's value and spark-submit's are
        # kept; one in spark-defaults.conf, which a JVM started from Python reads after this, is outranked.)
        settings.setdefault("spark.default.parallelism", str(cluster_cores))
    settings["spark.jars"] = with_bundled_jars(
        ",".join(filter(None, [settings.get("spark.jars"), submitted.get("spark.jars")])),
        ",".join(filter(None, [settings.get("spark.jars.packages"), submitted.get("spark.jars.packages")])))

    # Spark allows one context per JVM. One already running in this process (started on any thread) is
    # wrapped as it is: the builder would change its settings, and it is not ours to stop.
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return JetSession(SparkSession.builder.getOrCreate(), owns_spark=False)
    app_name = settings.pop("spark.app.name", None) or submitted.get("spark.app.name") or "jetspark"
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if master.startswith("local") and not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # One shuffle partition per core, as jetspark's own shuffles have (spark.default.parallelism): Spark's
        # 200 are tiny tasks on a machine of a few cores, and a fixed number either runs a stage in waves
        # or leaves cores idle.
        spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))
    return JetSession(spark, owns_spark=True)


def submitted_settings() -> dict[str, str]:
    """The Spark settings of the JVM that launched this Python process (``spark-submit``), else none.

    spark-submit starts the driver's JVM first and tells the Python it runs where to reach it
    (``PYSPARK_GATEWAY_PORT``); the JVM holds its settings as system properties, which a SparkConf loads.
    A Python that starts its own JVM has no such settings: the builder's are all there are.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # (connects to that JVM; nothing is started)
    return dict(SparkConf().getAll())


def with_bundled_jars(jars: str, packages: str = "") -> str:
    """``spark.jars`` with the jars this package bundles put first (jetspark's, then Kafka's connector:
    :func:`~jetspark._jar.kafka_jar_paths`), each unless a jar of its file name is listed already; the
    connector's, unless a jar of the same artifact in any version is (its classes would clash), or
    ``packages`` (``spark.jars.packages``) names the connector.

    >>> import jetspark, os
    >>> from jetspark._jar import kafka_jar_paths
    >>> bundled = [jetspark.jar_path(), *kafka_jar_paths()]
    >>> with_bundled_jars("/opt/other.jar") == ",".join([*bundled, "/opt/other.jar"])
    True
    >>> mine = f"/opt/{os.path.basename(jetspark.jar_path())}"
    >>> with_bundled_jars(f"{mine},/opt/other.jar") == ",".join([*kafka_jar_paths(), mine, "/opt/other.jar"])
    True

    The same for a jar of the Kafka connector's:

    >>> (clients,) = [os.path.basename(jar) for jar in kafka_jar_paths() if "kafka-clients" in jar]
    >>> jars = with_bundled_jars(f"/opt/{clients}").split(",")
    >>> [jar for jar in jars if os.path.basename(jar) == clients] == [f"/opt/{clients}"]
    True
    >>> len(jars) == len(bundled)
    True
    >>> [jar for jar in with_bundled_jars("/opt/kafka-clients-4.0.0.jar").split(",") if "kafka-clients" in jar]
    ['/opt/kafka-clients-4.0.0.jar']
    >>> with_bundled_jars("", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0") == jetspark.jar_path()
    True
    """
    listed = [jar for jar in jars.split(",") if jar.strip()]
    # (By name: Spark serves the jars to executors by file name, and refuses a second one of the same name.)
    names = {os.path.basename(jar.strip()) for jar in listed}
    artifacts = {_artifact(name) for name in names}
    kafka = [] if "spark-sql-kafka-0-10" in packages else [
        jar for jar in kafka_jar_paths() if _artifact(os.path.basename(jar)) not in artifacts]
    missing = [jar for jar in [jar_path(), *kafka] if os.path.basename(jar) not in names]
    return ",".join([*missing, *listed])


def _artifact(jar_name: str) -> str:
    """A jar's file name without its version: ``kafka-clients-3.9.2.jar`` is ``kafka-clients``."""
    return re.sub(r"-\d[\w.]*\.jar$", "", jar_name)


def local_cluster_cores(master: str) -> int | None:
    """The cores of a ``local-cluster[executors, cores, memory]`` master (executors times cores), else None.

    >>> local_cluster_cores("local-cluster[2, 1, 1024]")
    2
    >>> local_cluster_cores("local-cluster[3,2,512]")
    6
    >>> local_cluster_cores("local[4]") is None
    True
    """
    found = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]", master)
    return int(found[1]) * int(found[2]) if found else None
