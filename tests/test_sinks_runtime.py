"""The Python side of rows sinks without running a job: the schema inferred from items is the one
``spark.createDataFrame`` infers, and the conversion keeps the items that fit, in order, and turns the
others into dead letters (or fails naming the stage and the record)."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql.types import DecimalType, IntegerType, StructField, StructType

from jetspark import DeadLetter
from jetspark.worker.steps import StepFailedError
from jetspark._row_sinks import infer_schema, parse_schema
from jetspark.worker.rows import record_of, rows_function

N_INT = StructType([StructField("n", IntegerType())])

# Each field keeps one type (or None): items createDataFrame can type, unless a field is None in all of them.
dict_items = st.lists(st.fixed_dictionaries(
    {"k": st.integers(-5, 5)},
    optional={"s": st.one_of(st.none(), st.text("xy", max_size=2)), "f": st.one_of(st.none(), st.floats(-2, 2)),
              "b": st.booleans(), "xs": st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=1, max_size=2)),
              "row": st.builds(lambda x, y: Row(x=x, y=y), st.integers(), st.text("ab", max_size=2))}),
    min_size=1, max_size=8)
tuple_items = st.lists(st.tuples(st.integers(), st.one_of(st.none(), st.text(max_size=3))), min_size=1, max_size=8)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(dict_items, tuple_items))
def test_the_inferred_schema_is_the_one_create_dataframe_infers(jet, items):
    try:
        expected = jet.spark.createDataFrame(items).schema
    except ValueError:  # a field None in every item: neither can type it
        with pytest.raises(ValueError, match="None in all of them"):
            infer_schema(items)
        return
    assert infer_schema(items) == expected


def test_an_item_whose_types_clash_with_the_first_is_left_out_of_the_inference():
    # createDataFrame raises on the clash; here the first item decides and the second will not fit.
    schema = infer_schema([{"a": 1}, {"a": [2]}, {"a": 3, "b": "x"}])
    assert schema.simpleString() == "struct<a:bigint,b:string>"


def test_primitives_are_one_column_named_value_and_no_items_no_columns():
    assert infer_schema([1, 2]).simpleString() == "struct<value:bigint>"
    assert infer_schema(["a", None]).simpleString() == "struct<value:string>"
    assert infer_schema([]).fields == []


def test_a_field_the_schema_lacks_is_a_misfit_at_any_depth(jet):  # jet: DDL is parsed by Spark
    schema = parse_schema("a INT, inner STRUCT<x: INT>, xs ARRAY<STRUCT<y: INT>>")
    assert record_of(Row(inner=Row(x=1), a=2, xs=[{"y": 3}]), schema) == {"a": 2, "inner": {"x": 1}, "xs": [{"y": 3}]}
    for item, field in [({"a": 1, "b": 2}, "'b'"), ({"inner": {"x": 1, "z": 2}}, "'inner.z'"),
                        ({"xs": [{"y": 1, "w": 2}]}, "'xs.w'")]:
        with pytest.raises(ValueError, match=f"field {field} not in the sink's schema"):
            record_of(item, schema)


def convert(items, schema, dead_letter):
    run = rows_function(schema, "sink", dead_letter, large_types=False)
    batch = pa.RecordBatch.from_arrays([pa.array([pickle.dumps(i) for i in items], pa.binary())], names=["item"])
    out = pa.Table.from_batches(list(run(iter([batch]))))
    return out.column("row").to_pylist(), [None if b is None else pickle.loads(b) for b in out.column("item").to_pylist()], \
        out.column("failure").to_pylist()


def test_conversion_keeps_fitting_items_in_order_then_their_misfits_as_dead_letters():
    rows, letters, failures = convert([{"n": 1}, {"n": "two"}, {"n": 3}, (4,), 2 ** 40], N_INT, dead_letter=True)
    assert rows == [{"n": 1}, {"n": 3}, {"n": 4}, None, None]
    assert [(d.record, d.stage) for d in letters[3:]] == [({"n": "two"}, "sink"), (2 ** 40, "sink")]
    assert letters[:3] == [None] * 3 and failures == [None] * 3 + ["sink"] * 2
    assert "can not accept object 'two'" in letters[3].error and "VALUE_OUT_OF_BOUNDS" in letters[4].error


def test_an_item_the_type_check_lets_through_but_arrow_cannot_hold_is_a_misfit_too():
    from decimal import Decimal

    rows, letters, _ = convert([Decimal("1.5"), Decimal("12345.678"), Decimal("-2")],
                               StructType([StructField("value", DecimalType(4, 2))]), dead_letter=True)
    assert rows == [{"value": Decimal("1.50")}, {"value": Decimal("-2.00")}, None]
    assert letters[2].record == Decimal("12345.678")


def test_without_a_dead_letter_sink_a_misfit_fails_naming_the_stage_and_the_record():
    with pytest.raises(StepFailedError, match=r"stage 'sink' failed on record \{'n': 'two'\}"):
        convert([{"n": 1}, {"n": "two"}], N_INT, dead_letter=False)
