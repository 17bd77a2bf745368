package io.jetspark.engine.spark.epoch

import org.apache.spark.sql.SparkSession
import org.apache.spark.{SparkEnv, TaskContext}

import java.nio.file.{Files, Paths}

/** A test-only hook of the fault suite (tests/fault_suite.py). With the Spark conf
  * `spark.jetspark.test.failCommits` set to a directory, the first attempt of every stateful vertex's
  * partition 0 fails in each odd epoch, right after it committed its state, and leaves a file in that
  * directory for the suite to count: the retried attempt must load the version before and commit the same
  * state again, and the epoch's output must come out once. Unset (always, outside the suite), it does
  * nothing.
  */
private[epoch] object InjectedTaskFailures {
  val Conf = "spark.jetspark.test.failCommits"

  private lazy val markers: Option[String] = Option(SparkEnv.get).flatMap(_.conf.getOption(Conf))

  /** With the session conf `spark.jetspark.test.failAfterKafkaCommit` set to a directory: fails the epoch
    * the first time a Kafka sink `sink` commits an odd epoch's transaction, before the query commits the
    * epoch (a file in that directory says it did), so that the epoch is replayed with its records
    * committed in Kafka already.
    */
  def afterKafkaCommit(spark: SparkSession, sink: String, epoch: Long): Unit =
    spark.conf.getOption(KafkaConf).filter(_ => epoch % 2 == 1).foreach { directory =>
      val marker = Paths.get(directory, s"${sink.replaceAll("[^A-Za-z0-9]", "_")}-$epoch")
      if (!Files.exists(marker)) {
        Files.createFile(marker)
        throw new IllegalStateException(s"injected failure: Kafka sink '$sink' committed epoch $epoch")
      }
    }

  /** The session conf of [[afterKafkaCommit]]'s hook. */
  val KafkaConf = "spark.jetspark.test.failAfterKafkaCommit"

  /** Fails the running task where the hook says so, after partition `partition` of `vertex` committed `epoch`. */
  def afterCommit(vertex: String, partition: Int, epoch: Long): Unit = markers.foreach { directory =>
    val task = TaskContext.get()
    if (partition == 0 && epoch % 2 == 1 && task.attemptNumber() == 0) {
      Files.createFile(Paths.get(directory, s"${vertex.replaceAll("[^A-Za-z0-9]", "_")}-$epoch-${task.taskAttemptId()}"))
      throw new IllegalStateException(s"injected task failure: vertex '$vertex', partition 0, epoch $epoch, after its commit")
    }
  }
}
