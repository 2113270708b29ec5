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
