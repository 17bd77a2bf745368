"""Kafka in and out against a real broker (tests/kafka_broker.py; docs/kafka.md): records as items, each
partition a substream with its own watermark, a restart of the broker, and the sink in stream and batch
jobs. Expected outputs come from the records the tests produce, counted by brute force.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from conftest import CLUSTER_SESSION, REPO, run_job, run_python
from kafka_broker import KafkaBroker, Record

from jetspark import (AggregateOperations, JobConfig, JobStatus, Pipeline, ProcessingGuarantee, Sinks, Sources,
                      WindowDefinition)
from jetspark.errors import JobFailedError

pytestmark = pytest.mark.slow

T0 = 1_700_000_000_000  # the records' event time, in ms since the epoch
#: The test hook that fails an epoch once after its Kafka transaction committed (InjectedTaskFailures.scala).
INJECTED_KAFKA_FAILURES = "spark.jetspark.test.failAfterKafkaCommit"


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"the job did not get there in time: {what}"
        time.sleep(0.1)


def cancelled(job: Any) -> None:
    """Cancels a job that does not end by itself, and checks it ended so."""
    job.cancel()
    with pytest.raises(Exception, match="cancelled"):
        job.join(timeout=120)
    assert job.status is JobStatus.CANCELLED


def kafka_source(broker: KafkaBroker, topic: str, **options: Any) -> Any:
    return Sources.kafka(broker.bootstrap_servers, topic, startingOffsets="earliest", **options)


#: Two substreams of keyed events, five of each per epoch, counted in windows of 500 ms.
EVENTS = [[{"k": i % 3, "t": i * 70} for i in range(30)], [{"k": i % 2, "t": i * 90} for i in range(25)]]


def counted_to_kafka(broker: KafkaBroker, topic: str) -> Pipeline:
    """:data:`EVENTS` counted per key in tumbling windows of 500 ms, each count a record of ``topic``."""
    p = Pipeline.create()
    (p.read_from(Sources.items_stream(*EVENTS, items_per_batch=5)).with_timestamps("t", allowed_lag_ms=0)
     .grouping_key("k").window(WindowDefinition.tumbling(500)).aggregate(AggregateOperations.counting())
     .write_to(Sinks.kafka(broker.bootstrap_servers, topic, key=lambda w: str(w.key),
                           value=lambda w: {"start": w.start, "count": w.result})))
    return p


def written_counts(broker: KafkaBroker, topic: str) -> Counter[tuple[int, int, int]]:
    """The (key, start, count) records of ``topic``, as a read_committed consumer reads them."""
    return Counter((int(r.key), json.loads(r.value)["start"], json.loads(r.value)["count"]) for r in broker.records(topic))


def brute_force_counts(keys_and_times: list[tuple[int, int]], size_ms: int) -> Counter[tuple[int, int, int]]:
    """(key, window start, count) of each tumbling window of ``size_ms`` that holds events."""
    counts = Counter((k, t // size_ms * size_ms) for k, t in keys_and_times)
    return Counter((k, start, n) for (k, start), n in counts.items())


def test_records_come_as_kafka_records_with_their_key_and_value_deserialized(jet: Any, kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("records", partitions=2)
    produced = [Record(i % 2, f"k{i}".encode(), json.dumps({"n": i}).encode(), T0 + i) for i in range(10)]
    produced.append(Record(0, None, b'{"n": 99}', 1_079_337_347_472))  # no key; a time a float's ms would miss
    kafka_broker.produce("records", produced)
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, "records", key_deserializer="string", value_deserializer="json"))
     .with_native_timestamps(0).write_to(Sinks.list("out")))
    jet.clear_list("out")
    job = jet.new_job(p)
    wait_for(lambda: len(jet.get_list("out")) >= len(produced), "every record read")
    cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    # Each partition's offsets count its records in the order they were produced.
    offsets: Counter[int] = Counter()
    expected = []
    for r in produced:
        expected.append((None if r.key is None else r.key.decode(), json.loads(r.value), "records", r.partition,
                         offsets[r.partition], r.timestamp_ms))
        offsets[r.partition] += 1
    assert sorted(map(tuple, got), key=str) == sorted(expected, key=str)
    assert {type(r).__name__ for r in got} == {"KafkaRecord"}


def test_a_pattern_subscribes_to_every_topic_it_matches_and_a_function_deserializes(jet: Any,
                                                                                    kafka_broker: KafkaBroker) -> None:
    for topic in ("sensor-a", "sensor-b", "other"):
        kafka_broker.create_topic(topic, partitions=1)
        kafka_broker.produce(topic, [Record(0, b"k", f"{topic}:{i}".encode(), T0 + i) for i in range(3)])
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, re.compile("sensor-.*"), key_deserializer=lambda b: b.decode().upper(),
                              value_deserializer=lambda b: b.decode().split(":")))
     .with_native_timestamps(0).map(lambda r: (r.topic, r.key, tuple(r.value))).write_to(Sinks.list("out")))
    jet.clear_list("out")
    job = jet.new_job(p)
    wait_for(lambda: len(jet.get_list("out")) >= 6, "the matching topics' records read")
    cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    assert sorted(got) == [(t, "K", (t, str(i))) for t in ("sensor-a", "sensor-b") for i in range(3)]


def test_a_lagging_partition_loses_nothing_where_spark_s_watermark_drops_it(jet: Any, kafka_broker: KafkaBroker,
                                                                            tmp_path: Any) -> None:
    """Four partitions: 1 and 3 in step, 0 lagging 100 s behind them, 2 silent after its first three
    records. With an allowed lag of 0.5 s, each partition keeps its own watermark and the least of them is
    the source's, so nothing is late; once partition 2 is idle, the records that close the stream let
    every window out, and each second's count is the count of the records in it. Spark's own Kafka source,
    `withWatermark` and `window` over the same topic, in micro-batches of the same size, drop the lagging
    partition's records."""
    kafka_broker.create_topic("skewed", partitions=4)
    records = ([Record(0, None, b"lagging", T0 - 100_000 + i * 100) for i in range(40)]
               + [Record(1, None, b"ahead", T0 + i * 100) for i in range(40)]
               + [Record(2, None, b"quiet", T0 + i * 100) for i in range(3)]
               + [Record(3, None, b"ahead", T0 + 50 + i * 100) for i in range(40)])
    kafka_broker.produce("skewed", records)
    counts = Counter((r.timestamp_ms - T0) // 1_000 * 1_000 + T0 for r in records)
    idle_ms = 1_000
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, "skewed", maxOffsetsPerTrigger=20)).with_native_timestamps(500)
     .window(WindowDefinition.tumbling(1_000)).aggregate(AggregateOperations.counting()).write_to(Sinks.list("out")))
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(partition_idle_timeout_ms=idle_ms, trigger_interval_ms=100))
    wait_for(lambda: job.metrics().get("items_read", 0) >= len(records), "every record read")
    time.sleep(idle_ms * 2 / 1000)  # partition 2 has delivered nothing for longer than the idle timeout
    closing = T0 + 1_000_000
    kafka_broker.produce("skewed", [Record(s, None, b"closing", closing) for s in (0, 1, 3)])
    wait_for(lambda: len(jet.get_list("out")) >= len(counts), "every window emitted")
    late = job.metrics()["late_events_dropped"]
    cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    assert late == 0
    assert {(w.start, w.result) for w in got} == set(counts.items())

    spark_windows = spark_s_own_windows(jet, kafka_broker, "skewed", str(tmp_path / "spark"))
    spark_dropped = len(records) - sum(spark_windows.values())
    print(f"\nlate records dropped: jetspark {late}, Spark's withWatermark {spark_dropped} of {len(records)}")
    assert spark_dropped > 0 and all(spark_windows[start] <= n for start, n in counts.items())


