"""A user's own module that the workers cannot import (a helper next to a script run from another
directory) on a two-executor cluster: its functions travel pickled by value with the job, and items made
of its classes (pickled by reference) need `jet.add_py_file`; without it the job fails with the
worker's ModuleNotFoundError in its message (docs/errors.md)."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import CLUSTER_SESSION, run_python

pytestmark = pytest.mark.slow

HELPER = '''
SUFFIX = "!"


def emphasize(text):
    return text.upper() + SUFFIX


def shout(x):
    return emphasize(str(x))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
'''

SCRIPT = '''
import json, sys
sys.path.insert(0, HELPER_DIR)  # as Python does for a script's own directory: the driver's alone
import jetspark as js
import shoutlib

jet = CLUSTER_SESSION
out = {}
p = js.Pipeline.create()
p.read_from(js.Sources.items(["a", "b", 3])).rebalance().map(shoutlib.shout).write_to(js.Sinks.list("shouted"))
jet.new_job(p).join(timeout=600)
out["shouted"] = sorted(jet.get_list("shouted"))

p = js.Pipeline.create()
p.read_from(js.Sources.items([shoutlib.Point(1, 2), shoutlib.Point(3, 4)])).rebalance() \\
    .map(lambda point: point.x + point.y).set_name("sums").write_to(js.Sinks.list("sums"))
try:
    jet.new_job(p).join(timeout=600)
    out["without"] = "completed"
except js.JobFailedError as e:
    out["without"] = str(e)
jet.clear_list("sums")
jet.add_py_file(HELPER_DIR + "/shoutlib.py")
jet.new_job(p).join(timeout=600)
out["with"] = sorted(jet.get_list("sums"))
print("RESULT", json.dumps(out))
'''


def test_a_helper_module_outside_the_package_reaches_the_workers(tmp_path):
    helpers, elsewhere = tmp_path / "scripts", tmp_path / "elsewhere"
    helpers.mkdir()
    elsewhere.mkdir()
    (helpers / "shoutlib.py").write_text(textwrap.dedent(HELPER))
    code = SCRIPT.replace("CLUSTER_SESSION", CLUSTER_SESSION).replace("HELPER_DIR", repr(str(helpers)))
    done = run_python(code, cwd=elsewhere, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    assert out["shouted"] == ["3!", "A!", "B!"]
    assert "ModuleNotFoundError: No module named 'shoutlib'" in out["without"], out["without"]
    assert out["with"] == [3, 7]
