"""dev/check_imports.py on tiny trees: it finds import cycles among Python modules and JVM packages,
and passes a clean tree. (No Spark.)"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "dev" / "check_imports.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_imports", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_imports"] = module
    spec.loader.exec_module(module)
    return module


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


CLEAN_PYTHON = {
    "python/jetspark/__init__.py": "from jetspark.job import Job\n",
    "python/jetspark/job.py": "from . import _bridge\nfrom .worker.steps import run\n",
    "python/jetspark/_bridge.py": "import json\n",
    "python/jetspark/worker/__init__.py": "",
    "python/jetspark/worker/steps.py": "from jetspark.errors import DeadLetter\n",
    "python/jetspark/errors.py": "",
}
CLEAN_SCALA = {
    "jvm/src/main/scala/io/jetspark/core/Item.scala": "package io.jetspark.core\n\nfinal case class Item(x: Int)\n",
    "jvm/src/main/scala/io/jetspark/engine/Engine.scala":
        "package io.jetspark.engine\n\nimport io.jetspark.core.{Item, Other => O}\n\ntrait Engine\n",
    # A comment or a string naming a package is no dependency.
    "jvm/src/main/scala/io/jetspark/core/Doc.scala":
        "package io.jetspark.core\n\n// see io.jetspark.engine.Engine\nobject Doc { val s = \"io.jetspark.engine.X\" }\n",
}


def test_a_clean_tree_passes_and_the_graph_has_its_edges(check, tmp_path, capsys):
    root = write(tmp_path, {**CLEAN_PYTHON, **CLEAN_SCALA})
    assert check.main(["--root", str(root), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "import cycle" not in out
    assert check.python_graph(root / "python" / "jetspark")["jetspark.job"] == {"jetspark._bridge",
                                                                              "jetspark.worker.steps"}
    assert check.scala_graph(root / "jvm/src/main/scala") == {"core": set(), "engine": {"core"}}
    assert "  engine -> core" in out


def test_a_python_cycle_through_a_function_level_relative_import_fails(check, tmp_path, capsys):
    root = write(tmp_path, {
        **CLEAN_PYTHON, **CLEAN_SCALA,
        "python/jetspark/_bridge.py": "def f():\n    from .worker import steps\n",
        "python/jetspark/worker/steps.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jetspark.job\n",
    })
    assert check.main(["--root", str(root), "--python-only"]) == 1
    out = capsys.readouterr().out
    assert "python/jetspark: import cycle: jetspark._bridge -> jetspark.worker.steps -> jetspark.job -> jetspark._bridge" in out


def test_a_scala_cycle_fails_unless_only_python_is_checked(check, tmp_path, capsys):
    root = write(tmp_path, {
        **CLEAN_PYTHON, **CLEAN_SCALA,
        # Fully qualified in code, without an import.
        "jvm/src/main/scala/io/jetspark/core/Back.scala": "package io.jetspark.core\n\nobject Back { def e: io.jetspark.engine.Engine = null }\n",
    })
    assert check.main(["--root", str(root), "--python-only"]) == 0
    assert check.main(["--root", str(root)]) == 1
    assert "jvm packages: import cycle: core -> engine -> core" in capsys.readouterr().out


def test_chained_package_clauses_resolve_relative_imports_as_scala_does(check, tmp_path):
    root = write(tmp_path, {
        "jvm/src/main/scala/io/jetspark/engine/spark/Runner.scala":
            "package io.jetspark\npackage engine.spark\n\nimport engine.local.Queue\nimport core.Item\n\nclass Runner\n",
        "jvm/src/main/scala/io/jetspark/engine/local/Queue.scala": "package io.jetspark.engine.local\n\nclass Queue\n",
        # A subpackage spark of io.jetspark.engine.local: `import spark.X` inside engine.local means this one.
        "jvm/src/main/scala/io/jetspark/engine/local/spark/Inner.scala":
            "package io.jetspark.engine.local.spark\n\nclass Inner\n",
        "jvm/src/main/scala/io/jetspark/engine/local/Uses.scala":
            "package io.jetspark.engine.local\n\nimport spark.Inner\n\nclass Uses\n",
        "jvm/src/main/scala/io/jetspark/core/Item.scala": "package io.jetspark\npackage object core { type Item = Int }\n",
    })
    graph = check.scala_graph(root / "jvm/src/main/scala")
    # engine.spark sees io.jetspark's members (chained clauses): `engine` is io.jetspark.engine, `core`
    # io.jetspark.core (a package object's package).
    assert graph["engine.spark"] == {"engine.local", "core"}
    assert graph["engine.local"] == {"engine.local.spark"}
    assert graph["core"] == set()


def test_a_single_package_clause_does_not_see_the_enclosing_packages(check, tmp_path):
    root = write(tmp_path, {
        "jvm/src/main/scala/io/jetspark/engine/spark/Runner.scala":
            "package io.jetspark.engine.spark\n\nimport core.Item\n\nclass Runner\n",
        "jvm/src/main/scala/io/jetspark/core/Item.scala": "package io.jetspark.core\n\nclass Item\n",
    })
    # `core` is not visible from io.jetspark.engine.spark: the import is of a root package `core`, not ours.
    assert check.scala_graph(root / "jvm/src/main/scala")["engine.spark"] == set()


#: What the worker package may import of jetspark's driver-side package: the values items are made of
#: (the JVM writes pickles that call ``jetspark._items`` and build ``jetspark.window``'s results).
SHARED_WITH_WORKERS = {"jetspark.errors", "jetspark.window", "jetspark._items"}
#: What only a driver has: the JVM gateway and a session.
DRIVER_ONLY = ("py4j", "pyspark.java_gateway", "pyspark.sql.session", "pyspark.sql.dataframe", "pyspark.sql.functions")


def test_the_worker_package_imports_nothing_of_the_driver_side(check):
    package = Path(__file__).resolve().parent.parent / "python" / "jetspark"
    graph = check.python_graph(package)
    workers = [m for m in graph if m.startswith("jetspark.worker")]
    assert "jetspark.worker.steps" in workers
    for module in workers:
        assert graph[module] <= SHARED_WITH_WORKERS | set(workers), module
        path = check.python_modules(package)[module]
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.startswith(DRIVER_ONLY)], (module, names)
