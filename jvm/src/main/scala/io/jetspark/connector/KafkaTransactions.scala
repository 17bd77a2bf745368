package io.jetspark.connector

import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, ListConsumerGroupOffsetsOptions}
import org.apache.kafka.clients.consumer.{ConsumerGroupMetadata, OffsetAndMetadata}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.ByteArraySerializer

import java.util.Properties
import scala.jdk.CollectionConverters._

/** A Kafka sink's exactly-once writer (docs/kafka.md, "Exactly once"): each epoch's records go out in one
  * Kafka transaction, committed with the epoch, as Jet's Kafka sink commits its transaction with a
  * snapshot.
  *
  * The transaction also commits the epoch's number, as the offset of a consumer group of the sink's own
  * (`id`) on partition 0 of the topic: the records and the number are visible together or not at all. An
  * epoch replayed (after a failure, or by a job resumed from its checkpoint) whose number is committed
  * already writes nothing. A transaction left open by a writer that died is aborted when the next writer
  * of the same `id` (its transactional id) starts, so a `read_committed` reader never sees its records.
  *
  * `id` must stay the same for the life of the job's checkpoint, and be new with a new checkpoint; the
  * producer lives until [[close]].
  * `afterCommit` is called with each epoch committed (a test's fault hook).
  */
final class KafkaTransactions(bootstrapServers: String, topic: String, options: Map[String, String], id: String,
    afterCommit: Long => Unit = _ => ()) {
  private val marker = new TopicPartition(topic, 0)

  // The connector's options name the clients' properties with a "kafka." prefix.
  private def properties(extra: (String, String)*): Properties = {
    val props = new Properties()
    options.collect { case (k, v) if k.startsWith("kafka.") => props.put(k.stripPrefix("kafka."), v) }
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    extra.foreach { case (k, v) => props.put(k, v) }
    props
  }

  private var producer: Option[KafkaProducer[Array[Byte], Array[Byte]]] = None
  // The last epoch committed: read once the producer has started, then kept as this writer commits.
  private var committed: Option[Long] = None

  /** The producer, started on the first epoch: starting fences an earlier writer of the same id and ends
    * its open transaction, so what that writer committed is final by the time it is read.
    */
  private def started(): KafkaProducer[Array[Byte], Array[Byte]] = producer.getOrElse {
    val p = new KafkaProducer[Array[Byte], Array[Byte]](properties(ProducerConfig.TRANSACTIONAL_ID_CONFIG -> id,
      ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG -> "true"), new ByteArraySerializer, new ByteArraySerializer)
    try {
      p.initTransactions()
      committed = committedEpoch()
    } catch { case e: Throwable => p.close(); throw e }
    producer = Some(p)
    p
  }

  /** The epoch number the sink's group holds, waiting for transactions that commit offsets to settle. */
  private def committedEpoch(): Option[Long] = {
    val admin = Admin.create(properties())
    try Option(admin.listConsumerGroupOffsets(id, new ListConsumerGroupOffsetsOptions().requireStable(true))
      .partitionsToOffsetAndMetadata().get().get(marker)).map(_.offset)
    finally admin.close()
  }

  /** Writes epoch `epoch`'s records (key, value; asked for only where it writes) in one transaction with its
    * number, unless that epoch is committed already.
    */
  def writeEpoch(records: () => Iterator[(Array[Byte], Array[Byte])], epoch: Long): Unit = {
    val p = started()
    if (!committed.exists(_ >= epoch)) {
      p.beginTransaction()
      try {
        records().foreach { case (key, value) => p.send(new ProducerRecord(topic, key, value)) }
        p.sendOffsetsToTransaction(Map(marker -> new OffsetAndMetadata(epoch, s"jetspark epoch $epoch")).asJava,
          new ConsumerGroupMetadata(id))
        p.commitTransaction()
      } catch {
        case e: Throwable =>
          // A producer that cannot abort (fenced by a newer writer, say) is done: the next epoch starts anew.
          try p.abortTransaction() catch { case abort: Throwable => e.addSuppressed(abort); close() }
          throw e
      }
      committed = Some(epoch)
      afterCommit(epoch)
    }
  }

  /** Closes the producer; a later epoch starts another. */
  def close(): Unit = { producer.foreach(_.close()); producer = None; committed = None }
}
