package io.jetspark.pipeline.transform

import io.jetspark.pipeline.definition.{Extractor, JoinClause}

/** Joins each primary item (input 0) with the items of the enriching inputs (1..n) whose key matches,
  * one clause per enriching input. A stateless mapping of the primary input: the enriching inputs are
  * collected in full first, so their order does not matter. `mapper` gets `(left, right1, ..., rightN)`
  * (a missing match is null); without a mapper the output is that tuple. `inner` drops primary items
  * with no match on some side.
  */
final class HashJoinTransform(
    ups: Seq[Transform],
    rebs: Seq[Rebalance],
    val clauses: Seq[JoinClause],
    val mapper: Option[Extractor],
    val inner: Boolean,
) extends Transform(ups, rebs) {
  require(clauses.size == ups.size - 1, "one join clause per enriching input")
  override protected def defaultName: String = if (inner) "innerHashJoin" else "hashJoin"
  override def orderClass: OrderClass = OrderClass.Insensitive
  override def orderRelevantInputs: Seq[Int] = Seq(0)
  override def describe: String = s"$defaultName on ${clauses.map(_.describe).mkString("; ")}"
}
