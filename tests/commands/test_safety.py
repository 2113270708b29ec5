"""Operator safety: FIFOs, devices and sockets are refused without a blocking open or read (a cron
``verify -q`` must never hang), whatever the command, as PATH or inside a log directory."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

from tests.conftest import ROOT, fixture_log


def run(*argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wqtool", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return str(p)


@pytest.mark.parametrize("argv", [["verify", "-q"], ["dump"], ["replay"], ["stats"], ["pack"],
                                  ["verify", "--format", "kestrel"], ["verify", "--format", "workq"],
                                  ["dump", "--format", "kestrel", "--qdump"]])
def test_a_fifo_as_path_is_refused_at_once(fifo, argv):
    r = run(*argv, fifo)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr == f"wqtool: {fifo}: a FIFO, not a log directory or file: refused without reading it\n"


def test_devices_are_not_clean_empty_journals():
    r = run("verify", "/dev/zero")
    assert r.returncode == 2 and "a character device, not a log directory or file" in r.stderr
    r = run("verify", "--format", "kestrel", "/dev/null")
    assert r.returncode == 2 and "a character device" in r.stderr


def test_a_socket_is_refused(tmp_path):
    path = str(tmp_path / "sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    try:
        r = run("verify", path)
    finally:
        s.close()
    assert r.returncode == 2 and "a socket, not a log directory or file" in r.stderr


def test_a_fifo_segment_inside_a_log_is_refused_not_read(tmp_path):
    d = tmp_path / "log"
    shutil.copytree(fixture_log("sample-clean"), d)
    os.unlink(d / "000000004.log")
    os.mkfifo(d / "000000004.log")
    r = run("verify", str(d))
    assert r.returncode == 5, r.stderr
    assert "000000004.log: a FIFO, not a regular file: refused without reading it" in r.stderr


# ---------------------------------------------------------------- detection needs evidence; a forced format must fit
def test_a_forced_format_that_does_not_fit_is_refused():
    r = run("verify", "--format", "kestrel", fixture_log("sample-clean"))
    assert r.returncode == 2 and "--format kestrel does not fit; drop --format or pass --format workq" in r.stderr
    r = run("verify", "--format", "workq", os.path.join(ROOT, "fixtures", "kestrel", "clean-journal", "queue"))
    assert r.returncode == 2 and "--format workq does not fit" in r.stderr


@pytest.fixture
def etc_like(tmp_path):
    """What passed for a Kestrel queue before: text files with Kestrel-looking names, empty files."""
    d = tmp_path / "etc"
    d.mkdir()
    (d / "hosts").write_text("127.0.0.1 localhost\n")
    (d / "hosts.1700000000000").write_text("::1 localhost\n")
    (d / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (d / "motd").write_bytes(b"")
    (d / "subuid").write_bytes(b"")
    return d


def _snapshot(d) -> dict:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_a_directory_of_text_files_is_not_a_kestrel_queue(etc_like):
    before = _snapshot(etc_like)
    r = run("verify", str(etc_like))
    assert r.returncode == 2 and "no log found in this directory" in r.stderr
    r = run("pack", "--salvage", "--apply", str(etc_like))
    assert r.returncode == 2
    assert _snapshot(etc_like) == before


def test_files_that_are_not_journals_beside_a_real_queue_are_named_not_read(etc_like):
    shutil.copy(os.path.join(ROOT, "fixtures", "kestrel", "torn-tail", "queue", "mail"), etc_like / "mail")
    r = run("verify", "-o", "json", str(etc_like))
    import json
    logs = json.loads(r.stdout)["logs"]
    assert [os.path.basename(lg["root"]) for lg in logs] == ["mail", "motd", "subuid"]   # empty: fresh journals
    assert r.returncode == 1     # mail's torn tail; hosts and passwd are never called torn
    found = [f for lg in logs for f in lg["findings"] if f["code"] == "KQ-NOT-JOURNAL"]
    assert len(found) == 1 and "hosts, hosts.1700000000000, passwd" in found[0]["message"]


def test_a_kestrel_journal_damaged_at_its_first_byte_is_corrupt_not_unknown(tmp_path):
    d = tmp_path / "q"
    shutil.copytree(os.path.join(ROOT, "fixtures", "kestrel", "clean-journal", "queue"), d)
    [live] = [p for p in d.iterdir()]
    data = bytearray(live.read_bytes())
    data[0] = 0x42
    live.write_bytes(bytes(data))
    r = run("verify", str(d))
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "KQ-BAD-OPCODE" in r.stdout


def test_writing_from_no_evidence_needs_format(tmp_path):
    """An empty file is no evidence of a format (issue 20 item 5: it was weak Kestrel evidence) unless its directory
    has a Kestrel queue's shape (tests/commands/test_operator2.py); beside another file it needs --format."""
    empty = tmp_path / "jobs"
    empty.write_bytes(b"")
    (tmp_path / "notes.txt").write_text("not a journal\n")
    r = run("pack", "--out", str(tmp_path / "out"), str(empty))
    assert r.returncode == 2 and "an empty file (0 bytes) carries no format's evidence; pass --format" in r.stderr
    assert not (tmp_path / "out").exists()
    r = run("pack", "--format", "kestrel", "--out", str(tmp_path / "out"), str(empty))
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- every number bounded; Ctrl-C at start-up
@pytest.mark.parametrize("argv", [["verify", "--workers", str(10**25)], ["verify", "--max-findings", str(10**25)],
                                  ["dump", "--limit", str(10**25)], ["dump", "--from-offset", str(10**25)],
                                  ["pack", "--segment-size", str(10**25)]])
def test_huge_numbers_are_usage_errors_not_hangs(argv):
    r = run(*argv, fixture_log("sample-clean"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_ctrl_c_during_start_up_is_quiet():
    """Ctrl-C while wqtool is still importing its modules (typer, the engine): exit 130, one line. (A Ctrl-C
    inside the interpreter's own start-up, before any wqtool code runs, is Python's. rich is no longer imported
    at start-up: issue 20 item 9.)"""
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def imp(name, *a, **k):\n"
            "    if name == 'typer' or name.startswith('typer.'):\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = imp\n"
            "sys.argv = ['wqtool', 'verify', sys.argv[1]]\n"
            "from wqtool._entry import main\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code, fixture_log("sample-clean")], cwd=ROOT, capture_output=True,
                       text=True, timeout=30)
    assert (r.returncode, r.stderr) == (130, "wqtool: interrupted\n")