def spark_s_own_windows(jet: Any, broker: KafkaBroker, topic: str, checkpoint: str) -> Counter[int]:
    """The counts per window start (ms) that Spark's own Kafka source, ``withWatermark`` (0.5 s) and a 1 s
    ``window`` emit in append mode, reading ``topic`` 20 records a micro-batch to its end."""
    from pyspark.sql import functions as F

    df = (jet.spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", topic).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 20).load())
    windows = (df.withWatermark("timestamp", "500 milliseconds").groupBy(F.window("timestamp", "1 second")).count()
               .select(F.unix_millis(F.col("window.start")).alias("start"), "count"))
    emitted: Counter[int] = Counter()

    def collect(batch: Any, _: int) -> None:
        emitted.update({row["start"]: row["count"] for row in batch.collect()})

    query = (windows.writeStream.outputMode("append").foreachBatch(collect).trigger(availableNow=True)
             .option("checkpointLocation", checkpoint).start())
    query.awaitTermination(300)
    return emitted


def test_a_broker_restarted_in_the_middle_of_a_stream_loses_nothing(jet: Any, kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("restarted", partitions=2)
    first = [Record(i % 2, None, f"{i}".encode(), T0 + i) for i in range(20)]
    then = [Record(i % 2, None, f"{i}".encode(), T0 + i) for i in range(20, 40)]
    kafka_broker.produce("restarted", first)
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, "restarted", value_deserializer="string")).with_native_timestamps(0)
     .map(lambda r: int(r.value)).write_to(Sinks.list("out")))
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(trigger_interval_ms=200))
    wait_for(lambda: len(jet.get_list("out")) >= len(first), "the first records read")
    kafka_broker.restart()
    kafka_broker.produce("restarted", then)
    wait_for(lambda: len(jet.get_list("out")) >= len(first) + len(then), "the records after the restart read")
    cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    assert sorted(got) == list(range(40))


