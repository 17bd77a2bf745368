"""Event time of items entering a window: timestamps are integer milliseconds since the epoch."""

from __future__ import annotations

import datetime as _dt
import numbers
from typing import Any

#: The range of 64-bit timestamps: every window an event falls in must lie within it (as the JVM's
#: ``SlidingWindowPolicy`` and ``SessionWindowPolicy`` require, rule ``window-in-64-bit-range``).
LOWEST_MS, HIGHEST_MS = -(2**63), 2**63 - 1
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MS = _dt.timedelta(milliseconds=1)


def timestamp_ms(value: Any) -> int:
    """``value`` as integer milliseconds since the epoch: an int as it is, a ``datetime`` converted (a
    naive one is local time, as Spark reads a ``TimestampType`` into Python), a ``date`` at its midnight
    in local time. Anything else (a float, a string, None) raises :class:`TypeError`, an int beyond 64 bits
    :class:`OverflowError`.

    Examples
    --------
    >>> timestamp_ms(1_500)
    1500
    >>> timestamp_ms(_dt.datetime(1970, 1, 1, 0, 0, 1, 500, tzinfo=_dt.timezone.utc))
    1000
    >>> timestamp_ms(1.5)
    Traceback (most recent call last):
    ...
    TypeError: a timestamp is int milliseconds or a datetime, not float 1.5
    >>> timestamp_ms(10**20)
    Traceback (most recent call last):
    ...
    OverflowError: a timestamp must be a 64-bit int (ms), not 100000000000000000000
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            raise OverflowError(f"a timestamp must be a 64-bit int (ms), not {value!r}")
        return int(value)
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.astimezone()
        return (aware - _EPOCH) // _MS
    if isinstance(value, _dt.date):
        return timestamp_ms(_dt.datetime(value.year, value.month, value.day))
    raise TypeError(f"a timestamp is int milliseconds or a datetime, not {type(value).__name__} {value!r}")


def out_of_range(ts: int, first_start: int, last_end: int, what: str) -> str | None:
    """Why an event at ``ts`` cannot be windowed, or None: where the first window that holds it starts
    before, or the last ends after, the range of 64-bit timestamps (an end is exclusive, so a window may
    end at ``HIGHEST_MS``). ``what`` describes the windows.

    Examples
    --------
    >>> out_of_range(5, 0, 10, "tumbling windows of 10 ms") is None
    True
    >>> out_of_range(HIGHEST_MS, HIGHEST_MS - 1, HIGHEST_MS + 9, "sliding windows of 10 ms by 10 ms")[:45]
    'the event at timestamp 9223372036854775807 fa'
    """
    if first_start >= LOWEST_MS and last_end <= HIGHEST_MS:
        return None
    return (f"the event at timestamp {ts} falls in a window that 64-bit timestamps cannot hold: its windows span "
            f"[{first_start}, {last_end}) of {what}, beyond [{LOWEST_MS}, {HIGHEST_MS}] (rule 'window-in-64-bit-range')")
