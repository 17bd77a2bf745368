"""The user's own modules, shipped to the Python workers with the functions that use them.

Spark's workers import what a pickled function refers to by name. A module installed where every
Python finds it (the standard library, site-packages, and pyspark and jetspark themselves) is imported
there as it is; any other module of the user's (a helper next to a script, a module of a source
checkout) would fail with ``ModuleNotFoundError`` on a worker whose ``sys.path`` lacks its directory.
Those modules are pickled by value, with cloudpickle's ``register_pickle_by_value`` (PySpark's own
bundled cloudpickle): what a function needs of them travels inside its pickle. Objects pickled with the
plain ``pickle`` (the items of ``Sources.items``) still need their classes' modules on the workers:
``JetSession.add_py_file`` ships a file or an archive of them (Spark's ``addPyFile``).
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import site
import subprocess
import sys
import sysconfig
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["ship_modules_of"]

#: How deep the globals a function refers to are followed (functions calling functions).
_DEPTH = 4


def ship_modules_of(objects: Iterable[Any]) -> list[str]:
    """Registers for pickling by value the modules of the functions among ``objects`` (and of what
    they refer to) that the workers cannot import; returns their names."""
    from pyspark import cloudpickle

    shipped = sorted({module.__name__ for module in _modules(objects) if not _importable_everywhere(module)})
    for name in shipped:
        cloudpickle.register_pickle_by_value(sys.modules[name])
    return shipped


def _modules(objects: Iterable[Any]) -> set[types.ModuleType]:
    """The top-level modules (packages) that the functions among ``objects`` come from or refer to."""
    found: set[types.ModuleType] = set()
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if id(obj) in seen or depth > _DEPTH:
            return
        seen.add(id(obj))
        if isinstance(obj, types.ModuleType):
            found.add(sys.modules.get(obj.__name__.split(".")[0], obj))
        elif isinstance(obj, dict):
            for value in obj.values():
                visit(value, depth)
        elif isinstance(obj, (types.FunctionType, type)) or callable(obj):
            module = sys.modules.get(getattr(obj, "__module__", None) or "")
            if module is not None:
                visit(module, depth)
            function = getattr(obj, "__func__", obj)  # a bound method's function
            code, scope = getattr(function, "__code__", None), getattr(function, "__globals__", None)
            if code is not None and scope is not None:
                for name in _names(code):
                    if name in scope:
                        visit(scope[name], depth + 1)
                for cell in getattr(function, "__closure__", None) or ():
                    try:
                        visit(cell.cell_contents, depth + 1)
                    except ValueError:  # an empty cell
                        pass

    for obj in objects:
        visit(obj, 0)
    return found


def _names(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the code nested in it: lambdas, comprehensions) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _importable_everywhere(module: types.ModuleType) -> bool:
    """Whether a worker imports ``module`` by itself: it has no file (built in), lives where Python
    installs modules, is pyspark or jetspark, or is found on a path the workers share (PYTHONPATH, the
    directories .pth files add, such as an editable install's). Found only in the driver's script directory,
    its working directory or a directory added to ``sys.path`` as it runs, or not at all, it is not.
    (Pickled by value, a module that the workers could import would give them a second copy of its classes,
    which plain pickle then refuses.) ``__main__`` is pickled by value by cloudpickle anyway."""
    file = getattr(module, "__file__", None)
    if module.__name__ in ("__main__", "pyspark", "jetspark", "py4j") or file is None:
        return True
    path = Path(file).resolve()
    if any(root in path.parents for root in _install_roots()):
        return True
    spec = importlib.machinery.PathFinder.find_spec(module.__name__, _shared_path())
    return spec is not None and spec.origin is not None and Path(spec.origin).resolve() == path


def _shared_path() -> list[str]:
    """The directories a Python worker searches for modules: those this interpreter starts with (its
    installation, PYTHONPATH, the directories .pth files add), not the driver's ``sys.path``, which the
    driver changes as it runs: the script's directory leaves ``sys.path[0]`` once anything is inserted before
    it (a script's ``sys.path.insert(0, ...)``, a test runner's), and directories added at run time reach no
    worker. The working directory is the driver's alone too (a worker's is its own)."""
    cwd = Path.cwd().resolve()
    return [p for p in _startup_path(sys.executable, os.environ.get("PYTHONPATH", "")) if Path(p).resolve() != cwd]


@functools.lru_cache(maxsize=4)
def _startup_path(python: str, pythonpath: str) -> tuple[str, ...]:
    """The module search path a fresh ``python`` starts with under this environment (``pythonpath`` is
    its PYTHONPATH, here to key the cache), without the working directory that ``-c`` puts first (as "")."""
    # (sys is built in: nothing is imported from the working directory.)
    code = "import sys; print('\\0'.join(sys.path), end='')"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"shipping the user's modules to the workers: {python} did not start, so which "
                           f"modules the workers import by themselves is unknown:\n{done.stderr}")
    return tuple(p for p in done.stdout.split("\0") if p)


@functools.lru_cache(maxsize=1)
def _install_roots() -> tuple[Path, ...]:
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages())
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        paths.add(user_site)
    return tuple(Path(p).resolve() for p in paths)
