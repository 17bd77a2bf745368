package io.jetspark.engine.spark.rows

import io.jetspark.item.{Kept, PickledItem, PickledKey, RowItem}
import com.esotericsoftware.kryo.io.{Input, Output}
import com.esotericsoftware.kryo.{Kryo, Serializer}
import org.apache.spark.serializer.{KryoRegistrator, KryoSerializer, SerializerInstance}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
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
    // One key's frames of a partition are one value, which may be large: no cap below what an array
    // holds (Spark's default is 64 MiB). No reference tracking: accumulators and the items they keep are
    // trees of immutable values (no cycles; a value held twice, as a pick holds its kept item's value, is
    // read back as two equal copies), and tracking looked up every object written and read in an identity
    // map, a sixth of the cost of moving max_by's frames.
    new KryoSerializer(conf.set("spark.kryo.registrationRequired", "false").set("spark.kryoserializer.buffer.max", "2047m")
      .set("spark.kryo.referenceTracking", "false").set("spark.kryo.registrator", classOf[PartialRegistrator].getName))
  }
}

/** The classes partials are mostly made of, registered so that Kryo writes a number for each rather than
  * its name (the same registrations on every executor give the same numbers; any other class still goes
  * by name). The accumulators that cross shuffles by the hundred thousand (a `max_by` frame, a count) and
  * what they hold get serializers of their own: Kryo would otherwise make each through reflection, as
  * they have no constructor without arguments, and write each field through a generic field serializer.
  */
private[spark] final class PartialRegistrator extends KryoRegistrator {
  import io.jetspark.core.aggregate._

  override def registerClasses(kryo: Kryo): Unit = {
    // A pick of a kept item (every built-in max_by/min_by) ranks by the kept item itself (its value,
    // then its position): written once.
    val (empty, kept, other) = (0, 1, 2)
    kryo.register(classOf[PickAccumulator], serializer[PickAccumulator](
      (k, out, a) => a.item match {
        case _ if a.isEmpty => out.writeByte(empty)
        case item: Kept if item eq a.value.asInstanceOf[AnyRef] =>
          out.writeByte(kept); k.writeObject(out, item)
        case item => out.writeByte(other); k.writeClassAndObject(out, item); k.writeClassAndObject(out, a.value)
      },
      (k, in) => in.readByte() match {
        case `empty` => new PickAccumulator()
        case `kept` => val item = k.readObject(in, classOf[Kept]); new PickAccumulator(item, item, isEmpty = false)
        case _ => val item = k.readClassAndObject(in); new PickAccumulator(item, k.readClassAndObject(in), isEmpty = false)
      }))
    kryo.register(classOf[Kept], serializer[Kept](
      (k, out, kept) => { k.writeClassAndObject(out, kept.item); k.writeClassAndObject(out, kept.value); out.writeVarLong(kept.position, true) },
      (k, in) => {
        val (item, value) = (k.readClassAndObject(in).asInstanceOf[AnyRef], k.readClassAndObject(in))
        Kept(item, value, in.readVarLong(true))
      }))
    kryo.register(classOf[LongAccumulator], serializer[LongAccumulator](
      (_, out, a) => out.writeVarLong(a.value, false), (_, in) => new LongAccumulator(in.readVarLong(false))))
    kryo.register(classOf[AveragingAccumulator], serializer[AveragingAccumulator](
      (k, out, a) => { out.writeVarLong(a.count, true); k.writeClassAndObject(out, a.sum) },
      (k, in) => { val count = in.readVarLong(true); new AveragingAccumulator(count, k.readClassAndObject(in)) }))
    Seq(classOf[DoubleAccumulator], classOf[NumberAccumulator], classOf[VarianceAccumulator], classOf[LinearTrendAccumulator],
      classOf[RankedItem], classOf[RankingAccumulator], classOf[PickledItem], classOf[PickledKey], classOf[RowItem],
      classOf[UnsafeRow]).foreach(kryo.register)
  }

  private def serializer[T](writeFn: (Kryo, Output, T) => Unit, readFn: (Kryo, Input) => T): Serializer[T] = new Serializer[T] {
    override def write(kryo: Kryo, output: Output, value: T): Unit = writeFn(kryo, output, value)
    override def read(kryo: Kryo, input: Input, cls: Class[T]): T = readFn(kryo, input)
  }
}
