package io.jetspark.engine.spark

import org.apache.spark.serializer.{KryoSerializer, SerializerInstance}
import org.apache.spark.{SparkConf, SparkEnv}

import java.nio.ByteBuffer

/** How the partial results of vertex `stage` cross a shuffle: an aggregation's accumulators, a window's
  * frames. They are the core's accumulator objects (and the items some of them keep), many small ones per
  * row, so they are written with Spark's Kryo serializer, which writes a field without Java
  * serialization's per-object class descriptors, handle look-ups and reflection; Kryo knows Scala's
  * collections through the serializers Spark registers, and classes it has no serializer for are written
  * field by field.
  *
  * Made on the driver and shipped in a task's closure: each task reads its own copy, which makes its own
  * serializer instance on first use (an instance is not thread-safe, and its buffer grows to the largest
  * value written, so it goes away with the task). A value that cannot be written or read fails the stage.
  */
private[spark] final class PartialCodec(stage: String) extends Serializable {
  @transient private lazy val instance: SerializerInstance = PartialCodec.serializer.newInstance()

  def toBytes(value: Any): Array[Byte] = failingTheStage("written") {
    val buffer = instance.serialize[Any](value)
    val bytes = new Array[Byte](buffer.remaining())
    buffer.get(bytes)
    bytes
  }

  def fromBytes(bytes: Array[Byte]): Any = failingTheStage("read")(instance.deserialize[Any](ByteBuffer.wrap(bytes)))

  private def failingTheStage[T](what: String)(body: => T): T =
    try body
    catch { case e: Exception => throw new StageFailedException(stage, s"its partial results could not be $what: $e", e) }
}

private object PartialCodec {
  private lazy val serializer: KryoSerializer = {
    val conf = Option(SparkEnv.get).map(_.conf.clone()).getOrElse(new SparkConf(false))
    // Nothing to register: the classes vary with the operations, and an unregistered class costs its name
    // once. One key's frames of a partition are one value, which may be large: no cap below what an array
    // holds (Spark's default is 64 MiB). No reference tracking: accumulators and the items they keep are
    // trees of values (no cycles, no identity that matters), and tracking looked up every object written
    // and read in an identity map, a sixth of the cost of moving max_by's frames.
    new KryoSerializer(conf.set("spark.kryo.registrationRequired", "false").set("spark.kryoserializer.buffer.max", "2047m")
      .set("spark.kryo.referenceTracking", "false"))
  }
}
