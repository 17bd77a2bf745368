package io.jetspark.item

import io.jetspark.core.window.{KeyedWindowResult, WindowResult}
import net.razorvine.pickle.{IObjectDeconstructor, Pickler, Unpickler}

import scala.jdk.CollectionConverters._

/** Values crossing between Python and the JVM engine: `loads` reads values that Python extracted
  * (numbers, strings, tuples, lists, dicts: Pyrolite maps them to Java), `dumps` writes JVM results
  * (Scala numbers, tuples, sequences, options, window results, kept items, dead letters) as pickles Python
  * reads.
  */
object PythonValues {
  /** Pickles instances of `cls` as a call `module.name(*args(instance))`. Pyrolite's registry is per JVM;
    * registering when this object loads makes every executor ready.
    */
  private def writeAsCall[T](cls: Class[T], module: String, name: String)(args: T => Array[AnyRef]): Unit =
    Pickler.registerCustomDeconstructor(cls, new IObjectDeconstructor {
      override def getModule: String = module
      override def getName: String = name
      override def deconstruct(o: Any): Array[AnyRef] = args(o.asInstanceOf[T])
    })

  writeAsCall(classOf[PickledItem], "jetspark._items", "loads")(p => Array[AnyRef](p.bytes))
  writeAsCall(classOf[PickledKey], "jetspark._items", "loads_key")(k => Array[AnyRef](k.bytes))
  // As PySpark pickles a Row, so that Python gets the Row that `df.collect()` would give.
  writeAsCall(classOf[RowItem], "pyspark.sql.types", "_create_row")(r =>
    Array[AnyRef](r.fields.toSeq.asJava, r.values.map(toJava)))
  writeAsCall(classOf[WindowResult[Any]], "jetspark.window", "WindowResult")(w =>
    Array(Long.box(w.start), Long.box(w.end), toJava(w.result), Boolean.box(w.isEarly)))
  writeAsCall(classOf[SimpleEvent], "jetspark.sources", "SimpleEvent")(e =>
    Array[AnyRef](Long.box(e.timestamp), Long.box(e.sequence)))
  writeAsCall(classOf[KeyedWindowResult[Any, Any]], "jetspark.window", "KeyedWindowResult")(w =>
    Array(Long.box(w.start), Long.box(w.end), toJava(w.key), toJava(w.result), Boolean.box(w.isEarly)))
  writeAsCall(classOf[DeadLetter], "jetspark.errors", "DeadLetter")(d => Array(d.record, d.stage, d.error))

  /** Byte strings behind their 4-byte big-endian lengths (`jetspark._items.pack_frames`): py4j moves one
    * byte array in one call, but a list element by element.
    */
  def packFrames(blobs: Iterable[Array[Byte]]): Array[Byte] = {
    val out = new java.io.ByteArrayOutputStream()
    val data = new java.io.DataOutputStream(out)
    blobs.foreach { b => data.writeInt(b.length); data.write(b) }
    out.toByteArray
  }

  def unpackFrames(packed: Array[Byte]): Vector[Array[Byte]] = {
    val buffer = java.nio.ByteBuffer.wrap(packed)
    Iterator.continually(buffer).takeWhile(_.hasRemaining).map { b =>
      val blob = new Array[Byte](b.getInt); b.get(blob); blob
    }.toVector
  }

  def loads(bytes: Array[Byte]): Any = fromJava(new Unpickler().loads(bytes))

  /** Pyrolite gives tuples as `Object[]` and lists as `java.util.List`; as Scala sequences they order
    * element by element, as Python orders them.
    */
  private def fromJava(value: Any): Any = value match {
    case a: Array[Byte] => a
    case a: Array[AnyRef] => a.iterator.map(fromJava).toVector
    case l: java.util.List[_] => l.asScala.iterator.map(fromJava).toVector
    case other => other
  }

  def dumps(value: Any): Array[Byte] = new Pickler(false).dumps(toJava(value))

  /** Scala structures as the Java ones Pyrolite pickles: tuples as tuples (Object[]), sequences as
    * lists, sets as sets, `None` as None, `BigInt` as an int.
    */
  def toJava(value: Any): AnyRef = value match {
    case null | None => null
    case Some(v) => toJava(v)
    case b: BigInt => b.bigInteger
    case p: Product if p.productPrefix.startsWith("Tuple") => p.productIterator.map(toJava).toArray[AnyRef]
    case s: scala.collection.Set[_] => new java.util.HashSet[AnyRef](s.iterator.map(toJava).toSeq.asJava)
    case s: scala.collection.Map[_, _] => s.iterator.map { case (k, v) => toJava(k) -> toJava(v) }.toMap.asJava
    case s: scala.collection.Iterable[_] => s.iterator.map(toJava).toSeq.asJava
    case a: Array[Byte] => a
    case a: Array[_] => a.map(toJava)
    case other => other.asInstanceOf[AnyRef]
  }
}
