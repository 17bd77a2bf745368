"""The py4j protocol between jetspark's Python and its JVM side (``io.jetspark.python.PythonBridge``): the
one module that knows what crosses it and in which form.

Going out: a pipeline's spec as JSON, with the objects its refs number as the JVM takes them (item
pickles, JVM DataFrames and Columns; Python callables stay in Python), and the Spark Columns of the Python
UDFs a batch job asks for. Coming back: the JSON of a prepared job's Python work, its console lists and
metrics, a list's packed pickles, and JVM exceptions, turned into Python's where the API names them.
"""

from __future__ import annotations

import json
import pickle
from typing import TYPE_CHECKING, Any

from jetspark import _udf_columns as udf_columns
from jetspark._failures import jvm_throwable
from jetspark._items import pack_frames, unpack_frames
from jetspark._jar import jar_path_or_hint, package_version
from jetspark.errors import JarNotFoundError, PipelineDefinitionError
from jetspark.sources import PAUSE
from jetspark.worker.carried import carried_columns
from jetspark.worker.kafka import DESERIALIZERS, record_maker
from jetspark.worker.steps import Step, join_map_step

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BRIDGE_CLASS = "io.jetspark.python.PythonBridge"


def bridge(spark: SparkSession) -> Any:
    """The JVM bridge object of ``spark``'s JVM; raises :class:`JarNotFoundError` with the fix when the
    jar is missing from the session's classpath or is another version."""
    from py4j.java_gateway import JavaClass

    jvm = spark.sparkContext._jvm
    node: Any = jvm
    for part in BRIDGE_CLASS.split("."):
        node = getattr(node, part)
    if not isinstance(node, JavaClass):
        raise JarNotFoundError(
            "this SparkSession was started without the jetspark jar, so the JVM side is missing. "
            "Start Spark with the jar on its classpath, before the session exists:\n"
            f"  SparkSession.builder.config('spark.jars', jetspark.jar_path())...getOrCreate()\n"
            f"  or: spark-submit --jars {jar_path_or_hint()} your_job.py\n"
            "or let jetspark start Spark for you: jetspark.session()"
        )
    jar_version = node.version()
    if jar_version != package_version():
        raise JarNotFoundError(
            f"the jetspark jar on the Spark classpath is version {jar_version}, but the Python package is "
            f"{package_version()}; use the jar bundled with this package: {jar_path_or_hint()}"
        )
    return node


def call(method: Any, *args: Any) -> Any:
    """Calls a JVM method, turning a JVM ``PipelineDefinitionError`` into the Python one (same stage,
    rule and message) and leaving other errors as they are."""
    from py4j.protocol import Py4JJavaError

    try:
        return method(*args)
    except Py4JJavaError as e:
        if java_class_of(e) == "io.jetspark.pipeline.definition.PipelineDefinitionError":
            cause = e.java_exception
            raise PipelineDefinitionError(str(cause.getMessage()), stage=str(cause.stage()),
                                          rule=str(cause.rule())) from None
        raise


#: The only address jetspark binds to or calls (the driver, the callback server).
LOOPBACK = "127.0.0.1"


def ensure_callback_server(spark: Any) -> None:
    """Starts py4j's callback server for the session's gateway, through which the JVM calls this process
    back (light jobs, rows sinks), bound to the loopback address (pyspark's own helper, as streaming
    listeners and foreachBatch use it)."""
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    if gateway.__dict__.get("_callback_server") is None:
        gateway.callback_server_parameters.address = LOOPBACK
    ensure_callback_server_started(gateway)


