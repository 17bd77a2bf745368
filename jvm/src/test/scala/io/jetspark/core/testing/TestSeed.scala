package io.jetspark.core.testing

/** The one seed of a test run's random tests, so that a failure can be run again exactly.
  *
  * `JETSPARK_TEST_SEED` where set (`dev/test.sh` draws one per run, prints it and hands it to both sbt
  * and pytest), else a fresh one. Every random test derives its draws from this seed (plus a number of
  * its own where it runs several streams), so one run is one fixed seed, and the next run explores
  * others.
  */
object TestSeed {
  val base: Long = sys.env.get("JETSPARK_TEST_SEED").filter(_.nonEmpty).map(_.trim.toLong).getOrElse(System.nanoTime())

  Console.err.println(s"JVM random tests: seed $base (repeat with JETSPARK_TEST_SEED=$base)")

  /** The seed of a test's `n`th stream of draws. */
  def apply(n: Long): Long = base + n * 0x9E3779B97F4A7C15L
}
