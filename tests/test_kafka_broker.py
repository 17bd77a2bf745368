"""A real Kafka broker (tests/kafka_broker.py) and Spark's Kafka connector, which the package bundles:
what a producer wrote to chosen partitions with chosen timestamps is what Spark reads, in a batch and in a
stream, also across a broker restart; and what Spark writes is what a consumer reads."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kafka_broker import KafkaBroker, Record

T0 = 1_700_000_000_000  # (ms) event times well away from the broker's clock: they come from the producer


def records(count: int, partitions: int, first: int = 0) -> list[Record]:
    """``count`` records spread over ``partitions``, with timestamps out of order within a partition, a
    record without a key and one without a value."""
    return [Record(partition=i % partitions,
                   key=None if i == first + 1 else f"key-{i}".encode(),
                   value=None if i == first + 2 else f"value-{i}".encode(),
                   timestamp_ms=T0 + (i * 7_919) % 50_000)
            for i in range(first, first + count)]


def by_partition(in_order: Iterable[Record]) -> list[Record]:
    """Records by partition, each partition's in the order given (the order produced, or read: offsets')."""
    return sorted(in_order, key=lambda r: r.partition)  # (a stable sort)


def spark_records(df) -> list[Record]:
    """The rows of a DataFrame from Spark's ``kafka`` source as records, by partition and offset."""
    rows = df.selectExpr("partition", "offset", "key", "value", "unix_millis(timestamp) AS ts",
                         "timestampType").collect()
    # 0 is CreateTime: the producer's timestamp, not the broker's.
    assert {row.timestampType for row in rows} <= {0}
    return [Record(row.partition, bytes(row.key) if row.key is not None else None,
                   bytes(row.value) if row.value is not None else None, row.ts)
            for row in sorted(rows, key=lambda row: (row.partition, row.offset))]


def read_batch(jet, broker: KafkaBroker, topic: str) -> list[Record]:
    """Everything in ``topic`` now, read by a Spark batch query."""
    df = (jet.spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", topic).option("startingOffsets", "earliest").load())
    return spark_records(df)


def read_stream(jet, broker: KafkaBroker, topic: str, checkpoint: Path) -> list[Record]:
    """What a streaming query with ``checkpoint`` reads of ``topic`` now (``availableNow``): everything
    the first time, and then what came after the last run."""
    got: list[Record] = []
    df = (jet.spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", topic).option("startingOffsets", "earliest").load())
    query = (df.writeStream.trigger(availableNow=True).option("checkpointLocation", str(checkpoint))
             .foreachBatch(lambda batch, _epoch: got.extend(spark_records(batch))).start())
    assert query.awaitTermination(timeout=120), "the availableNow query did not finish in 120 s"
    assert query.exception() is None, query.exception()
    return by_partition(got)  # (foreachBatch runs the micro-batches in order)


def test_a_batch_read_gets_each_record_in_its_partition_with_its_timestamp(jet, kafka_broker: KafkaBroker):
    kafka_broker.create_topic("batch", partitions=4)
    produced = records(24, partitions=4)
    kafka_broker.produce("batch", produced)
    got = read_batch(jet, kafka_broker, "batch")
    assert got == by_partition(produced)
    assert {r.partition for r in got} == {0, 1, 2, 3}


def test_a_stream_read_available_now_gets_the_same_records(jet, kafka_broker: KafkaBroker, tmp_path: Path):
    kafka_broker.create_topic("stream", partitions=4)
    produced = records(24, partitions=4)
    kafka_broker.produce("stream", produced)
    assert read_stream(jet, kafka_broker, "stream", tmp_path / "checkpoint") == by_partition(produced)


def test_what_spark_writes_to_a_partition_a_consumer_reads_there(jet, kafka_broker: KafkaBroker):
    kafka_broker.create_topic("written", partitions=4)
    rows = [(r.partition, r.key, r.value) for r in records(12, partitions=4)]
    df = jet.spark.createDataFrame(rows, "partition INT, key BINARY, value BINARY").coalesce(1)
    (df.write.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
     .option("topic", "written").save())
    got = kafka_broker.records("written")
    assert [(r.partition, r.key, r.value) for r in got] == sorted(rows, key=lambda row: row[0])


def test_a_broker_restart_keeps_the_records_and_the_stream_goes_on_after_them(jet, kafka_broker: KafkaBroker,
                                                                              tmp_path: Path):
    kafka_broker.create_topic("restarted", partitions=4)
    before, after = records(16, partitions=4), records(8, partitions=4, first=16)
    kafka_broker.produce("restarted", before)
    checkpoint = tmp_path / "checkpoint"
    assert read_stream(jet, kafka_broker, "restarted", checkpoint) == by_partition(before)

    kafka_broker.restart()
    kafka_broker.produce("restarted", after)

    assert read_batch(jet, kafka_broker, "restarted") == by_partition(before + after)
    # The offsets in the checkpoint still mean the same records: the stream reads only the new ones.
    assert read_stream(jet, kafka_broker, "restarted", checkpoint) == by_partition(after)