def jvm_errors() -> tuple[type[Exception], ...]:
    """What a failed JVM call raises: py4j's error, or the PySpark exception it converts known JVM ones into."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    return Py4JJavaError, CapturedException


def java_class_of(error: Exception) -> str:
    """The class name of the JVM exception behind a failed py4j call (one of :func:`jvm_errors`)."""
    return str(jvm_throwable(error).getClass().getName())


def java_message_of(error: Exception) -> str:
    """The message of the JVM exception behind a failed py4j call."""
    return str(jvm_throwable(error).getMessage())


def plan(form: str, spec_json: str, parallelism: int | None) -> str:
    """The planned physical DAG of a pipeline's JSON in ``form`` (``explain``, ``toDot``, ``toMermaid``),
    planned by the JVM of the active Spark session."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("explain() and to_dot() plan in the JVM: start one first with jetspark.session()")
    return str(call(getattr(bridge(spark), form), spec_json, parallelism or 0))


def jvm_objects(spec: dict[str, Any], objects: list[Any]) -> list[Any]:
    """What the JVM gets for the spec's refs: item pickles for `Sources.items` (per substream for
    `Sources.items_stream`, an empty one for `Sources.PAUSE`), the JVM DataFrame for
    `Sources.dataframe`, the JVM Column of a Column extractor, and None for what stays in Python (callables)."""
    out: list[Any] = [None] * len(objects)
    _set_jvm_columns(spec, objects, out)
    for node in spec["nodes"]:
        source = node["args"].get("source")
        if source is None:
            continue
        refs = source["refs"]
        if "items" in refs:
            out[refs["items"]] = pack_frames([pickle.dumps(x, protocol=5) for x in objects[refs["items"]]])
        if "partitions" in refs:  # an items stream: each substream's pickles packed apart
            out[refs["partitions"]] = [pack_frames([b"" if x is PAUSE else pickle.dumps(x, protocol=5) for x in part])
                                       for part in objects[refs["partitions"]]]
        if "df" in refs:
            out[refs["df"]] = objects[refs["df"]]._jdf
    return out


def _set_jvm_columns(spec: Any, objects: list[Any], out: list[Any]) -> None:
    """Sets ``out[ref]`` to the JVM Column of every Column extractor (``{"kind": "column", "ref"}``)
    anywhere in a pipeline's ``spec``: the JVM evaluates them."""
    if isinstance(spec, dict):
        if spec.get("kind") == "column" and isinstance(spec.get("ref"), int):
            out[spec["ref"]] = objects[spec["ref"]]._jc
        for value in spec.values():
            _set_jvm_columns(value, objects, out)
    elif isinstance(spec, list):
        for value in spec:
            _set_jvm_columns(value, objects, out)


def get_list(jvm_bridge: Any, name: str) -> list[Any]:
    """The items list ``name`` holds (``Sinks.list``), unpickled from the frames the JVM packs them in."""
    return [pickle.loads(b) for b in unpack_frames(bytes(jvm_bridge.getList(name)))]


def drain_list(jvm_bridge: Any, name: str) -> list[Any]:
    """The items list ``name`` holds, taken out of it (what a console sink has not printed yet)."""
    return [pickle.loads(b) for b in unpack_frames(bytes(jvm_bridge.drainList(name)))]


def static_method(jvm_class: Any, name: str) -> Any:
    """A static method of a JVM class, looked up in the JVM once per class object: py4j asks the JVM at
    every attribute access of a class, a round trip of its own before the call's."""
    members = jvm_class.__dict__.setdefault("_jetspark_members", {})
    if name not in members:
        members[name] = getattr(jvm_class, name)
    return members[name]


def packed_objects(objects: list[Any]) -> bytes | None:
    """The JVM's objects of a spec (:func:`jvm_objects`) packed in one byte array when they are all None or
    bytes (item pickles), as ``PythonBridge.unpackObjects`` reads them: each a frame, empty for None, else a
    1 byte then the bytes. None when some object is something else (a JVM object, a list): py4j sends a list
    element by element, a round trip each, and one byte array in the call itself."""
    if not all(o is None or isinstance(o, bytes) for o in objects):
        return None
    return pack_frames([b"" if o is None else b"\x01" + o for o in objects])


