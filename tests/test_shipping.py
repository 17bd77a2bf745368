"""Which of the user's modules are pickled by value for the workers (docs/errors.md, "Your own modules on
the workers"): those the workers cannot import by themselves, found only in the driver's script or working
directory; not those on a path the workers share, such as PYTHONPATH or an editable install's directory,
whose classes a second copy pickled by value would make foreign to plain pickle."""

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
    monkeypatch.setattr(sys, "path", [*sys.path, str(directory)])  # as PYTHONPATH or a .pth file puts it
    module = importlib.import_module(name)
    assert ship_modules_of([module.make]) == []
