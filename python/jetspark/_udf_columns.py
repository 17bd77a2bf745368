"""The Spark Columns of the Python UDFs the JVM asks a batch job for: each wraps an Arrow map function of
:mod:`jetspark.worker` (which the workers unpickle and run) with the columns it reads and the schema it
gives. Building one needs the driver's Spark, so this module stays out of the worker package.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from jetspark.worker.carried import carried_columns, carried_schema
from jetspark.worker.custom_aggregations import SCHEMAS, custom_aggregation_function
from jetspark.worker.custom_windows import custom_window_function
from jetspark.worker.stream_windows import STREAM_WINDOW_SCHEMA, stream_window_function
from jetspark.worker.epoch_state import STATE, kept_across_epochs
from jetspark.worker.operations import operation_of
from jetspark.worker.steps import (CHAIN_SCHEMA, ITEM, OPAQUE_SCHEMA, Step, bound_extraction_function, chain_function,
                                   extraction_schema, passing_on, routes_failures, rows_to_items_function,
                                   stateful_function)
from jetspark.worker.typed_results import results_to_items_function


def arrow_udf(fn: Callable[[Iterator[Any]], Iterator[Any]], schema: str, columns: list[str] | None = None) -> Any:
    """The Spark Column that runs ``fn`` (an Arrow map function, ``SQL_MAP_ARROW_ITER_UDF``) over
    ``columns`` (the ``item`` column by default), giving rows of ``schema`` (DDL)."""
    from pyspark.sql.functions import col, pandas_udf
    from pyspark.util import PythonEvalType

    udf = pandas_udf(fn, returnType=schema, functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)  # type: ignore[call-overload]
    return udf(*[col(c) for c in (columns or [ITEM])])


def chain_udf_column(steps: list[Step], carried: Sequence[str] = ()) -> Any:
    """The Spark Column of the fused chain, over the ``item`` column of whatever DataFrame the JVM
    applies it to (``SqlBridge.mapInArrow``) and the ``carried`` ones (the items' ``ts``, their sequence
    id), which each output keeps (see :func:`~jetspark.worker.steps.chain_function`)."""
    return arrow_udf(chain_function(steps), f"{CHAIN_SCHEMA}{carried_schema(carried)}", [ITEM, *carried])


def extraction_udf_column(key: dict[str, Any] | None, values: list[dict[str, Any]], stage: str,
                          objects: list[Any], timestamp: dict[str, Any] | None = None,
                          rows: tuple[str, int] | None = None, carried: Sequence[str] = (),
                          dead_letter: bool = False, time_stage: tuple[str, bool] | None = None) -> Any:
    """The Spark Column of an extraction over the ``item`` column, or with ``rows`` (see
    :func:`~jetspark.worker.steps.extraction_function`) over all the rows' columns. Items are stamped here with ``timestamp``;
    they arrive with the ``carried`` columns (:func:`jetspark.worker.carried.carried_columns`: their ``ts``,
    their sequence id), which the extraction passes on after what it extracts (and after the ``ts`` it
    stamps); ``dead_letter``: the stage routes its failures to a dead-letter sink; ``time_stage``: the
    stage the time belongs to where it is another's, and whether that one routes its failures."""
    extract = bound_extraction_function(key, values, stage, objects, timestamp, rows, dead_letter, time_stage)
    schema = extraction_schema(timestamp is not None, routes_failures(dead_letter, time_stage)) + carried_schema(carried)
    if carried:
        # The JVM never carries anything beside a DataFrame source's rows read as they are.
        assert rows is None, "carried columns beside a source's rows"
        return arrow_udf(passing_on(extract), schema, [ITEM, *carried])
    columns = None if rows is None else [field["name"] for field in json.loads(rows[0])["fields"]]
    return arrow_udf(extract, schema, columns)


def stateful_udf_column(create: Callable[[], Any], fn: Callable[..., tuple[Any, Any]], keyed: bool, stage: str,
                        dead_letter: bool, carried: Sequence[str] = (), kept: bool = False) -> Any:
    """The Spark Column of a ``map_stateful`` vertex, over the extracted columns and the ``carried`` ones
    (the items' ``ts``, their sequence id, a stream's ``ctl``), which each output (and dead letter) keeps
    from the item it was emitted for, as Jet's ``mapStateful`` gives its output the input item's timestamp
    (one output at most per item: ids need no extending). ``kept``: on a stream, the states are kept from
    one epoch to the next (:mod:`jetspark.worker.epoch_state`)."""
    return _stateful_udf(stateful_function(create, fn, keyed, stage, dead_letter), CHAIN_SCHEMA + carried_schema(carried),
                         ["key", "values", ITEM, *carried], stage, kept)


