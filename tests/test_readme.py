"""The README's examples run, print what the README says, and its picture is the plan's."""

from __future__ import annotations

import contextlib
import io
import re

from conftest import REPO

README = (REPO / "README.md").read_text()


def block(language: str, after: str) -> str:
    section = README.split(after, 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def run_example(heading: str) -> dict:
    """Runs the first Python block under ``heading``, asserts it prints the ``# `` lines that end it,
    and returns its namespace."""
    code = block("python", heading)
    printed = io.StringIO()
    namespace: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)  # noqa: S102 - the README's own example
    promised = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    assert promised, f"the example under {heading!r} promises no output"
    assert printed.getvalue().splitlines() == promised
    return namespace


def test_the_first_pipeline_prints_what_the_readme_says_and_draws_the_readme_picture(jet):
    namespace = run_example("## A first pipeline\n")
    assert namespace["p"].to_mermaid(parallelism=2).strip() == block("mermaid", "## A first pipeline\n").strip()


def test_the_first_streaming_pipeline_prints_what_the_readme_says(jet):
    jet.clear_list("windows")  # the example's list sink: nothing left from another test
    namespace = run_example("## A first streaming pipeline\n")
    jet.clear_list("windows")
    assert namespace["job"].status.name == "COMPLETED"
