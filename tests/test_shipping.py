"""Which of the user's modules are pickled by value for the workers (docs/errors.md, "Your own modules on
the workers"): those the workers cannot import by themselves, found only in the driver's script or working
directory or in a directory added to sys.path as it runs; not those on a path the workers share, such as
PYTHONPATH or an editable install's directory, whose classes a second copy pickled by value would make
foreign to plain pickle."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark import cloudpickle

from jetspark._shipping import ship_modules_of


@pytest.fixture
def helper_module(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    name = f"jetspark_test_helpers_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("class Event:\n    pass\n\ndef make(x):\n    return Event()\n")
    yield name, tmp_path
    module = sys.modules.pop(name, None)
    if module is not None and name in cloudpickle.cloudpickle._PICKLE_BY_VALUE_MODULES:
        cloudpickle.unregister_pickle_by_value(module)


def imported_with(name: str, directory: Path, index: int) -> object:
    sys.path.insert(index, str(directory))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(directory))


def test_a_module_found_only_in_the_scripts_directory_is_shipped_by_value(helper_module):
    name, directory = helper_module
    module = imported_with(name, directory, 0)  # as a script's own directory is sys.path[0]
    assert ship_modules_of([module.make]) == [name]


def test_a_module_on_a_path_the_workers_share_is_left_for_them_to_import(helper_module, monkeypatch):
    name, directory = helper_module
    monkeypatch.setenv("PYTHONPATH", str(directory))  # which the workers' Python reads as this one did
    monkeypatch.setattr(sys, "path", [*sys.path, str(directory)])
    module = importlib.import_module(name)
    assert ship_modules_of([module.make]) == []


def test_a_module_of_a_directory_added_to_sys_path_at_run_time_is_shipped_by_value(helper_module, monkeypatch):
    name, directory = helper_module
    monkeypatch.setattr(sys, "path", [*sys.path, str(directory)])  # as a script's sys.path.append(...) does
    module = importlib.import_module(name)
    assert ship_modules_of([module.make]) == [name]


def test_the_scripts_directory_stays_the_drivers_alone_when_a_directory_is_inserted_before_it(
        helper_module, monkeypatch, tmp_path_factory):
    # The script's directory (sys.path[0]) moved to sys.path[1] by a later sys.path.insert(0, ...), as a
    # script or a test runner does (pytest, for each package root it imports).
    name, directory = helper_module
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.setattr(sys, "path", [str(elsewhere), str(directory), *sys.path])
    module = importlib.import_module(name)
    assert ship_modules_of([module.make]) == [name]
