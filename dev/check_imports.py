#!/usr/bin/env python3
"""Fails when the Python modules of python/jetspark, or the JVM packages under jvm/src/main/scala, import
each other in a cycle (issue 23: a package tree that shows the architecture has its arrows one way).

Python: a node is a module; every import counts, at module level or inside a function, under
``if TYPE_CHECKING:`` or not, relative or absolute: an import deferred to dodge a cycle is still a cycle.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.

Scala: a node is a package, the one a file's ``package`` clauses name (chained clauses append). A file
of P depends on Q when it imports ``io.jetspark.Q...``, names ``io.jetspark.Q.X`` in its code, or imports
``Q.X`` relative to an enclosing package, as Scala resolves it. Arrows within a package are no cycle.

Usage: python dev/check_imports.py [--python-only] [--verbose] [--root DIR]
Exit status 1 with each cycle printed when there is one.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

Graph = dict[str, set[str]]


def python_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package at ``package_dir`` by dotted name (a package by its ``__init__``)."""
    base = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def python_graph(package_dir: Path) -> Graph:
    """Which module imports which, among the modules of the package at ``package_dir``."""
    modules = python_modules(package_dir)
    graph: Graph = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                origin = _absolute(name, is_package, node.module, node.level)
                targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                           for alias in node.names]
            else:
                continue
            for target in targets:
                # `import a.b.c` names the module a.b.c (and imports its parents, which are no dependency).
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _absolute(module: str, is_package: bool, imported: str | None, level: int) -> str:
    if level == 0:
        return imported or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[:len(parts) - (level - 1)] if level > 1 else parts
    return ".".join(parts + ([imported] if imported else []))


_PACKAGE = re.compile(r"^[ \t]*package[ \t]+(object[ \t]+)?([\w.]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]+)", re.MULTILINE)
_DEFINITION = re.compile(r"^(?:(?:private|protected|final|sealed|abstract|case|implicit)(?:\[\w+\])?\s+)*"
                         r"(?:class|trait|object|enum)\s+(\w+)", re.MULTILINE)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_STRING = re.compile(r'"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"')


def scala_graph(source_dir: Path, root: str = "io.jetspark") -> Graph:
    """Which package depends on which, among the packages of the ``.scala`` files under ``source_dir``
    (names relative to ``root``, ``root`` itself as ``""``; packages outside ``root`` are left out)."""
    files = {path: _strip(path.read_text()) for path in sorted(source_dir.rglob("*.scala"))}
    scopes = {path: _package_scopes(text) for path, text in files.items()}
    known = {scope[-1] for scope in scopes.values()}
    members: dict[str, set[str]] = {}
    for path, text in files.items():
        members.setdefault(scopes[path][-1], set()).update(_DEFINITION.findall(text))
    graph: Graph = {}
    for path, text in files.items():
        package = _relative(scopes[path][-1], root)
        if package is None:
            continue
        graph.setdefault(package, set())
        for target in _referenced(text, scopes[path], known, members, root):
            if target != scopes[path][-1] and _relative(target, root) is not None:
                graph[package].add(_relative(target, root))  # type: ignore[arg-type]
    return graph


def _strip(text: str) -> str:
    """Scala source without comments and string literals (a name in them is no dependency)."""
    return _COMMENT.sub(" ", _STRING.sub('""', text))


def _package_scopes(text: str) -> list[str]:
    """The packages whose members a file sees, outermost first, its own last: chained clauses
    (``package a.b`` then ``package c``) see a.b and a.b.c, one clause ``package a.b.c`` sees a.b.c only.
    A ``package object c`` holds members of package c."""
    scopes: list[str] = []
    for found in _PACKAGE.finditer(text):
        scopes.append(f"{scopes[-1]}.{found[2]}" if scopes else found[2])
    return scopes or [""]


