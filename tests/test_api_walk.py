"""Walks ../shared/API.md (the contract) and checks that every documented call exists in the Python
package with the documented signature: the same parameters in order, the same defaults, the same
variadics. A name in API.md that this walk cannot place fails the test, so the contract cannot grow
unchecked.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

import jetspark as js

API_MD = Path(__file__).resolve().parents[2] / "shared" / "API.md"

RECEIVERS = {
    "js": [js], "jet": [js.JetSession], "job": [js.Job], "p": [js.Pipeline], "Pipeline": [js.Pipeline],
    "Sources": [js.Sources], "Sinks": [js.Sinks], "ops": [js.AggregateOperations],
    "AggregateOperation": [js.AggregateOperation], "WindowDefinition": [js.WindowDefinition],
    "JoinClause": [js.JoinClause], "stage": [js.BatchStage, js.StreamStage],
}
# Bare names and `.name` calls are placed by the section (and sub-paragraph) they are documented in.
SECTION_RECEIVERS = {
    "Stream timestamps (required on a stream source, Jet's rule)": [js.StreamSourceStage],
    "Transforms (every stage)": [js.BatchStage, js.StreamStage],
    "Keyed stage (`stage.grouping_key(key)`)": [js.BatchStageWithKey, js.StreamStageWithKey],
    "Windows (stream stages)": [js.WindowDefinition],
    "Sinks": [js.BatchStage, js.StreamStage],
}
PARAGRAPH_RECEIVERS = {"Batch stages also": [js.BatchStage], "Stream stages also": [js.StreamStage]}
CONSTRUCTORS = {"WindowResult": js.WindowResult, "KeyedWindowResult": js.KeyedWindowResult, "JobConfig": js.JobConfig}
CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*)?(?:\.[A-Za-z_]\w*)*)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


def documented_calls() -> list[tuple[str, str, str, str]]:
    """(section, paragraph, callee text, argument text) of every call written in API.md. Calls in code
    blocks are examples (their arguments are values): the paragraph is then "example"."""
    out = []
    section = paragraph = ""
    in_code = False
    pending = ""
    for raw in API_MD.read_text().splitlines():
        # A call in a code block may go on over several lines: read it whole.
        line = (pending + " " + raw.strip()) if pending else raw
        if in_code and line.count("(") > line.count(")"):
            pending = line
            continue
        pending = ""
        if line.startswith("```"):
            in_code = not in_code
            continue
        if line.startswith("#") and not in_code:
            section, paragraph = line.lstrip("#").strip(), ""
            continue
        if line.startswith(("Batch stages also", "Stream stages also")):
            paragraph = line.split(":")[0]
        elif line.strip() == "" or line.startswith("|"):
            paragraph = ""
        spans = [line.split("#")[0]] if in_code else re.findall(r"`([^`]+)`", line)
        for span in spans:
            for m in CALL.finditer(span):
                if m.group(1):  # `(new_state, output)` is a tuple, not a call
                    out.append((section, "example" if in_code else paragraph, m.group(1), m.group(2)))
    return out


def parse_params(args: str) -> list[tuple[str, str | None]] | None:
    """Documented parameters as (name, default text); None when the call shows values, not parameters."""
    params = []
    depth, current = 0, ""
    for ch in args + ",":
        if ch == "," and depth == 0:
            part = current.strip()
            current = ""
            if not part:
                continue
            name, _, default = part.partition("=")
            name = name.strip()
            if not re.fullmatch(r"\*{0,2}[a-z_]\w*", name):
                return None  # an example value such as `True` or `[...]`
            params.append((name, default.strip() or None))
            continue
        depth += ch in "([{" and 1 or 0
        depth -= ch in ")]}" and 1 or 0
        current += ch
    return params


# Chained calls (`.with_timestamps(...)`, `.window(w).aggregate(op)`) are placed on every public class
# that defines the method; windows exist on stream stages only (API.md: "Stream stages also").
CHAINABLE = [js.StreamSourceStage, js.StreamStage, js.StreamStageWithKey, js.StageWithWindow,
             js.StageWithKeyAndWindow, js.WindowDefinition]
STREAM_ONLY = {"window"}


def resolve(section: str, paragraph: str, callee: str) -> list[object]:
    parts = callee.split(".")
    if callee.startswith("."):
        return [getattr(t, parts[-1]) for t in CHAINABLE if hasattr(t, parts[-1])] or [None]
    if parts[-1] in STREAM_ONLY and parts[0] in ("stage", parts[-1]):
        return [js.StreamStage.window, js.StreamStageWithKey.window]
    if len(parts) == 1:
        if callee in CONSTRUCTORS:
            return [CONSTRUCTORS[callee]]
        targets = PARAGRAPH_RECEIVERS.get(paragraph) or SECTION_RECEIVERS.get(section)
        if targets is None:
            return []  # a bare call outside the stage sections is prose (e.g. `fn(state, item)`)
        return [getattr(t, callee, None) for t in targets]
    if parts[0] in RECEIVERS and len(parts) == 2:
        return [getattr(t, parts[1], None) for t in RECEIVERS[parts[0]]]
    if parts[0] == "stage" and len(parts) == 3:  # `stage.window(w).aggregate(op)`: the window's aggregate
        return [js.StageWithWindow.aggregate, js.StageWithKeyAndWindow.aggregate]
    return []


def signature_params(obj: object) -> list[tuple[str, str | None]]:
    if is_dataclass(obj):
        return [(f.name, None if f.default is f.default_factory else repr(f.default)) for f in fields(obj)]
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    out = []
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        out.append((prefix + p.name, None if p.default is p.empty else repr(p.default)))
    return out


CASES = documented_calls()


def test_api_md_is_found_and_has_calls():
    assert len(CASES) > 60, f"expected the API.md calls, found {len(CASES)} in {API_MD}"


@pytest.mark.parametrize("section,paragraph,callee,args", CASES, ids=[f"{c[2]}({c[3]})" for c in CASES])
def test_documented_call_exists_with_its_signature(section, paragraph, callee, args):
    targets = resolve(section, paragraph, callee)
    if callee.split(".")[-1] in {"col", "lambda", "e", "fn", "isStreaming"} or not targets:
        if callee.split(".")[0] in RECEIVERS or callee.startswith("."):
            pytest.fail(f"{callee}: documented in '{section}' but not placed by the walk")
        return  # prose: a callback's shape (`fn(state, item)`), a pyspark helper (`col("amount")`)
    documented = parse_params(args)
    if paragraph == "example":  # values, not parameters: keyword names must exist, that is all
        for target in targets:
            assert target is not None, f"{callee}({args}) from '{section}' is missing"
            names = [n.lstrip("*") for n, _ in signature_params(target)]
            for name, value in documented or []:
                assert value is None or name in names, f"{callee}: no parameter {name!r} (have {names})"
        return
    for target in targets:
        assert target is not None, f"{callee}({args}) from '{section}' is missing"
        if documented is None:
            continue
        actual = signature_params(target)
        names = [n for n, _ in actual]
        doc_names = [n for n, _ in documented]
        assert names[: len(doc_names)] == doc_names or _same_shape(actual, documented), \
            f"{callee}: documented ({args}), actual {names}"
        for (name, default) in documented:
            if default is not None and name in dict(actual):
                assert _same_default(dict(actual)[name], default), \
                    f"{callee}({name}=...): documented default {default}, actual {dict(actual)[name]}"
        # Parameters beyond the documented ones must be optional: documented calls must work as written.
        assert all(d is not None or n.startswith("*") for n, d in actual[len(doc_names):]), \
            f"{callee}: undocumented required parameters {actual[len(doc_names):]}"


def _same_shape(actual, documented) -> bool:
    """Positional names differ between API.md's sections (`window(w)` vs `window(window_definition)`):
    the same count of required positionals, and identical keyword and variadic parameters, is the contract."""
    def shape(ps):
        return [("req" if d is None and not n.startswith("*") else n, d is not None) for n, d in ps]
    return shape(actual[: len(documented)]) == shape(documented)


def _same_default(actual: str | None, documented: str) -> bool:
    if documented.startswith("lambda"):
        return actual is not None and actual.startswith("<function")
    return actual == documented or actual == repr(eval(documented, {"local": None}))  # noqa: S307
