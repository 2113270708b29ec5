"""-q/--quiet on every command (issue 20 item 4): nothing on stdout, errors still on stderr, the exit code the
same as the run without it — for cron's ``repair/clean/pack --apply -q``. One option definition
(``commands._options.QuietOpt``) serves them all."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import AS_OF, ROOT, cli, fixture_log

COMMANDS = ("dump", "verify", "replay", "stats", "pack", "repair", "clean", "report")


def _copy(name: str, dst) -> str:
    shutil.copytree(fixture_log(name), dst)
    for n in os.listdir(dst):
        os.chmod(os.path.join(dst, n), 0o644)
    return str(dst)


def _argv(cmd: str, log: str, tmp_path) -> list[str]:
    if cmd == "report":
        return ["report", "--as-of", AS_OF, "--out", str(tmp_path / f"r{len(os.listdir(tmp_path))}.html"), log]
    if cmd in ("dump", "stats"):
        return [cmd, log]
    return [cmd, "--as-of", AS_OF, log]


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("name", ["sample-clean", "torn-tail-mid-record"])
def test_quiet_prints_nothing_and_keeps_the_exit_code(cmd, name, tmp_path):
    log = fixture_log(name)
    loud = cli(*_argv(cmd, log, tmp_path))
    said = loud.err if cmd == "report" else loud.out       # report's stdout is the page it writes: a note on stderr
    assert said, f"{cmd} says something without -q"
    for flag in ("-q", "--quiet"):
        quiet = cli(*_argv(cmd, log, tmp_path)[:1], flag, *_argv(cmd, log, tmp_path)[1:])
        assert (quiet.code, quiet.out) == (loud.code, ""), (cmd, flag, quiet)
        if cmd == "report" or name == "sample-clean":
            assert quiet.err == "", (cmd, flag, quiet.err)


@pytest.mark.parametrize("cmd", ["repair", "clean", "pack"])
def test_apply_quiet_for_cron(cmd, tmp_path):
    """``--apply -q``: the same change as without -q, the same exit code, nothing on stdout."""
    name = "torn-tail-mid-record" if cmd == "repair" else "upstream-b-before-clean"
    a, b = _copy(name, tmp_path / "a"), _copy(name, tmp_path / "b")
    loud = cli(cmd, "--apply", "--as-of", AS_OF, a)
    quiet = cli(cmd, "--apply", "-q", "--as-of", AS_OF, b)
    assert loud.out and quiet.out == "" and quiet.code == loud.code
    names = lambda d: sorted(n for n in os.listdir(d) if not n.startswith("."))    # noqa: E731
    assert names(a) == names(b)
    again = cli("verify", "-q", "--as-of", AS_OF, b)
    assert again.out == "" and again.code == cli("verify", "--as-of", AS_OF, a).code


def test_quiet_errors_still_on_stderr(tmp_path):
    """A PATH that names no log: its one line on stderr, stdout empty, the same exit code."""
    missing = str(tmp_path / "nope")
    for cmd in COMMANDS:
        loud = cli(*_argv(cmd, missing, tmp_path))
        quiet = cli(cmd, "-q", *_argv(cmd, missing, tmp_path)[1:])
        assert quiet.out == "" and quiet.code == loud.code != 0, cmd
        assert "nope" in quiet.err, (cmd, quiet.err)


def test_stdout_is_given_back_after_a_quiet_run():
    """The funnel restores stdout (the API and the in-process harness keep running after a command)."""
    import sys
    before = sys.stdout
    cli("verify", "-q", fixture_log("sample-clean"))
    assert sys.stdout is before
    assert cli("dump", "-n", "1", fixture_log("sample-clean")).out