def test_a_job_resumed_from_its_checkpoint_goes_on_after_the_last_epoch_it_read(jet: Any, kafka_broker: KafkaBroker,
                                                                                tmp_path: Any) -> None:
    """The offsets live in the job's checkpoint with its epochs: a job started again on it goes on after
    the last epoch it completed (none is committed to a consumer group), and replays an epoch the cancel
    cut short with the same records, whose output replaces the first attempt's: each record is in the list
    once."""
    kafka_broker.create_topic("resumed", partitions=2)
    config = JobConfig(checkpoint_dir=str(tmp_path / "checkpoint"), trigger_interval_ms=200)
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, "resumed", value_deserializer="string")).with_native_timestamps(0)
     .map(lambda r: int(r.value)).write_to(Sinks.list("out")))
    jet.clear_list("out")
    for batch in (range(0, 10), range(10, 25)):
        kafka_broker.produce("resumed", [Record(i % 2, None, f"{i}".encode(), T0 + i) for i in batch])
        job = jet.new_job(p, config)
        wait_for(lambda: len(jet.get_list("out")) >= batch.stop, "the new records read")
        cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    assert sorted(got) == list(range(25))


def test_a_partition_added_while_the_job_runs_is_read(jet: Any, kafka_broker: KafkaBroker) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions

    kafka_broker.create_topic("growing", partitions=1)
    kafka_broker.produce("growing", [Record(0, None, b"0", T0)])
    p = Pipeline.create()
    # The connector finds new partitions when its consumer refreshes the topic's metadata.
    (p.read_from(kafka_source(kafka_broker, "growing", **{"kafka.metadata.max.age.ms": "500"}))
     .with_native_timestamps(0).map(lambda r: (r.partition, r.value)).write_to(Sinks.list("out")))
    jet.clear_list("out")
    job = jet.new_job(p, JobConfig(trigger_interval_ms=200))
    wait_for(lambda: len(jet.get_list("out")) >= 1, "the first record read")
    with KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers) as admin:
        admin.create_partitions({"growing": NewPartitions(total_count=2)})
    kafka_broker.produce("growing", [Record(1, None, b"1", T0 + 1), Record(0, None, b"2", T0 + 2)])
    wait_for(lambda: len(jet.get_list("out")) >= 3, "the records of both partitions read")
    cancelled(job)
    got = jet.get_list("out")
    jet.clear_list("out")
    assert sorted(got) == [(0, b"0"), (0, b"2"), (1, b"1")]


