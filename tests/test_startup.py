"""Start-up stays lean (issue 20 item 9): what a command imports, checked in a fresh interpreter through the
console script's own entry (``wqtool._entry.main``). The timings are ``bench/bench_startup.py``'s (``make bench``);
here only the import graph, which is what the time follows from."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAVY = ("typer", "rich", "construct", "pydantic", "email", "importlib.metadata", "wqtool.cli", "wqtool.formats",
         "wqtool.commands")


def _imported(argv: list[str]) -> tuple[set[str], int, str]:
    """The modules (of HEAVY) a run of ``wqtool argv`` imported, its exit code and stdout."""
    code = ("import sys, io, contextlib\n"
            f"sys.argv = ['wqtool', *{argv!r}]\n"
            "from wqtool._entry import main\n"
            "out = io.StringIO()\n"
            "try:\n"
            "    with contextlib.redirect_stdout(out):\n"
            "        main()\n"
            "except SystemExit as e:\n"
            "    rc = e.code\n"
            f"heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in {HEAVY!r}))\n"
            "print(repr((heavy, rc, out.getvalue())))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    heavy, rc, out = eval(r.stdout)
    return {m.split(".")[0] if not m.startswith(("wqtool.", "importlib.")) else ".".join(m.split(".")[:2])
            for m in heavy}, rc, out


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_imports_nothing_heavy(flag):
    """``wqtool --version`` answers before the CLI is imported: no typer, rich, construct, pydantic."""
    mods, rc, out = _imported([flag])
    assert (rc, out) == (0, "wqtool 0.1.0\n")
    assert mods == set(), mods


def test_verify_of_a_small_log_imports_neither_pydantic_nor_rich():
    """``verify`` of a small workq log: no pydantic (typer's coercion replaced for wqtool's plain options,
    ``commands._coerce``) and so neither its plugin loader's ``importlib.metadata`` nor ``email``; no rich (no
    progress bar without a terminal); no other command's module."""
    for argv in (["verify", "-q", "--as-of", "last", "fixtures/workq/sample-clean/log"],
                 ["verify", "-o", "json", "--as-of", "last", "fixtures/workq/sample-clean/log"],
                 ["verify", "--max-findings", "3", "--as-of", "last", "fixtures/workq/sample-clean/log"]):
        mods, rc, out = _imported(argv)
        assert rc == 0, argv
        assert not mods & {"pydantic", "email", "importlib.metadata", "rich"}, (argv, mods)
    loaded = subprocess.run([sys.executable, "-c", "import sys; from wqtool.cli import run; "
                             "import io, contextlib\n"
                             "with contextlib.redirect_stdout(io.StringIO()): run(['verify', '-q', "
                             "'fixtures/workq/sample-clean/log'])\n"
                             "print(sorted(m for m in sys.modules if m.startswith('wqtool.commands.')))"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert eval(loaded.stdout) == ["wqtool.commands._coerce", "wqtool.commands._edge", "wqtool.commands._help",
                                   "wqtool.commands._options", "wqtool.commands._spark", "wqtool.commands.verify"], \
        loaded.stdout     # _edge: the exit codes cli.run hands the command


def test_option_errors_keep_their_words_without_pydantic(in_root):
    """The plain coercion gives the same usage errors typer's adapter gave (a parser's own message, an Enum's
    choices)."""
    from tests.conftest import cli
    r = cli("dump", "-n", "abc", "x")
    assert r.code == 2 and "Invalid value for '--limit' / '-n': expected a whole number, got 'abc'" in r.err
    r = cli("verify", "-o", "foo", "x")
    assert r.code == 2 and "'foo' is not one of 'table', 'jsonl', 'json'." in r.err
    assert cli("verify", "--engine", "LOCAL", "-q", "fixtures/workq/sample-clean/log").code in (0, 1)
