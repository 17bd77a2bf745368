package io.jetspark.core.snapshot

import java.io._

/** Java serialization that resolves classes through the thread's context class loader, so that classes
  * of the jetspark jar are found inside Spark tasks (where the jar is not on the system class path).
  */
object JavaSerialization {
  def toBytes(value: Any): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(value)
    out.close()
    bytes.toByteArray
  }

  def fromBytes(data: Array[Byte]): Any = {
    val in = input(new ByteArrayInputStream(data))
    try in.readObject() finally in.close()
  }

  def input(stream: InputStream): ObjectInputStream = new ObjectInputStream(stream) {
    override def resolveClass(desc: ObjectStreamClass): Class[_] =
      try Class.forName(desc.getName, false, Thread.currentThread().getContextClassLoader)
      catch { case _: ClassNotFoundException => super.resolveClass(desc) }
  }
}