EXECUTOR_KILL_JOB = f"""
import json, os, signal, sys, tempfile, time
sys.path.insert(0, "tests")
import jetspark as js
from jetspark import AggregateOperations, JobConfig, Pipeline, ProcessingGuarantee, Sinks, Sources, WindowDefinition
from fault_suite import executors_of

servers, closing = sys.argv[1], int(sys.argv[2])
jet = {CLUSTER_SESSION}
p = Pipeline.create()
(p.read_from(Sources.kafka(servers, "eo-in", value_deserializer="json", startingOffsets="earliest", maxOffsetsPerTrigger=15))
 .with_native_timestamps(0).grouping_key(lambda r: r.value["k"]).window(WindowDefinition.tumbling(1_000))
 .aggregate(AggregateOperations.counting())
 .write_to(Sinks.kafka(servers, "eo-out", key=lambda w: str(w.key), value=lambda w: {{"start": w.start, "count": w.result}})))
job = jet.new_job(p, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, trigger_interval_ms=200,
                               checkpoint_dir=tempfile.mkdtemp(prefix="jetspark-kafka-eo-")))
app, kills = jet.spark.sparkContext.applicationId, 0
for epochs in (1, 3):  # an executor killed while the job runs its second epoch, and its fourth
    while job.metrics().get("epochs", 0) < epochs and job.status.value in ("STARTING", "RUNNING"):
        time.sleep(0.05)
    time.sleep(0.3)
    pids = executors_of(app)
    if pids and job.status.value == "RUNNING":
        os.kill(pids[0], signal.SIGKILL)
        kills += 1
deadline = time.monotonic() + 600
# Until the epoch of the closing records has ended (its windows written): the sinks' watermark passed them.
while ((job.metrics().get("watermark") or 0) < closing and job.status.value == "RUNNING"
       and time.monotonic() < deadline):
    time.sleep(0.1)
status, error = job.status.value, None
if status == "FAILED":
    try:
        job.join(timeout=60)
    except Exception as e:  # the job's failure, for the test to show
        error = str(e)[-3000:]
job.cancel()
print("RESULT", json.dumps({{"kills": kills, "status": status, "read": job.metrics().get("items_read", 0), "error": error}}))
jet.stop()
"""


def test_exactly_once_through_kafka_with_an_executor_killed_writes_each_window_once(kafka_broker: KafkaBroker) -> None:
    """A Kafka source, keyed windows and a Kafka sink under EXACTLY_ONCE on two executor JVMs, one of
    them killed twice while epochs run: Spark computes the lost tasks again, the source's offsets and the
    windows' state hold, and, read with read_committed, the output topic holds each window's count once,
    the brute-force count of the records in it. (A replayed epoch is the test above.)"""
    kafka_broker.create_topic("eo-in", partitions=3)
    kafka_broker.create_topic("eo-out", partitions=1)
    records = [Record(i % 3, None, json.dumps({"k": i % 4}).encode(), T0 + i * 150) for i in range(90)]
    closing = [Record(s, None, json.dumps({"k": 9}).encode(), T0 + 1_000_000) for s in range(3)]
    kafka_broker.produce("eo-in", records + closing)
    done = run_python(EXECUTOR_KILL_JOB, cwd=REPO, timeout=900,
                      args=[kafka_broker.bootstrap_servers, str(closing[0].timestamp_ms)])
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert result["kills"] == 2 and result["status"] == "RUNNING", result
    assert written_counts(kafka_broker, "eo-out") == brute_force_counts(
        [(json.loads(r.value)["k"], r.timestamp_ms) for r in records], 1_000)


