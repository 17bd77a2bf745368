package io.jetspark.engine.spark

import org.apache.spark.serializer.{KryoSerializer, SerializerInstance}
import org.apache.spark.{SparkConf, SparkEnv}

import java.nio.ByteBuffer

/** How partial results cross a shuffle: an aggregation's accumulators, a window's frames. They are the
  * core's accumulator objects (and the items some of them keep), many small ones per row, so they are
  * written with Spark's Kryo serializer, which writes a field without Java serialization's per-object class
  * descriptors, handle look-ups and reflection; Kryo knows Scala's collections through the serializers
  * Spark registers, and classes it has no serializer for are written field by field.
  */
private[spark] object PartialCodec {
  private lazy val serializer: KryoSerializer = {
    val conf = Option(SparkEnv.get).map(_.conf.clone()).getOrElse(new SparkConf(false))
    // Nothing to register: the classes vary with the operations, and an unregistered class costs its name once.
    val kryo = new KryoSerializer(conf.set("spark.kryo.registrationRequired", "false"))
    kryo.setDefaultClassLoader(Thread.currentThread().getContextClassLoader)
    kryo
  }

  // A serializer instance is not thread-safe; tasks run on several threads.
  private val instances = ThreadLocal.withInitial[SerializerInstance](() => serializer.newInstance())

  def toBytes(value: Any): Array[Byte] = {
    val buffer = instances.get().serialize[Any](value)
    val bytes = new Array[Byte](buffer.remaining())
    buffer.get(bytes)
    bytes
  }

  def fromBytes(bytes: Array[Byte]): Any = instances.get().deserialize[Any](ByteBuffer.wrap(bytes))
}
