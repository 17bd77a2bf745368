package io.jetspark.pipeline.definition

/** How a hash join matches: `leftKey` of the primary item equals `rightKey` of the enriching item. */
final case class JoinClause(leftKey: Extractor, rightKey: Extractor) {
  def describe: String = s"${leftKey.describe} = ${rightKey.describe}"
}

object JoinClause {
  def on(leftKey: Extractor, rightKey: Extractor): JoinClause = JoinClause(leftKey, rightKey)
  def on(leftField: String, rightField: String): JoinClause =
    JoinClause(Extractor.FieldName(leftField), Extractor.FieldName(rightField))
}