def test_window_results_written_to_a_topic_are_the_brute_force_counts(jet: Any, kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("window-counts", partitions=2)
    job = jet.new_job(counted_to_kafka(kafka_broker, "window-counts"))
    job.join(timeout=300)
    assert job.status is JobStatus.COMPLETED
    assert written_counts(kafka_broker, "window-counts") == brute_force_counts(
        [(e["k"], e["t"]) for sub in EVENTS for e in sub], 500)


def test_a_batch_job_writes_each_item_as_a_record(jet: Any, kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("batch", partitions=1)
    p = Pipeline.create()
    p.read_from(Sources.items(["a", b"b", 3, None])).write_to(Sinks.kafka(kafka_broker.bootstrap_servers, "batch"))
    job = jet.new_job(p)
    job.join(timeout=300)
    assert sorted(((r.key, r.value) for r in kafka_broker.records("batch")), key=str) == sorted(
        [(None, b"a"), (None, b"b"), (None, b"3"), (None, None)], key=str)


def test_items_whose_value_fails_go_to_the_sink_s_dead_letter_sink(jet: Any, kafka_broker: KafkaBroker) -> None:
    """A value function that raises on 0, and a value that is no JSON (NaN): both are the sink stage's dead
    letters; the other items are records."""
    kafka_broker.create_topic("some-bad", partitions=1)
    p = Pipeline.create()
    (p.read_from(Sources.items([4, 0, 2, -1]))
     .write_to(Sinks.kafka(kafka_broker.bootstrap_servers, "some-bad", value=lambda x: float("nan") if x < 0 else 8 // x))
     .set_name("to-kafka").on_error(Sinks.dead_letter("bad")))
    job, (letters,) = run_job(jet, p, "bad")
    assert job.status is JobStatus.COMPLETED
    assert sorted(r.value for r in kafka_broker.records("some-bad")) == [b"2", b"4"]
    assert sorted((d.record, d.stage) for d in letters) == [(-1, "to-kafka"), (0, "to-kafka")]


def test_exactly_once_an_epoch_replayed_after_its_transaction_committed_writes_nothing_again(
        jet: Any, kafka_broker: KafkaBroker, tmp_path: Any) -> None:
    """Under EXACTLY_ONCE each epoch's records go out in one Kafka transaction with the epoch's number. A
    test hook fails each odd epoch once, right after its transaction committed and before the query
    committed the epoch; the job resumed from its checkpoint replays the epoch, which finds its number
    committed. Read with read_committed, the topic holds each window's count once."""
    kafka_broker.create_topic("once", partitions=1)
    p = counted_to_kafka(kafka_broker, "once")
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_dir=str(tmp_path / "checkpoint"))
    injected = tmp_path / "injected"
    injected.mkdir()
    jet.spark.conf.set(INJECTED_KAFKA_FAILURES, str(injected))
    try:
        for runs in range(1, 10):
            job = jet.new_job(p, config)
            try:
                job.join(timeout=300)
                break
            except JobFailedError as e:
                assert "injected failure" in str(e)
    finally:
        jet.spark.conf.unset(INJECTED_KAFKA_FAILURES)
    assert job.status is JobStatus.COMPLETED
    assert runs == 1 + len(list(injected.iterdir())) == 4  # of epochs 0 to 5, the odd ones failed once each
    assert written_counts(kafka_broker, "once") == brute_force_counts([(e["k"], e["t"]) for sub in EVENTS for e in sub], 500)


def test_a_record_its_deserializer_fails_on_fails_the_job_naming_the_source_and_offset(jet: Any,
                                                                                       kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("not-json", partitions=1)
    kafka_broker.produce("not-json", [Record(0, None, b'{"n": 1}', T0), Record(0, None, b"{oops", T0 + 1)])
    p = Pipeline.create()
    (p.read_from(kafka_source(kafka_broker, "not-json", value_deserializer="json")).with_native_timestamps(0)
     .write_to(Sinks.list("out")))
    job = jet.new_job(p)
    with pytest.raises(JobFailedError, match=r"could not deserialize the record at offset 1 of not-json/0"):
        job.join(timeout=300)
    jet.clear_list("out")


def test_the_readme_s_kafka_example_writes_each_sensor_s_counts(jet: Any, kafka_broker: KafkaBroker) -> None:
    from test_readme import block

    kafka_broker.create_topic("readings", partitions=2)
    kafka_broker.create_topic("counts", partitions=1)
    readings = [Record(i % 2, None, json.dumps({"sensor": "ab"[i % 3 == 0]}).encode(), T0 + i * 1_000) for i in range(25)]
    closing = [Record(s, None, json.dumps({"sensor": "c"}).encode(), T0 + 100_000) for s in (0, 1)]
    kafka_broker.produce("readings", readings + closing)
    code = block("python", "## Kafka\n").replace("127.0.0.1:9092", kafka_broker.bootstrap_servers)
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - the README's own example
    expected = Counter(("ab"[i % 3 == 0], (T0 + i * 1_000) // 10_000 * 10_000) for i in range(25))
    written = lambda: Counter({(r.key.decode(), json.loads(r.value)["start"]): json.loads(r.value)["count"]
                               for r in kafka_broker.records("counts")})
    wait_for(lambda: written() == expected, "every window written")
    cancelled(namespace["job"])

