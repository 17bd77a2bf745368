"""The wheel carries the jar and Spark's Kafka connector and works in a clean venv; the same jar works with
`spark-submit --jars`."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import pyspark

import jetspark
from conftest import REPO, run_python
from jetspark._jar import kafka_jar_paths

pytestmark = pytest.mark.slow

SMOKE = """
import jetspark
jet = jetspark.session(master="local[1]", conf={"spark.ui.enabled": "false"})
assert jetspark.__file__.find("site-packages") >= 0, jetspark.__file__
print("VERSION", jet.version, "EXECUTORS", ",".join(jet.executor_versions(partitions=2)))
# Spark finds its kafka format in the bundled connector (a batch read connects to no broker until it runs).
kafka = jet.spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "t").load()
print("KAFKA", ",".join(kafka.columns))
jet.stop()
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, built_jar) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)], check=True,
                   timeout=300)
    (whl,) = out.glob("jetspark-*.whl")
    return whl


def test_the_wheel_bundles_the_built_jar(wheel: Path, built_jar: Path):
    with zipfile.ZipFile(wheel) as z:
        assert f"jetspark/jars/{built_jar.name}" in z.namelist()
        assert z.read(f"jetspark/jars/{built_jar.name}") == built_jar.read_bytes()


def test_the_wheel_bundles_the_kafka_connector_jars(wheel: Path):
    bundled = [Path(jar) for jar in kafka_jar_paths()]
    assert bundled, "no Kafka connector jars in the package (`bash dev/bootstrap.sh` fetches them)"
    with zipfile.ZipFile(wheel) as z:
        in_wheel = sorted(name for name in z.namelist() if name.startswith("jetspark/jars/kafka/"))
        assert in_wheel == [f"jetspark/jars/kafka/{jar.name}" for jar in bundled]
        for jar in bundled:
            assert z.read(f"jetspark/jars/kafka/{jar.name}") == jar.read_bytes()


def test_the_bundled_kafka_jars_hold_no_class_that_spark_ships():
    def classes(jar: Path) -> set[str]:
        with zipfile.ZipFile(jar) as z:
            # (Every Spark module's jar has Spark's stub class for its shading, and a modular jar its module-info.)
            return {name for name in z.namelist() if name.endswith(".class")
                    and not name.endswith("module-info.class") and not name.startswith("org/apache/spark/unused/")}

    spark_classes = set().union(*map(classes, (Path(pyspark.__file__).parent / "jars").glob("*.jar")))
    for jar in map(Path, kafka_jar_paths()):
        assert not classes(jar) & spark_classes, f"{jar.name} has classes of Spark's own jars"


def test_the_wheel_works_in_a_clean_venv_with_no_other_step(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True,
                   timeout=600)
    done = run_python(SMOKE, python=python, cwd=tmp_path)  # outside the repo: the installed package, not the source
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"VERSION {jetspark.__version__} EXECUTORS {jetspark.__version__},{jetspark.__version__}" in done.stdout
    assert "KAFKA key,value,topic,partition,offset,timestamp,timestampType" in done.stdout


def spark_submit(script: Path, *jars: Path, master: str = "local[2]",
                 options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Runs `spark-submit` of this venv's pyspark on local Spark, bound to loopback."""
    submit = Path(sys.executable).parent / "spark-submit"
    jar_args = ["--jars", ",".join(map(str, jars))] if jars else []
    return subprocess.run(
        [str(submit), "--master", master, *jar_args, *options,
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
         "--conf", "spark.ui.enabled=false", str(script)],
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=300,
    )


JOB = """
from pyspark.sql import SparkSession
import jetspark
spark = SparkSession.builder.getOrCreate()
try:
    jet = jetspark.session(spark)
    print("VERSION", jet.version, "EXECUTORS", ",".join(jet.executor_versions(partitions=2)))
except jetspark.JarNotFoundError as e:
    print("MISSING", "--jars" in str(e))
spark.stop()
"""


def test_spark_submit_with_jars_runs_a_jetspark_script(tmp_path: Path, built_jar: Path):
    (script := tmp_path / "job.py").write_text(JOB)
    done = spark_submit(script, built_jar)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"VERSION {jetspark.__version__} EXECUTORS {jetspark.__version__},{jetspark.__version__}" in done.stdout


def test_spark_submit_without_the_jar_fails_with_the_fix(tmp_path: Path):
    (script := tmp_path / "job.py").write_text(JOB)
    done = spark_submit(script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MISSING True" in done.stdout


SUBMITTED_SESSION = """
import jetspark as js
jet = js.session()
sc = jet.spark.sparkContext
print("MASTER", sc.master, "APP", sc.appName, "PARALLELISM", sc.defaultParallelism)
print("SHUFFLE", jet.spark.conf.get("spark.sql.shuffle.partitions"))
print("JARS", sc.getConf().get("spark.jars"))
p = js.Pipeline.create()
p.read_from(js.Sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(js.Sinks.list("out"))
jet.new_job(p).join()
print("OUT", sorted(jet.get_list("out")))
jet.stop()
"""


def test_a_session_in_a_submitted_script_runs_on_what_spark_submit_was_given(tmp_path: Path, built_jar: Path):
    (script := tmp_path / "job.py").write_text(SUBMITTED_SESSION)
    other = tmp_path / "other.jar"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    (given := tmp_path / "given" / built_jar.name).parent.mkdir()  # the jar, elsewhere than the package's
    given.write_bytes(built_jar.read_bytes())
    done = spark_submit(script, other, given, master="local[1]",
                        options=("--name", "submitted-app", "--conf", "spark.sql.shuffle.partitions=3"))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.split(" ", 1)[0].isupper())
    # spark-submit's master, name and settings, not jetspark's local defaults (local[*], one partition per core)
    assert lines["MASTER"] == "local[1] APP submitted-app PARALLELISM 1"
    assert lines["SHUFFLE"] == "3"
    # its --jars are kept, and the bundled jar is not added beside the one it was given
    jars = lines["JARS"].split(",")
    assert any(j.endswith("/other.jar") for j in jars), jars
    assert [j.rsplit("/", 1)[-1] for j in jars].count(built_jar.name) == 1, jars
    assert any(j.endswith(f"/given/{built_jar.name}") for j in jars), jars
    assert lines["OUT"] == "[10, 20, 30]"
