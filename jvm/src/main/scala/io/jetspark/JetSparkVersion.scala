package io.jetspark

/** The version of this jar, as build.sbt wrote it (the same number as the Python wheel's). */
object JetSparkVersion {
  lazy val current: String = {
    val props = new java.util.Properties()
    val in = getClass.getResourceAsStream("/io/jetspark/version.properties")
    if (in == null) "unknown" else try { props.load(in); props.getProperty("version", "unknown") } finally in.close()
  }
}
