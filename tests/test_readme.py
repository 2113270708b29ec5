"""The README and the docs are checked against the tool: every `$ wqtool ...` of a fenced block in README.md and in
docs/*.md is re-run and its output compared; the README's Python API examples run as doctests; the exit table
equals the one --help and the man pages are generated from; the README stays a page for users (at most 400 lines,
no issue numbers, no source-tree layout: that is docs/architecture.md's)."""
from __future__ import annotations

import doctest
import glob
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README = os.path.join(ROOT, "README.md")
DOCS = [README, *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]


def _blocks(path: str = README) -> list[tuple[int, str, str]]:
    """(line number, command, expected output) for each `$ wqtool` line inside a ``` block (not ```sh or
    ```python: those are examples, not transcripts; nor ```console: sessions with a running server, whose
    output the server tests assert)."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    fence: str | None = None          # the open block's info string ("" for a plain ``` block)
    cur: list | None = None
    for no, line in enumerate(lines, 1):
        if line.startswith("```"):
            if fence is None:
                fence = line[3:].strip()
            else:
                if cur is not None:
                    out.append(cur)
                    cur = None
                fence = None
            continue
        if fence != "":
            continue
        if line.startswith("$ "):
            if cur is not None:
                out.append(cur)
            cur = [no, line[2:], []]
        elif cur is not None:
            cur[2].append(line)
    return [(no, cmd, "\n".join(body).rstrip("\n")) for no, cmd, body in out]


TOUR = [(f"{os.path.relpath(p, ROOT)}:{no}", cmd, out) for p in DOCS for no, cmd, out in _blocks(p)]


def _norm(text: str) -> str:
    text = re.sub(r"time: \d+\.\d+ s", "time: N s", text)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def test_the_tour_has_its_commands():
    cmds = [c for _, c, _ in _blocks()]
    assert len(cmds) >= 10 and all(c.startswith("wqtool ") for c in cmds)
    for command in ("dump", "verify", "replay", "stats", "report", "pack", "repair", "clean", "schema"):
        assert any(c.startswith(f"wqtool {command} ") for c in cmds), command    # an example of every command
    assert len(TOUR) >= 50 and all(c.startswith("wqtool ") for _, c, _ in TOUR)   # and the docs' transcripts


def test_the_readme_is_a_page_for_users():
    text = open(README, encoding="utf-8").read()
    assert text.count("\n") + 1 <= 400
    for path in DOCS:       # user docs name no issue of this project
        doc = open(path, encoding="utf-8").read()
        assert not re.search(r"\bissues? #?\d+\b|\bissue-\d+", doc), path
    assert "wqtool/engine/" not in text        # the one layout tree is docs/architecture.md's
    tree = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    assert tree.count("wqtool/formats/ ") == 1


@pytest.mark.sweep
@pytest.mark.parametrize("line,command,expected", TOUR, ids=[n for n, _, _ in TOUR])
def test_readme_tour_output_is_what_the_tool_prints(line, command, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    r = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert _norm(r.stdout) == _norm(expected), f"{line}: `{command}` prints (stderr: {r.stderr!r}):\n" \
                                               + r.stdout


def test_readme_python_api_examples(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = open(README, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks and any("wqtool.open(" in b for b in blocks)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, b in enumerate(blocks):
        test = parser.get_doctest(b, {}, f"README python block {i}", README, 0)
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 8


def test_exit_table_in_readme_help_and_man_agree():
    from wqtool.exitcodes import EXIT_TABLE, PRECEDENCE_TEXT
    text = open(README, encoding="utf-8").read()
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", text, re.M)
    assert [(int(c), t) for c, t in rows] == [(int(c), t) for c, t in EXIT_TABLE]
    assert PRECEDENCE_TEXT in text
    from tests.conftest import cli
    help_text = " ".join(cli("verify", "--help").out.split())
    man = open(os.path.join(ROOT, "man", "wqtool-verify.1"), encoding="utf-8").read()
    for code, meaning in EXIT_TABLE:
        assert f"{int(code)} {' '.join(meaning.split())}" in help_text, code
        assert f"\\fB{int(code)}\\fR\n{meaning.replace('-', chr(92) + '-')}" in man, code
    assert PRECEDENCE_TEXT in help_text and PRECEDENCE_TEXT in man
