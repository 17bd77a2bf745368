package io.jetspark.item

import io.jetspark.core.aggregate.AnyOrdering

/** What an operation that keeps items (`min_by`, `top_n`, ...) keeps of an extraction. */
private[jetspark] final case class Kept(item: AnyRef, value: Any, position: Long)

private[jetspark] object Kept {
  /** By value, then the earlier item greater: `max_by`/`top_n` under it prefer the first of tied items. */
  val EarlierGreater: Ordering[Kept] = (a: Kept, b: Kept) => {
    val byValue = AnyOrdering.compare(a.value, b.value)
    if (byValue != 0) byValue else java.lang.Long.compare(b.position, a.position)
  }
  /** By value, then the earlier item less: `min_by`/`bottom_n` under it prefer the first of tied items. */
  val EarlierLess: Ordering[Kept] = (a: Kept, b: Kept) => {
    val byValue = AnyOrdering.compare(a.value, b.value)
    if (byValue != 0) byValue else java.lang.Long.compare(a.position, b.position)
  }
}
