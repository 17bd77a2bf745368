"""How Python items and keys travel through the JVM.

The JVM never decodes user items: it keeps each item's own pickle, and when a result holds items (a
`max_by`, a `to_list`) it writes them as ``jetspark._items.loads(<the item's pickle>)``, so Python gets
back exactly the objects it gave. Keys travel in a canonical form (:func:`canonical_key`), so that the
JVM can compare them as bytes, and come back as ``jetspark._items.loads_key(<bytes>)``.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections.abc import Mapping
from typing import Any


PICKLE_PROTOCOL = 5
_MAPPING, _SET = "jetspark:mapping", "jetspark:set"


_LENGTH = struct.Struct(">I")


def pack_frames(blobs: list[bytes]) -> bytes:
    """Many byte strings as one, each behind its 4-byte big-endian length: py4j moves one byte array in
    one call, but a list element by element."""
    out = bytearray()
    for blob in blobs:
        out += _LENGTH.pack(len(blob))
        out += blob
    return bytes(out)


def unpack_frames(data: bytes) -> list[bytes]:
    """The byte strings that :func:`pack_frames` (or the JVM's ``PythonValues.packFrames``) packed."""
    data = bytes(data)
    blobs: list[bytes] = []
    at, end = 0, len(data)
    while at < end:
        (size,) = _LENGTH.unpack_from(data, at)
        at += 4
        blobs.append(data[at:at + size])
        at += size
    return blobs


def loads(data: bytes) -> Any:
    return pickle.loads(data)


def canonical_key(key: Any) -> bytes:
    """Bytes that are equal when the keys are equal. A plain pickle is not: two equal dicts built in
    another order pickle differently, and pickle's memo writes a repeated object as a back-reference, so
    ``(s, s)`` and an equal pair of distinct strings differ. So mappings and sets are written sorted, and
    nothing is memoized. Numbers that Python holds equal, with equal hashes, are one key: a bool, and a
    float with an integral value, are written as the int they equal (``1``, ``1.0`` and ``True`` are ``1``;
    -0.0 is ``0``), also inside tuples, lists, namedtuples, sets and mappings.

    Limits: mappings inside tuple subclasses other than namedtuples (pyspark Rows, whose fields have one
    Spark type each) are not sorted, nor their numbers rewritten.

    Examples
    --------
    >>> canonical_key({"a": 1, "b": 2}) == canonical_key({"b": 2, "a": 1}), canonical_key((-0.0, 1)) == canonical_key((0.0, 1))
    (True, True)
    >>> canonical_key((1, "a")) == canonical_key((1.0, "a")) == canonical_key((True, "a")), loads_key(canonical_key(2.0))
    (True, 2)
    """
    if type(key) is int:
        return pickle.dumps(key, PICKLE_PROTOCOL)  # an int's pickle has no memo entry: these same bytes
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, PICKLE_PROTOCOL)
    pickler.fast = True  # no memo: the bytes depend on values only, not on which objects are shared
    pickler.dump(_canonical(key))
    return buffer.getvalue()


def loads_key(data: bytes) -> Any:
    """The key that :func:`canonical_key` wrote (a set comes back as a frozenset: keys are hashable)."""
    return _restore(pickle.loads(data))


def _canonical(value: Any) -> Any:
    if type(value) is bool:
        return int(value)  # True == 1 == 1.0, with one hash: one key, as in a dict
    if type(value) is float and value.is_integer():
        return int(value)  # also -0.0 (== 0); NaN and infinities are not integral and stay floats
    if isinstance(value, Mapping):
        return (_MAPPING, tuple(sorted(((_canonical(k), _canonical(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, (set, frozenset)):
        return (_SET, tuple(sorted((_canonical(v) for v in value), key=repr)))
    if type(value) in (tuple, list):
        return type(value)(_canonical(v) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_make"):  # a namedtuple
        return type(value)._make(_canonical(v) for v in value)
    return value


def _restore(value: Any) -> Any:
    if type(value) is tuple and len(value) == 2 and value[0] in (_MAPPING, _SET):
        if value[0] == _MAPPING:
            return {_restore(k): _restore(v) for k, v in value[1]}
        return frozenset(_restore(v) for v in value[1])
    if type(value) in (tuple, list):
        return type(value)(_restore(v) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_make"):
        return type(value)._make(_restore(v) for v in value)
    return value
