"""The README's example runs, prints what the README says, and its picture is the plan's."""

from __future__ import annotations

import contextlib
import io
import re

from conftest import REPO

README = (REPO / "README.md").read_text()


def block(language: str, after: str) -> str:
    section = README.split(after, 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def test_the_first_pipeline_prints_what_the_readme_says_and_draws_the_readme_picture(jet):
    code = block("python", "## A first pipeline")
    printed = io.StringIO()
    namespace: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)  # noqa: S102 - the README's own example
    promised = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    assert printed.getvalue().splitlines() == promised
    assert namespace["p"].to_mermaid(parallelism=2).strip() == block("mermaid", "## A first pipeline").strip()
