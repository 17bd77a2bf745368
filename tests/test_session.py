"""`jetspark.session()`: starts Spark with the bundled jar, bound to loopback, or wraps a session."""

from __future__ import annotations

from pathlib import Path

import jetspark
from conftest import run_python
from jetspark._jar import kafka_jar_paths


def test_the_jvm_side_answers_with_the_package_version(jet):
    assert jet.version == jetspark.__version__


def test_the_jar_reaches_every_executor_task(jet):
    assert jet.executor_versions(partitions=4) == [jetspark.__version__] * 4


def test_spark_started_by_jetspark_binds_to_loopback(jet):
    conf = jet.spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"


def test_the_bundled_jar_is_on_spark_jars(jet, built_jar: Path):
    assert str(built_jar) in jet.spark.sparkContext.getConf().get("spark.jars").split(",")


def test_the_bundled_kafka_connector_jars_are_on_spark_jars(jet):
    jars = jet.spark.sparkContext.getConf().get("spark.jars").split(",")
    assert kafka_jar_paths() and set(kafka_jar_paths()) <= set(jars)


def test_wrapping_a_session_reuses_it_and_does_not_stop_it(jet):
    wrapped = jetspark.session(jet.spark)
    assert wrapped.spark is jet.spark
    wrapped.stop()
    assert jet.spark.range(3).count() == 3


def test_wrapping_a_session_without_the_jar_says_how_to_add_it():
    # A fresh process: one JVM per Python process, and this one must not have the jar.
    done = run_python(
        "from pyspark.sql import SparkSession\n"
        "import jetspark\n"
        "spark = (SparkSession.builder.master('local[1]').config('spark.driver.host', '127.0.0.1')\n"
        "         .config('spark.driver.bindAddress', '127.0.0.1').config('spark.ui.enabled', 'false').getOrCreate())\n"
        "try:\n"
        "    jetspark.session(spark)\n"
        "except jetspark.JarNotFoundError as e:\n"
        "    print('MESSAGE:', e)\n"
        "spark.stop()\n"
    )
    assert done.returncode == 0, done.stderr
    message = done.stdout.split("MESSAGE:", 1)[1]
    assert "spark.jars" in message and "--jars" in message and jetspark.jar_path() in message


def test_session_wraps_a_running_spark_without_changing_or_owning_it(jet):
    before = jet.spark.conf.get("spark.sql.shuffle.partitions")
    again = jetspark.session(conf={"spark.sql.shuffle.partitions": "7"})
    assert again.spark.conf.get("spark.sql.shuffle.partitions") == before
    again.stop()
    assert jet.spark.range(2).count() == 2


def test_a_local_session_shuffles_into_one_partition_per_core_unless_told_otherwise():
    # A fresh process: the shared session's settings are the tests' own. local[3] has 3 cores (Spark's
    # local master runs that many tasks at once, whatever the machine has).
    done = run_python(
        "import jetspark as js\n"
        "for conf in ({}, {'spark.sql.shuffle.partitions': '5', 'spark.default.parallelism': '7'},\n"
        "             {'spark.default.parallelism': '7'}, {'spark.sql.shuffle.partitions': '5'},\n"
        "             {'spark.master': 'local[2]'}):\n"
        "    jet = js.session(master='local[3]', conf={'spark.ui.enabled': 'false', **conf})\n"
        "    print('PARTITIONS:', jet.spark.sparkContext.defaultParallelism,\n"
        "          jet.spark.conf.get('spark.sql.shuffle.partitions'))\n"
        "    jet.stop()\n"
    )
    assert done.returncode == 0, done.stderr
    found = [line.split(":", 1)[1].split() for line in done.stdout.splitlines() if line.startswith("PARTITIONS:")]
    assert found == [["3", "3"], ["7", "5"], ["7", "7"], ["3", "5"], ["2", "2"]]
