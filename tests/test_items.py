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


#: Numbers that Python equates across types (``True == 1 == 1.0``, ``-0.0 == 0``), so that pairs of keys
#: drawn from them are often equal without being the same objects.
mixed_numbers = st.sampled_from([0, 1, 2, 0.0, -0.0, 1.0, 2.0, True, False, 0.5, "1"])
hashable_mixed = st.recursive(mixed_numbers, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=3)),
                              max_leaves=4)
mixed_keys = st.one_of(hashable_mixed, st.dictionaries(hashable_mixed, hashable_mixed, max_size=2),
                       st.lists(hashable_mixed, max_size=2))


def retyped(value, random):
    """``value`` with each number that Python equates across types in another of them, at random."""
    if type(value) in (int, float, bool) and value == int(value):
        return random.choice([int(value), float(value)] + ([bool(value)] if value in (0, 1) else []))
    if isinstance(value, (tuple, list)):
        return type(value)(retyped(v, random) for v in value)
    if isinstance(value, frozenset):
        return frozenset(retyped(v, random) for v in value)
    if isinstance(value, dict):
        return {retyped(k, random): retyped(v, random) for k, v in value.items()}
    return value


@given(mixed_keys, st.randoms())
def test_keys_that_python_holds_equal_across_number_types_give_the_same_bytes(key, random):
    twin = retyped(key, random)
    assert twin == key and canonical_key(twin) == canonical_key(key)


@given(mixed_keys, mixed_keys)
def test_keys_give_the_same_bytes_only_when_python_holds_them_equal(a, b):
    assert canonical_key(a) != canonical_key(b) or a == b


def test_a_number_key_comes_back_as_the_int_it_equals_where_it_has_an_integral_value():
    assert [loads_key(canonical_key(k)) for k in (True, 2.0, -0.0, 0.5, (False, {1.0: [True]}))] == [1, 2, 0, 0.5, (0, {1: [1]})]
    assert type(loads_key(canonical_key(-0.0))) is int


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