def start_light(jvm_bridge: Any, spec: dict[str, Any], objects: list[Any], callback: Any, name: str,
                caller_runs_us: int) -> Any:
    """Starts a light job whose Python work ``callback`` does, run on the calling thread for up to
    ``caller_runs_us`` first; returns the JVM's ``LightJob``, or, for a job that completed within the call,
    the late events it dropped (an int). What the local engine cannot run raises ``NotImplementedError``
    naming the vertex. Objects that pack (:func:`packed_objects`) go with the spec, so that submitting is
    one round trip."""
    out = jvm_objects(spec, objects)
    packed = packed_objects(out)
    try:
        if packed is not None:
            return call(static_method(jvm_bridge, "startLightPacked"), json.dumps(spec), packed, callback, name, 0,
                        caller_runs_us * 1000)
        return call(static_method(jvm_bridge, "startLight"), json.dumps(spec), out, callback, name, 0, caller_runs_us * 1000)
    except jvm_errors() as e:
        if java_class_of(e) == "io.jetspark.engine.local.UnsupportedVertexException":
            raise NotImplementedError(java_message_of(e)) from None
        raise


def light_executions(jvm_bridge: Any) -> int:
    """How many light job executions the local engine of the driver's JVM has registered now. For tests:
    each execution leaves the registry when its job ends, or the light job checker removes it."""
    return int(jvm_bridge.lightExecutions())


def light_batch_size(jvm_bridge: Any) -> int:
    """How many items the local engine gives a processor per call: a Python light job calls this process
    back once per such batch, at most. For tests."""
    return int(jvm_bridge.lightBatchSize())


def is_cancellation(error: Exception) -> bool:
    """Whether a failed light job's ``join`` says that the job was cancelled."""
    return java_class_of(error) == "java.util.concurrent.CancellationException"


class PreparedBatch:
    """A batch job the JVM planned (``PreparedBatchJob``): the Python work it asks for, then its run."""

    def __init__(self, jvm_bridge: Any, spark: SparkSession, spec: dict[str, Any], objects: list[Any],
                 parallelism: int = 0) -> None:
        self._objects = objects
        self._j = call(jvm_bridge.prepareBatch, spark._jsparkSession, json.dumps(spec), jvm_objects(spec, objects),
                       parallelism)

    def python_work(self) -> dict[str, Any]:
        """The JVM's list of Python work (``PreparedBatchJob.pythonWorkJson``)."""
        return json.loads(call(self._j.pythonWorkJson))

    def console_lists(self, group: str) -> list[str]:
        """The lists the job's console sinks write to, to be printed once it ends."""
        return json.loads(self._j.consoleListsJson(group))

    def python_udfs(self) -> tuple[list[str], list[Any]]:
        """The Python UDFs it asks for, named as it expects (see :func:`python_udfs`)."""
        return python_udfs(self.python_work(), self._objects)

    def run(self, udfs: tuple[list[str], list[Any]], group: str) -> dict[str, Any]:
        """Runs the job in Spark job group ``group`` with its Python ``udfs``; its metrics."""
        names, columns = udfs
        return json.loads(call(self._j.run, names, columns, group))


