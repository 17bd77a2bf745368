// One version number for the jar and the wheel: pyproject.toml owns it.
val projectVersion: String = {
  val versionLine = """(?m)^version\s*=\s*"([^"]+)"""".r
  versionLine.findFirstMatchIn(IO.read(file("pyproject.toml")))
    .map(_.group(1))
    .getOrElse(sys.error("build.sbt: no version = \"...\" line in pyproject.toml"))
}

// Spark exactly as the pyspark pin ships it. Spark 4.3.0 is not on Maven Central, so the build compiles
// against the very jars inside the pinned pyspark (found in the project venv, or SPARK_JARS_DIR).
val sparkVersion = "4.3.0"

def pysparkJarsDir(base: File): File = {
  val candidates = sys.env.get("SPARK_JARS_DIR").map(file).toSeq ++
    ((base / ".venv" / "lib") * "python*" / "site-packages" / "pyspark" / "jars").get
  val dir = candidates.find(d => (d / s"spark-sql_2.13-$sparkVersion.jar").exists)
  dir.getOrElse(sys.error(
    s"build.sbt: no spark-sql_2.13-$sparkVersion.jar found in ${candidates.mkString(", ")}; " +
      "run dev/bootstrap.sh (it installs the pinned pyspark into .venv) or set SPARK_JARS_DIR"))
}

// What Spark's own launcher passes to a JDK 17 JVM (org.apache.spark.launcher.JavaModuleOptions).
val sparkJavaModuleOptions = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true",
) ++ Seq(
  "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
  "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
  "sun.security.action", "sun.util.calendar",
).map(p => s"--add-opens=java.base/$p=ALL-UNNAMED")

lazy val jetspark = (project in file("."))
  .settings(
    name := "jetspark",
    organization := "io.jetspark",
    version := projectVersion,
    scalaVersion := "2.13.18",
    description := "Hazelcast Jet's pipeline model (windows with deduct, watermark coalescing, ordering, snapshots) on Apache Spark",
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    homepage := Some(url("https://github.com/jetspark/jetspark")),
    scmInfo := Some(ScmInfo(url("https://github.com/jetspark/jetspark"), "scm:git:https://github.com/jetspark/jetspark.git")),
    developers := List(Developer("jetspark", "The jetspark developers", "dev@jetspark.io", url("https://github.com/jetspark"))),
    publishMavenStyle := true,
    pomIncludeRepository := { _ => false },

    Compile / scalaSource := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "jvm" / "src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    // The jar knows its own version, so Python can tell a stale jar from the one it expects.
    Compile / resourceGenerators += Def.task {
      val f = (Compile / resourceManaged).value / "io" / "jetspark" / "version.properties"
      IO.write(f, s"version=${version.value}\n")
      Seq(f)
    }.taskValue,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_", "-release", "17"),

    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
    ),

    // Provided: on the compile and test classpaths, never in the jar.
    Compile / unmanagedJars ++= (pysparkJarsDir(baseDirectory.value) * "*.jar").classpath,
    // The Kafka client the wheel bundles beside Spark's connector (dev/bootstrap.sh fetches it first), for
    // the transactional Kafka sink; provided too.
    Compile / unmanagedJars ++= (baseDirectory.value / "python" / "jetspark" / "jars" / "kafka" * "kafka-clients-*.jar").classpath,
    // The POM still declares Spark as provided, for JVM users who depend on the published artifact.
    pomPostProcess := { node =>
      import scala.xml._
      val spark = <dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql_2.13</artifactId><version>{sparkVersion}</version><scope>provided</scope></dependency>
      new transform.RuleTransformer(new transform.RewriteRule {
        override def transform(n: Node): Seq[Node] = n match {
          case e: Elem if e.label == "dependencies" => e.copy(child = e.child ++ spark)
          case other => other
        }
      }).transform(node).head
    },

    // Spark on JDK 17 needs these opens; tests that start Spark run in a forked JVM.
    Test / fork := true,
    Test / javaOptions ++= Seq("-Xmx2g", "-Dspark.driver.host=127.0.0.1", "-Dspark.driver.bindAddress=127.0.0.1") ++
      sparkJavaModuleOptions,
    Test / envVars := Map("SPARK_LOCAL_IP" -> "127.0.0.1") ++ sys.env.get("JETSPARK_TEST_SEED").map("JETSPARK_TEST_SEED" -> _),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
  )

// JVM benchmarks: `dev/sbt "benchmarks/runMain <class>"`. Each compares against a baseline in the same run.
lazy val benchmarks = (project in file("benchmarks/jvm"))
  .dependsOn(jetspark)
  .settings(
    scalaVersion := "2.13.18",
    publish / skip := true,
    Compile / unmanagedJars ++= (pysparkJarsDir((ThisBuild / baseDirectory).value) * "*.jar").classpath,
    run / fork := true,
    run / javaOptions ++= Seq("-Xmx4g", "-Xss4m", "-Dspark.driver.host=127.0.0.1", "-Dspark.driver.bindAddress=127.0.0.1") ++
      sparkJavaModuleOptions,
    run / envVars := Map("SPARK_LOCAL_IP" -> "127.0.0.1"),
  )
