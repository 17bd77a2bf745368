"""The Pipeline API: a pipeline is a DAG of stages that Python records and the JVM plans and runs.

Python validates each call's arguments and records it; the whole definition crosses to the JVM in one
call when it is explained or submitted, where the planner applies its rules (fusion, rebalance,
aggregation stages, order preservation) and raises :class:`PipelineDefinitionError` naming the stage
and the rule.
"""

from __future__ import annotations

import json
from typing import Any

from jetspark import _protocol
from jetspark._extractors import Extractor
from jetspark._stages import (BatchStage, BatchStageWithKey, JoinClause, Node, SinkStage, Stage, StageWithKeyAndWindow,
                              StageWithWindow, StreamSourceStage, StreamStage, StreamStageWithKey)
from jetspark.sources import Source
from jetspark.window import WindowDefinition

__all__ = [
    "BatchStage", "BatchStageWithKey", "JoinClause", "Pipeline", "SinkStage", "StageWithKeyAndWindow",
    "StageWithWindow", "StreamSourceStage", "StreamStage", "StreamStageWithKey",
]


class Pipeline:
    """A pipeline definition (Jet's ``Pipeline``).

    Examples
    --------
    >>> from jetspark import Pipeline, Sources, Sinks
    >>> p = Pipeline.create()
    >>> p.read_from(Sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(Sinks.list("out"))
    SinkStage(list(name='out'))
    >>> p.preserve_order
    False
    """

    def __init__(self, preserve_order: bool = False) -> None:
        self._nodes: list[Node] = []
        self._preserve_order = bool(preserve_order)

    @staticmethod
    def create(preserve_order: bool = False) -> Pipeline:
        """A new, empty pipeline. With ``preserve_order=True`` the planner keeps encounter order wherever
        an order-sensitive stage needs it (design doc 015)."""
        return Pipeline(preserve_order)

    @property
    def preserve_order(self) -> bool:
        return self._preserve_order

    def set_preserve_order(self, value: bool) -> Pipeline:
        """Jet's ``setPreserveOrder``."""
        self._preserve_order = bool(value)
        return self

    def read_from(self, source: Source) -> BatchStage | StreamSourceStage:
        """Adds a source: a batch source gives a :class:`BatchStage`; a stream source gives a
        :class:`StreamSourceStage`, which must choose its timestamps first."""
        if not isinstance(source, Source):
            raise TypeError(f"read_from(source): expected a Source (see Sources), not {type(source).__name__}")
        node = self._add("source", source.is_stream, [], args={"source": source})
        return StreamSourceStage(self, node) if source.is_stream else BatchStage(self, node)

    def _add(self, op: str, is_stream: bool, upstream: list[Stage], keys: list[Extractor | None] | None = None,
             args: dict[str, Any] | None = None) -> Node:
        for stage in upstream:
            if stage._pipeline is not self:
                raise ValueError(f"{op}: a stage of another pipeline cannot be used here")
        node = Node(len(self._nodes), op, is_stream, [s._node.id for s in upstream],
                     [s._rebalance for s in upstream], keys or [None] * len(upstream), args or {})
        self._nodes.append(node)
        return node

    def to_spec(self) -> tuple[dict[str, Any], list[Any]]:
        """The definition as JSON-able data, plus the values the JVM gets by reference (callables,
        DataFrames, items) in the order the spec's ``ref`` fields number them."""
        objects: list[Any] = []
        nodes = []
        for n in self._nodes:
            nodes.append({
                "id": n.id, "op": n.op, "stream": n.is_stream, "inputs": n.inputs, "name": n.name,
                "local_parallelism": n.local_parallelism,
                "rebalance": [_rebalance_spec(r, objects) for r in n.rebalance],
                "keys": [None if k is None else k.to_spec(objects) for k in n.keys],
                "args": _args_spec(n.args, objects),
                "on_error": None if n.on_error is None else n.on_error.to_spec(objects),
            })
        return {"preserve_order": self._preserve_order, "nodes": nodes}, objects

    def to_json(self) -> str:
        """The JSON the JVM receives (without the referenced objects)."""
        return json.dumps(self.to_spec()[0], sort_keys=True)

    def explain(self, parallelism: int | None = None) -> str:
        """The planned physical DAG as text: vertices, parallelism, fused chains, edge kinds,
        aggregation stages and sequence-restore points. Needs a running :func:`jetspark.session`."""
        return _protocol.plan("explain", self.to_json(), parallelism)

    def to_dot(self, parallelism: int | None = None) -> str:
        """The same plan as Graphviz DOT."""
        return _protocol.plan("toDot", self.to_json(), parallelism)

    def to_mermaid(self, parallelism: int | None = None) -> str:
        """The same plan as a Mermaid flowchart, which GitHub and most Markdown viewers draw inline."""
        return _protocol.plan("toMermaid", self.to_json(), parallelism)

    def __repr__(self) -> str:
        return f"Pipeline({len(self._nodes)} stages, preserve_order={self._preserve_order})"


def _rebalance_spec(value: Any, objects: list[Any]) -> Any:
    if value is None or value == "round_robin":
        return value
    return {"key": value.to_spec(objects)}


def _args_spec(args: dict[str, Any], objects: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in args.items():
        if hasattr(value, "to_spec"):
            out[name] = value.to_spec(objects) if not isinstance(value, WindowDefinition) else value.to_spec()
        elif isinstance(value, JoinClause):
            out[name] = {"left_key": value.left_key.to_spec(objects), "right_key": value.right_key.to_spec(objects)}
        elif isinstance(value, dict):
            out[name] = _args_spec(value, objects)
        elif callable(value):
            objects.append(value)
            out[name] = {"kind": "python", "ref": len(objects) - 1, "name": getattr(value, "__qualname__", "fn")}
        else:
            out[name] = value
    return out
