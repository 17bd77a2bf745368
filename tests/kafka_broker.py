"""A real Kafka broker for tests: one JVM in KRaft mode (broker and controller in one node) on free
loopback ports, run from the jars `bash dev/bootstrap.sh` fetches into target/kafka-broker/ (no Docker).

    broker = KafkaBroker().start()
    broker.create_topic("readings", partitions=4)
    broker.produce("readings", [Record(partition=0, key=b"a", value=b"1", timestamp_ms=1_000)])
    spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)...
    broker.restart()  # the same ports, the same data
    broker.stop()

Tests get one from the `kafka_broker` fixture (tests/conftest.py), one per test module.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

BROKER_JARS = Path(__file__).resolve().parent.parent / "target" / "kafka-broker"
LOOPBACK = "127.0.0.1"

# Settings for one node on loopback: every internal topic with one replica, and short heartbeats, so that
# a restarted broker is back in seconds (the controller fences it only after the session timeout). Topics
# are made by create_topic only: one auto-created by a misspelt name would read as empty instead of failing.
# Records are kept whatever their timestamps: the tests' event times lie in the past, and time-based
# retention would delete them under a running job (its fetch position then out of range).
SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{host}:{controller_port}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}
advertised.listeners=PLAINTEXT://{host}:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={log_dir}
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=1500
log.retention.ms=-1
"""

# A small heap and the quick compiler: the machine has 2 cores and Spark's JVM beside this one, and the
# broker of a test carries little traffic.
JVM_OPTIONS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


class Record(NamedTuple):
    """One Kafka record as the tests produce and read it."""

    partition: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