def _stateful_udf(run: Any, schema: str, columns: list[str], stage: str, kept: bool) -> Any:
    """The Column of an Arrow map function that keeps state over a partition's rows: where the state is
    ``kept`` across a stream's epochs, wrapped to take and give it in a last column (:func:`kept_across_epochs`);
    it acts on no watermark, so the epoch's end is nothing to it."""
    if not kept:
        return arrow_udf(run, schema, columns)
    return arrow_udf(kept_across_epochs(lambda batches, state, _end: run(batches, state), stage), f"{schema}, {STATE} binary",
                     [*columns, STATE])


def rows_to_items_udf_column(schema_json: str, passed: Sequence[tuple[str, str]] = (),
                             item_of: Callable[[Any], Any] | None = None) -> Any:
    """The Spark Column that turns the rows of a DataFrame with this schema into items (``item_of`` of
    each row, where given), followed by the ``passed`` columns (name, DDL type) the JVM put after the
    rows' own, which each item keeps."""
    columns = [field["name"] for field in json.loads(schema_json)["fields"]]
    schema = OPAQUE_SCHEMA + "".join(f", {name} {ddl}" for name, ddl in passed)
    return arrow_udf(rows_to_items_function(schema_json, item_of), schema, columns + [name for name, _ in passed])


def custom_aggregation_udf_column(specs: Sequence[Mapping[str, Any]], objects: Sequence[Any], mode: str, keyed: bool,
                                  stage: str, dead_letter: bool, carried: Sequence[str] = (), kept: bool = False) -> Any:
    """The Spark Column of one vertex of an aggregation with a user-defined part (``custom:<vertex>``), one
    operation ``spec`` per input as the JVM sends it (``CustomAggregationWork``), its functions among
    ``objects``; ``dead_letter``: the stage has a dead-letter sink; ``carried``: the columns (the items'
    ``ts``, their sequence id, a stream's ``ctl``) a rolling aggregation's outputs keep from their items;
    ``kept``: a rolling aggregation on a stream, its accumulators kept from one epoch to the next (it then
    reads the values extracted for built-in parts too)."""
    operations = [operation_of(spec, objects, atomic=dead_letter) for spec in specs]
    return _stateful_udf(custom_aggregation_function(operations, mode, keyed, stage, dead_letter, carried),
                         SCHEMAS[mode] + carried_schema(carried), ["key", *(["values"] if kept else []), ITEM, *carried],
                         stage, kept)


def custom_window_udf_column(spec: Mapping[str, Any], objects: list[Any], mode: str, window: Mapping[str, Any],
                             keyed: bool, stage: str, dead_letter: bool, kept: bool = False) -> Any:
    """The Spark Column of one vertex of a window with a user-defined part (``custom:<vertex>``), its
    operation ``spec`` as the JVM sends it (``CustomAggregationWork``), its functions among ``objects``;
    ``dead_letter``: the stage has a dead-letter sink; ``kept``: a window on a stream, its frames or
    sessions kept from one epoch to the next (:func:`~jetspark.worker.stream_windows.stream_window_function`)."""
    operation = operation_of(spec, objects, atomic=dead_letter)
    if not kept:
        return arrow_udf(custom_window_function(operation, mode, window, keyed, stage, dead_letter), SCHEMAS[mode],
                         ["key", ITEM])
    columns = ["key", "values", ITEM, *carried_columns(timed=True, sequenced=False, controlled=True)]
    return arrow_udf(kept_across_epochs(stream_window_function(operation, window, keyed, stage, dead_letter), stage),
                     f"{STREAM_WINDOW_SCHEMA}, {STATE} binary", [*columns, STATE])


def results_to_items_udf_column(schema_json: str, shape: dict[str, Any]) -> Any:
    """The Spark Column that turns an aggregation's typed results into items."""
    columns = [field["name"] for field in json.loads(schema_json)["fields"]]
    return arrow_udf(results_to_items_function(schema_json, shape), OPAQUE_SCHEMA, columns)