def _referenced(text: str, scopes: list[str], known: set[str], members: Mapping[str, set[str]],
                root: str) -> set[str]:
    """The known packages a file names: by imports (absolute, or relative to a package the file sees, as
    Scala resolves them: the innermost one that has a member or subpackage of the first name) and by
    fully qualified names of ``root`` in its code."""
    prefixes = {p.rsplit(".", n)[0] for p in known for n in range(p.count(".") + 1)}
    targets = set()
    for found in _IMPORT.finditer(text):
        for path in _import_paths(found[1]):
            first = path.split(".")[0]
            outer = next((s for s in reversed(scopes) if s and (first in members.get(s, ()) or f"{s}.{first}" in prefixes)),
                         None)
            target = _longest_package(path if outer is None else f"{outer}.{path}", known)
            if target:
                targets.add(target)
    code = _IMPORT.sub(" ", _PACKAGE.sub(" ", text))
    for qualified in re.findall(rf"(?<![\w.])(?:_root_\.)?({re.escape(root)}(?:\.\w+)+)", code):
        target = _longest_package(qualified, known)
        if target:
            targets.add(target)
    return targets


def _import_paths(clause: str) -> list[str]:
    """The paths one ``import`` line names: ``a.b.{C, D => E}, f.g`` gives a.b.C, a.b.D, f.g."""
    paths = []
    for part in re.split(r",\s*(?![^{]*\})", clause):
        part = part.strip().rstrip(";").removeprefix("_root_.")
        prefix, brace, selectors = part.partition("{")
        if brace:
            for selector in selectors.split("}")[0].split(","):
                name = selector.split("=>")[0].strip()
                paths.append(prefix.rstrip(".") + "." + name)
        elif part:
            paths.append(part)
    return paths


def _longest_package(path: str, known: set[str]) -> str | None:
    """The longest known package that ``path`` names or lies in."""
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def _relative(package: str, root: str) -> str | None:
    if package == root:
        return ""
    return package[len(root) + 1:] if package.startswith(root + ".") else None


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each with one cycle through
    them, as a path that ends where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for next_node in sorted(graph.get(node, ())):
            if next_node not in index:
                visit(next_node)
                low[node] = min(low[node], low[next_node])
            elif next_node in on_stack:
                low[node] = min(low[node], index[next_node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the first node of a strongly connected component (breadth first)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for next_node in sorted(graph.get(node, ())):
                if next_node == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if next_node in members and next_node not in came_from:
                    came_from[next_node] = node
                    following.append(next_node)
        frontier = following
    raise AssertionError(f"no cycle in the component {component}")


def _reaches(graph: Mapping[str, Iterable[str]], source: str, target: str) -> bool:
    seen, todo = {source}, [source]
    while todo:
        for next_node in graph.get(todo.pop(), ()):
            if next_node == target:
                return True
            if next_node not in seen:
                seen.add(next_node)
                todo.append(next_node)
    return False


def report(title: str, graph: Graph, verbose: bool) -> bool:
    """Prints the cycles of ``graph`` (and with ``verbose`` the graph); whether there are none."""
    if verbose:
        print(f"{title}:")
        for node in sorted(graph):
            print(f"  {node or '(root)'} -> {', '.join(sorted(d or '(root)' for d in graph[node])) or '-'}")
    found = cycles(graph)
    for cycle in found:
        print(f"{title}: import cycle: {' -> '.join(n or '(root)' for n in cycle)}")
        members = set(cycle)
        others = sorted(n for n, deps in graph.items() if n not in members and _reaches(graph, n, cycle[0])
                        and _reaches(graph, cycle[0], n))
        if others:
            print(f"  (also in the cycle's component: {', '.join(n or '(root)' for n in others)})")
    return not found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (default: the one this script is in)")
    parser.add_argument("--python-only", action="store_true", help="check the Python modules only")
    parser.add_argument("--verbose", action="store_true", help="print the graphs")
    args = parser.parse_args(argv)
    clean = report("python/jetspark", python_graph(args.root / "python" / "jetspark"), args.verbose)
    if not args.python_only:
        clean &= report("jvm packages", scala_graph(args.root / "jvm" / "src" / "main" / "scala"), args.verbose)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