class KafkaBroker:
    """One Kafka broker in its own JVM, bound to 127.0.0.1 only, with its data in a temporary directory.

    :meth:`start` formats the storage, starts the JVM and waits until the broker answers; :meth:`restart`
    stops it and starts it again on the same ports and data; :meth:`stop` ends it and removes the
    directory. A broker's JVM never outlives the Python process: it is ended when its broker is stopped,
    collected, or left running at exit, and (through ``setpriv --pdeathsig``) when the thread that started
    it dies, even killed.
    """

    def __init__(self, jars: Path = BROKER_JARS, start_timeout_s: float = 60.0) -> None:
        if not any(jars.glob("*.jar")):
            raise FileNotFoundError(f"no Kafka broker jars in {jars}: `bash dev/bootstrap.sh` fetches them")
        self._jars = jars
        self._start_timeout_s = start_timeout_s
        self._dir = Path(tempfile.mkdtemp(prefix="jetspark-kafka-"))
        self._remove_dir = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._port, self._controller_port = free_ports(2)
        self._process: subprocess.Popen[bytes] | None = None
        self._log_start = 0  # where the log of the latest start begins
        self._end_process: weakref.finalize | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker, for ``kafka.bootstrap.servers`` and Kafka clients."""
        return f"{LOOPBACK}:{self._port}"

    @property
    def log_path(self) -> Path:
        """The broker's log (its JVM's output, of every start)."""
        return self._dir / "broker.log"

    def start(self) -> KafkaBroker:
        """Formats the storage (the first time), starts the broker and waits until it answers; returns it."""
        if self._process is not None:
            raise RuntimeError("the broker is running already")
        if not self._remove_dir.alive:
            raise RuntimeError("the broker was stopped for good, its data removed: start a new one")
        properties = self._dir / "server.properties"
        properties.write_text(SERVER_PROPERTIES.format(host=LOOPBACK, port=self._port,
                                                       controller_port=self._controller_port,
                                                       log_dir=self._dir / "data"))
        if not (self._dir / "data" / "meta.properties").exists():
            # (In its `=` form: an id may start with "-", which would read as an option.)
            self._run_java("kafka.tools.StorageTool", "format", f"--cluster-id={new_cluster_id()}",
                           "--config", str(properties))
        with open(self.log_path, "ab") as log:
            self._log_start = log.tell()
            self._process = subprocess.Popen(self._java_command("kafka.Kafka", str(properties)),
                                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self._end_process = weakref.finalize(self, end_process, self._process)
        self._wait_until_ready()
        return self

    def restart(self) -> None:
        """Stops the broker and starts it again, on the same ports and with the same data."""
        self._stop_process()
        self.start()

    def stop(self) -> None:
        """Ends the broker (SIGTERM, then SIGKILL after 10 s) and removes its directory, data and log."""
        self._stop_process()
        self._remove_dir()

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Creates topic ``name`` and waits until every partition has a leader."""
        with KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=10_000) as admin:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}})
            admin.wait_for_topics([name], timeout_ms=30_000)

    def produce(self, topic: str, records: Iterable[Record]) -> None:
        """Writes ``records`` to ``topic``, each to its partition with its timestamp, and waits for the acks."""
        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers)
        try:
            sent = [producer.send(topic, key=r.key, value=r.value, partition=r.partition, timestamp_ms=r.timestamp_ms)
                    for r in records]
            producer.flush(timeout=30)
            for future in sent:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)

    def records(self, topic: str) -> list[Record]:
        """Every committed record in ``topic`` now, by partition and offset (what a ``read_committed``
        consumer reads: not those of open or aborted transactions)."""
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers, isolation_level="read_committed",
                                 enable_auto_commit=False)
        try:
            partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            if not partitions:
                raise ValueError(f"no topic {topic!r} on the broker")
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            ends = consumer.end_offsets(partitions)
            got: list[tuple[int, int, Record]] = []
            deadline = time.monotonic() + 30
            while any(consumer.position(tp) < ends[tp] for tp in partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {topic!r} did not reach the end offsets {ends} in 30 s")
                for tp, messages in consumer.poll(timeout_ms=500).items():
                    got.extend((tp.partition, m.offset, Record(tp.partition, m.key, m.value, m.timestamp))
                               for m in messages)
            return [record for _, _, record in sorted(got, key=lambda g: g[:2])]
        finally:
            consumer.close()

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._process is not None else "stopped"
        return f"KafkaBroker({self.bootstrap_servers}, {state})"

    def _java_command(self, main_class: str, *args: str) -> list[str]:
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else "java"
        command = [java, *JVM_OPTIONS, "-cp", str(self._jars / "*"), main_class, *args]
        # setpriv has the kernel kill the JVM when the thread that started it dies, however it dies: after a
        # SIGKILL no finalizer of this process runs.
        setpriv = shutil.which("setpriv")
        return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else command

    def _run_java(self, main_class: str, *args: str) -> None:
        done = subprocess.run(self._java_command(main_class, *args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{main_class} {' '.join(args)} failed ({done.returncode}):\n"
                               f"{tail((done.stdout + done.stderr).splitlines(), 40)}")

    def _wait_until_ready(self) -> None:
        # Ready is when the broker answers a metadata request and lists itself unfenced: its port takes
        # connections earlier, and a KRaft broker serves requests only once the controller has unfenced it.
        assert self._process is not None
        deadline = time.monotonic() + self._start_timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._stop_process()
                raise RuntimeError(f"the Kafka broker exited with {code} while starting; {self._log_excerpt()}")
            try:
                with KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, bootstrap_timeout_ms=1_000,
                                      request_timeout_ms=1_000) as admin:
                    brokers = admin.describe_cluster()["brokers"]
                if any(not b.get("is_fenced") for b in brokers):
                    return
            except (KafkaError, OSError) as e:
                last_error = e
            time.sleep(0.1)
        excerpt = self._log_excerpt()  # (before the broker's shutdown adds to it)
        self._stop_process()
        raise TimeoutError(f"the Kafka broker at {self.bootstrap_servers} did not answer within "
                           f"{self._start_timeout_s} s (last: {last_error!r}); {excerpt}")

    def _log_excerpt(self) -> str:
        # The first error says why a broker failed; the lines after it are its exception. What the broker
        # logs last is mostly its shutdown.
        with open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            lines = log.read().decode(errors="replace").splitlines()
        first_error = next((i for i, line in enumerate(lines) if " ERROR " in line), None)
        error = "" if first_error is None else "its first error:\n" + "\n".join(lines[first_error:first_error + 6])
        return f"{error}\nits log ends with:\n{tail(lines, 20)}".lstrip()

    def _stop_process(self) -> None:
        if self._end_process is not None:
            self._end_process()
        self._process = self._end_process = None


def end_process(process: subprocess.Popen[bytes]) -> None:
    """Ends ``process``: SIGTERM (a broker then flushes and closes its logs), SIGKILL after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that are free on 127.0.0.1 now (all held open until all are found)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def new_cluster_id() -> str:
    """A random Kafka cluster id: a UUID in URL-safe base64 without padding, as ``kafka-storage.sh random-uuid``."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def tail(lines: list[str], count: int) -> str:
    """The last ``count`` of ``lines``, as text."""
    return "\n".join(lines[-count:])
