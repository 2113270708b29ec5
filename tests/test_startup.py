"""Start-up stays lean (issue 20 item 9): what a command imports, checked in a fresh interpreter through the
console script's own entry (``wqtool._entry.main``). The timings are ``bench/bench_startup.py``'s (``make bench``);
here only the import graph, which is what the time follows from."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAVY = ("typer", "rich", "construct", "pydantic", "email", "importlib.metadata", "wqtool.cli", "wqtool.formats",
         "wqtool.commands", "wqtool._run")


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
            "def ran(m):   # typer deferred by wqtool._run (never run) is not imported\n"
            "    return not (m == 'typer' and type(sys.modules[m]).__name__ == '_Deferred')\n"
            f"heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in {HEAVY!r}) "
            "and ran(m))\n"
            "print(repr((heavy, rc, out.getvalue())))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    heavy, rc, out = eval(r.stdout)
    return {m.split(".")[0] if not m.startswith(("wqtool.", "importlib.")) else ".".join(m.split(".")[:2])
            for m in heavy}, rc, out


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_imports_nothing_heavy(flag):
    """``wqtool --version`` answers before the CLI is imported: no typer, rich, construct, pydantic, not even the
    table-parsed path (``wqtool._run``)."""
    mods, rc, out = _imported([flag])
    assert (rc, out) == (0, "wqtool 0.2.0\n")
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
    assert eval(loaded.stdout) == ["wqtool.commands._coerce", "wqtool.commands._help", "wqtool.commands._options",
                                   "wqtool.commands._spark", "wqtool.commands.verify"], loaded.stdout


@pytest.mark.parametrize("argv", [
    ["verify", "-q", "--as-of", "last", "fixtures/workq/sample-clean/log"],
    ["verify", "--as-of", "last", "--max-findings", "3", "-f", "workq", "fixtures/workq/sample-clean/log"],
    ["dump", "-n", "1", "fixtures/workq/sample-clean/log"],
    ["replay", "--summary", "--as-of", "last", "fixtures/workq/sample-clean/log"],
    ["stats", "-o", "json", "--as-of", "last", "fixtures/workq/sample-clean/log"],
    ["verify", "--as-of", "last", "fixtures/kestrel/clean-journal/queue"],
])
def test_a_plain_hot_command_imports_neither_typer_nor_construct(argv):
    """A plain command line of verify, dump, replay or stats is parsed with the table generated from the typer app
    (``wqtool._run.plain``): typer stays deferred, never run; no schema declaration is built (construct)."""
    mods, rc, out = _imported(argv)
    assert rc == 0 and (bool(out) != ("-q" in argv)), argv
    assert not mods & {"typer", "construct", "pydantic", "wqtool.cli"}, (argv, mods)


def test_a_command_line_the_table_does_not_cover_is_typers():
    """Help, errors and what the table does not cover run typer as before."""
    mods, rc, out = _imported(["verify", "--help"])
    assert rc == 0 and "Usage: wqtool verify" in out and {"typer", "wqtool.cli"} <= mods
    mods, rc, out = _imported(["verify", "-o", "foo", "fixtures/workq/sample-clean/log"])
    assert rc == 2 and {"typer", "wqtool.cli"} <= mods


def test_option_errors_keep_their_words_without_pydantic(in_root):
    """The plain coercion gives the same usage errors typer's adapter gave (a parser's own message, an Enum's
    choices)."""
    from tests.conftest import cli
    r = cli("dump", "-n", "abc", "x")
    assert r.code == 2 and "Invalid value for '--limit' / '-n': expected a whole number, got 'abc'" in r.err
    r = cli("verify", "-o", "foo", "x")
    assert r.code == 2 and "'foo' is not one of 'table', 'jsonl', 'json'." in r.err
    assert cli("verify", "--engine", "LOCAL", "-q", "fixtures/workq/sample-clean/log").code in (0, 1)


@pytest.mark.parametrize("argv, loaded", [
    (["verify", "-q", "--as-of", "last", "fixtures/workq/sample-clean/log"], {"workq"}),
    (["dump", "-n", "1", "fixtures/workq/sample-clean/log"], {"workq"}),
    (["verify", "-q", "--as-of", "last", "fixtures/kestrel/clean-journal/queue"], {"workq", "kestrel"}),
])
def test_detection_loads_formats_up_to_the_first_strong_claim(argv, loaded):
    """The registry imports the built-in format packages in detection order, one at a time, as detection reaches
    them (``format.in_order``): a workq log — the first format's — loads no other format's package; a Kestrel
    queue loads workq's (asked first) and Kestrel's, no more."""
    code = ("import sys, io, contextlib\n"
            f"sys.argv = ['wqtool', *{argv!r}]\n"
            "from wqtool._entry import main\n"
            "try:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        main()\n"
            "except SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('wqtool.engine.') and "
            "m.count('.') >= 3}))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from wqtool.engine.format import BUILTIN
    packages = {p.rsplit(".", 1)[1] for p in BUILTIN}
    assert set(eval(r.stdout)) & packages == loaded, r.stdout
