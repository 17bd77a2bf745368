"""Keys cross the JVM as canonical bytes: equal keys give equal bytes, and come back as they were."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jetspark._items import canonical_key, loads_key

scalars = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(), st.floats(allow_nan=False))
hashable_keys = st.recursive(scalars, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=4)),
                             max_leaves=8)


@given(st.dictionaries(st.text(max_size=3), st.integers(), max_size=6), st.randoms())
def test_equal_mappings_built_in_another_order_give_the_same_bytes(mapping, random):
    shuffled_items = list(mapping.items())
    random.shuffle(shuffled_items)
    assert canonical_key(mapping) == canonical_key(dict(shuffled_items))


@given(st.frozensets(st.integers(), max_size=8))
def test_equal_sets_give_the_same_bytes(values):
    assert canonical_key(values) == canonical_key(frozenset(reversed(sorted(values))))


@given(hashable_keys)
def test_a_key_comes_back_as_it_was(key):
    assert loads_key(canonical_key(key)) == key


def test_different_keys_give_different_bytes():
    assert canonical_key((1, 2)) != canonical_key((2, 1)) and canonical_key({"a": 1}) != canonical_key({"a": 2})


def test_a_key_with_a_shared_object_equals_one_built_from_equal_copies():
    shared = "hello world"
    copy = "".join(["hello", " world"])
    assert shared == copy and shared is not copy
    assert canonical_key((shared, shared)) == canonical_key((shared, copy))
    assert canonical_key({"a": shared, "b": shared}) == canonical_key({"b": copy, "a": shared})


@given(st.lists(st.binary(max_size=40), max_size=20))
def test_frames_unpack_to_what_was_packed(blobs):
    from jetspark._items import pack_frames, unpack_frames

    assert unpack_frames(pack_frames(blobs)) == blobs