class PreparedStream:
    """A stream job the JVM planned for its epoch engine (``PreparedStreamJob``): the Python work it asks
    for, then its start."""

    def __init__(self, jvm_bridge: Any, spark: SparkSession, spec: dict[str, Any], objects: list[Any],
                 parallelism: int = 0) -> None:
        self._objects = objects
        self._j = call(jvm_bridge.prepareStream, spark._jsparkSession, json.dumps(spec), jvm_objects(spec, objects),
                       parallelism)

    def python_udfs(self) -> tuple[list[str], list[Any]]:
        """The Python UDFs it asks for, named as it expects (see :func:`python_udfs`)."""
        return python_udfs(json.loads(call(self._j.pythonWorkJson)), self._objects)

    def console_lists(self, group: str) -> list[str]:
        """The lists the job's console sinks write to, to be printed as the epochs come."""
        return json.loads(self._j.consoleListsJson(group))

    def start(self, udfs: tuple[list[str], list[Any]], name: str, checkpoint_dir: str, trigger_interval_ms: int,
              idle_timeout_ms: int, group: str, guarantee: str) -> Any:
        """Starts the stream's query; the JVM's ``StreamingJob``. ``group`` scopes its console lists and row
        sinks; under ``guarantee`` ``"EXACTLY_ONCE"`` a console sink is a definition error."""
        names, columns = udfs
        return call(self._j.start, names, columns, name, checkpoint_dir, trigger_interval_ms, idle_timeout_ms, group,
                    guarantee)


def python_udfs(work: dict[str, Any], objects: list[Any]) -> tuple[list[str], list[Any]]:
    """The Arrow UDFs the JVM asked for (``PreparedBatchJob.pythonWorkJson``), named as it expects, as
    JVM Columns."""

    def ref(r: int | None) -> Any:
        return None if r is None else objects[r]

    def carried(w: dict[str, Any]) -> list[str]:
        return carried_columns(w["timed"], w["sequenced"], w.get("controlled", False))

    udfs: dict[str, Any] = {}
    for chain in work["chains"]:
        steps = [Step(s["kind"], ref(s["ref"]), s["stage"], s["dead_letter"]) for s in chain["steps"]]
        udfs[f"chain:{chain['vertex']}"] = udf_columns.chain_udf_column(steps, carried(chain))
    for e in work["extractions"]:
        rows = (e["rows_schema"], e["row_fields"]) if "rows_schema" in e else None
        time_stage = (e["time_stage"], e["time_dead_letter"]) if "time_stage" in e else None
        udfs[f"extract:{e['vertex']}:{e['ordinal']}"] = udf_columns.extraction_udf_column(
            e["key"], e["values"], e["stage"], objects, e.get("timestamp"), rows, carried(e), e["dead_letter"], time_stage)
    for f in work["dataframe_sources"]:
        kafka = f.get("kafka")
        # A Kafka source's deserializers: by name, or a function by its number.
        item_of = None if kafka is None else record_maker(
            *(DESERIALIZERS[d] if isinstance(d, str) else objects[d] for d in (kafka["key"], kafka["value"])), kafka["stage"])
        udfs[f"rows:{f['vertex']}"] = udf_columns.rows_to_items_udf_column(
            f["schema"], [(c["name"], c["type"]) for c in f.get("passed", [])], item_of)
    for m in work["stateful"]:
        udfs[f"stateful:{m['vertex']}"] = udf_columns.stateful_udf_column(
            ref(m["create_ref"]), ref(m["fn_ref"]), m["keyed"], m["stage"], m["dead_letter"], carried(m), m.get("kept", False))
    for c in work["custom_aggregations"]:
        if c["window"] is not None:
            (operation,) = c["operations"]
            udfs[f"custom:{c['vertex']}"] = udf_columns.custom_window_udf_column(
                operation, objects, c["mode"], c["window"], c["keyed"], c["stage"], c["dead_letter"], c.get("kept", False))
        else:
            udfs[f"custom:{c['vertex']}"] = udf_columns.custom_aggregation_udf_column(
                c["operations"], objects, c["mode"], c["keyed"], c["stage"], c["dead_letter"], carried(c), c.get("kept", False))
    for j in work["joins"]:
        step = join_map_step(ref(j["mapper_ref"]), j["stage"], j["dead_letter"])
        udfs[f"join:{j['vertex']}"] = udf_columns.chain_udf_column([step], carried(j))
    for r in work["typed_results"]:
        udfs[f"results:{r['vertex']}"] = udf_columns.results_to_items_udf_column(r["schema"], r["shape"])
    return list(udfs), [column._jc for column in udfs.values()]

