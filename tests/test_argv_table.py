"""The hot commands' command lines parsed without typer (``wqtool._run.plain``, start-up: issue 20 item 9) behave
exactly as typer's: the table is the typer app's own (regenerated and compared), every golden command line gives
the golden output through it, and everything it does not cover goes to typer untouched (so every message and
exit code is typer's)."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys

import pytest

from tests import golden_outputs
from tests.conftest import QUICK, ROOT, cli

from wqtool import _run
from wqtool._argv_table import COMMANDS

LOG = "fixtures/workq/sample-clean/log"


def plain(*argv: str):
    """(exit code or None, stdout, stderr) of ``_run.plain(argv)`` in-process."""
    from wqtool.render.console import reset
    out, err = io.StringIO(), io.StringIO()
    reset()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _run.plain([str(a) for a in argv])
    reset()
    return code, out.getvalue(), err.getvalue()


def test_the_table_is_the_typer_apps_own():
    r = subprocess.run([sys.executable, "scripts/gen_argv_table.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert set(COMMANDS) == set(_run._HOT)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden")
    golden_outputs.make_generated(str(d))
    link = os.path.join(str(d), "fixtures")
    os.symlink(os.path.join(ROOT, "fixtures"), link)
    return str(d)


def test_every_golden_command_line_gives_the_golden_output_without_typer(workdir, monkeypatch):
    """tests/golden/outputs.json holds what typer's path printed for every case: the table's path prints the same
    bytes and exit code, and takes every one of them (none falls back to typer)."""
    with open(golden_outputs.GOLDEN) as f:
        want = json.load(f)
    cases = golden_outputs.cases()
    if QUICK:
        cases = cases[::4]
    monkeypatch.chdir(workdir)
    bad, declined = [], []
    for name, argv in cases:
        code, out, err = plain(*argv)
        if code is None:
            declined.append(name)
            continue
        b = f"exit {code}\n--- stdout\n{out}--- stderr\n{err}".encode("utf-8", "surrogatepass")
        if [hashlib.sha256(b).hexdigest(), len(b)] != want[name]:
            bad.append(name)
    assert not declined, declined[:5]
    assert not bad, f"{len(bad)} of {len(cases)} differ, e.g. {bad[:5]}"
    assert len(cases) > 250


#: Plain command lines beyond the golden ones: every kind of option the table covers, both ways.
BOTH_WAYS = [
    ["verify", "-q", "--as-of", "last", LOG],
    ["verify", "--as-of=last", LOG, "--max-findings", "1"],
    ["verify", LOG, "-o", "jsonl", "--as-of", "first", "--all-findings"],
    ["verify", "--engine", "LOCAL", "-f", "workq", "--as-of", "last", LOG],
    ["verify", "-O", "drop_expired=1", "--option", "x=y", "--as-of", "last", LOG],
    ["verify", "--horizon", "--live", "--keep-open", "--kestrel-version", "2", "--as-of", "last", LOG],
    ["verify", "--as-of", "-2h", LOG],
    ["verify", "--as-of", "last", LOG, "no/such/dir"],
    ["verify", "--workers", "2", "-o", "json", "--as-of", "last", LOG],
    ["verify", "-f", "kestrel", LOG],
    ["dump", "-n", "3", "--from-offset", "000000001.log@0x11c", LOG],
    ["dump", "-o", "hex", "-n", "2", LOG],
    ["dump", "--type", "add", "-o", "json", "--payload", "hex", LOG],
    ["replay", "--summary", "--as-of", "last", LOG],
    ["replay", "-o", "jsonl", "--as-of", "2026-11-21T23:30:00Z", LOG],
    ["stats", "-o", "json", "--as-of", "last", LOG, LOG],
    ["stats", "-q", LOG],
]


@pytest.mark.parametrize("argv", BOTH_WAYS, ids=lambda a: " ".join(a)[:60])
def test_plain_command_lines_give_what_typer_gives(argv, in_root):
    code, out, err = plain(*argv)
    assert code is not None, "the table should cover this command line"
    r = cli(*argv)
    assert (code, out, err) == (r.code, r.out, r.err)


#: Command lines the table leaves to typer (help, errors, what it does not cover): nothing run, nothing printed.
TO_TYPER = [
    ["verify"], ["verify", "--help"], ["verify", "-h", LOG], ["verify", "--bogus", LOG], ["verify", "-qo", "json", LOG],
    ["verify", "--", LOG], ["verify", "-o", "foo", LOG], ["verify", "-o", "JSON", LOG],
    ["verify", "--max-findings", "abc", LOG], ["verify", "--max-findings", LOG], ["verify", "--explain", "WQ-CRC"],
    ["verify", "--quiet=1", LOG], ["verify", "-", LOG], ["verify", "-o", "json", "-o", "jsonl", LOG],
    ["verify", "--traceback", LOG], ["verify", "--format", "nope", LOG], ["verify", "--jdbc", "sqlite:///x"],
    ["dump", "-n3", LOG], ["dump", "-n", "-1", LOG], ["stats", "--as-of"], ["report", LOG], ["pack", LOG],
    ["--traceback", "verify", LOG], ["-V"], [],
]


@pytest.mark.parametrize("argv", TO_TYPER, ids=lambda a: " ".join(a)[:60] or "(none)")
def test_what_the_table_does_not_cover_goes_to_typer_untouched(argv, in_root):
    assert plain(*argv) == (None, "", "")


def test_a_value_the_options_parser_refuses_is_typers_error(in_root):
    """The parser ran (and refused) in the table's path; typer then parses again and says it, as always."""
    r = cli("verify", "--max-findings", "abc", LOG)
    assert r.code == 2 and "Invalid value for '--max-findings': expected a whole number, got 'abc'" in r.err
    assert plain("verify", "--max-findings", "abc", LOG) == (None, "", "")


def test_the_console_script_says_the_same_both_ways():
    """Through the real console script (typer deferred, not imported) and through ``wqtool.cli.main``."""
    for argv in (["verify", "--as-of", "last", LOG], ["verify", "-o", "foo", LOG], ["verify", "--max-findings",
                                                                                     "x", LOG], ["stats", "--as-of", "last", LOG]):
        fast = subprocess.run([os.path.join(os.path.dirname(sys.executable), "wqtool"), *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        slow = subprocess.run([sys.executable, "-c", "import sys; from wqtool.cli import main; main(sys.argv[1:])",
                               *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), argv
