"""Shared fixtures. One small local Spark for the whole test run (starting Spark costs seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from kafka_broker import KafkaBroker

REPO = Path(__file__).resolve().parent.parent
LOOPBACK_ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
os.environ.update(LOOPBACK_ENV)

#: Hypothesis profiles: "dev", a developer's quick run, runs each property's own count of examples; "ci"
#: (the default where CI is set) runs three times as many. HYPOTHESIS_PROFILE chooses one by name.
EXAMPLE_SCALE = {"dev": 1, "ci": 3}
for _profile in EXAMPLE_SCALE:
    settings.register_profile(_profile, deadline=None, max_examples=100 * EXAMPLE_SCALE[_profile])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """How many examples a property of ``n`` examples (its count in a quick run) runs under this run's profile."""
    return n * EXAMPLE_SCALE[PROFILE]


TEST_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
             # A Kafka producer that Spark caches (for 10 minutes, by default) would go on trying to reach the
             # broker of a test module after it has stopped, and log a warning a second: one idle for 2 s is
             # closed instead.
             "spark.kafka.producer.cache.timeout": "2s", "spark.kafka.producer.cache.evictorThreadRunInterval": "1s"}


@pytest.fixture(scope="session")
def built_jar() -> Path:
    """The jar the package bundles; fails loudly, with the expected place, when it was not built."""
    import jetspark

    try:
        return Path(jetspark.jar_path())
    except jetspark.JarNotFoundError as e:
        pytest.fail(f"{e}\n(run the tests through `bash dev/test.sh`, which builds the jar first)")


@pytest.fixture(scope="session")
def jet(built_jar: Path) -> Iterator[object]:
    import jetspark

    session = jetspark.session(master="local[2]", conf=TEST_CONF)
    # A Spark left running (by a doctest, say) would be wrapped as it is, without these settings.
    assert session.spark.sparkContext.master == "local[2]", f"tests would run on {session.spark.sparkContext.master}"
    yield session
    session.stop()


@pytest.fixture(scope="module")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A Kafka broker on 127.0.0.1 for the test module (tests/kafka_broker.py), stopped after it: each
    module starts with no topics."""
    # (Imported here: kafka-python is needed only by the modules that use a broker.)
    from kafka_broker import KafkaBroker

    broker = KafkaBroker()
    try:
        yield broker.start()
    finally:
        broker.stop()


#: The Python expression that starts a session on a two-executor cluster (two executor JVMs besides the
#: driver), for code that `run_python` runs: one per test module, as it is slow to start.
CLUSTER_SESSION = ('js.session(master="local-cluster[2,1,1024]", conf={"spark.ui.enabled": "false", '
                   '"spark.executor.memory": "512m", "spark.default.parallelism": "4"})')


def run_python(code: str, *, python: str = sys.executable, cwd: Path | None = None, timeout: int = 300,
               args: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs Python code in a fresh process (a fresh JVM), bound to loopback; returns the finished process."""
    env = {**os.environ, **LOOPBACK_ENV, "PYSPARK_PYTHON": python}
    return subprocess.run([python, "-c", code, *(args or [])], cwd=cwd or REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


#: The engines a batch pipeline runs on: the Spark engine (``new_job``) and the local engine (``new_light_job``).
ENGINES = ("spark", "light")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Each engine in turn, for the tests of pipelines that both engines run."""
    return request.param


def start(jet: object, p: object, engine: str = "spark") -> object:
    """Starts ``p`` on ``engine`` (:data:`ENGINES`): a job, or a light job."""
    return jet.new_job(p) if engine == "spark" else jet.new_light_job(p)  # type: ignore[attr-defined]


def run_job(jet: object, p: object, *lists: str, timeout: int = 300, engine: str = "spark") -> tuple[object, list[list[object]]]:
    """Runs pipeline ``p`` to completion on ``engine``; returns the job and what each named list sink got,
    in the order named (the lists are cleared, also before the run: a failed test leaves nothing behind for the next)."""
    for name in lists:
        jet.clear_list(name)  # type: ignore[attr-defined]
    job = start(jet, p, engine)
    job.join(timeout=timeout)  # type: ignore[attr-defined]
    got = []
    for name in lists:
        got.append(jet.get_list(name))  # type: ignore[attr-defined]
        jet.clear_list(name)  # type: ignore[attr-defined]
    return job, got
