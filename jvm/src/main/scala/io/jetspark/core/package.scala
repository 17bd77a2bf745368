package io.jetspark

/** The processor core: pure Scala, no Spark. */
package object core
