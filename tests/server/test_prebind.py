"""serve's early listen (wqtool.server.prebind): with nothing to replay the port accepts connections before the
CLI and the server are imported, and the requests sent meanwhile are answered once the server takes the socket
over. Upstream's own system tests connect 100 ms after starting the server (cmd/workq-server/systests
cmdlog_test.go startCmdLogServer, smoke_test.go: time.Sleep(100 * time.Millisecond))."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from wqtool.server import prebind


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def clean_prebind():
    yield
    fd = prebind._held
    prebind._held = None
    if fd is not None:
        os.close(fd[3])


@pytest.mark.parametrize("contents, bound", [((), True), (("append.lock", "read.lock"), True),
                                             (("000000001.log",), False), (("notes.txt",), False)])
def test_binds_early_only_when_there_is_nothing_to_replay(tmp_path, clean_prebind, contents, bound):
    d = tmp_path / "log"
    d.mkdir()
    for name in contents:
        (d / name).write_bytes(b"")
    port = _free_port()
    assert prebind.early(["-listen", f"127.0.0.1:{port}", "-cmdlog-path", str(d)]) is bound
    if bound:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()      # accepted by the kernel
        s = prebind.take("127.0.0.1", port)
        assert s is not None and s.getsockname() == ("127.0.0.1", port)
        s.close()
        assert prebind.take("127.0.0.1", port) is None                       # handed over once


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["--fastjournal", "x"], ["--orth-admin", "x.db"],
                                  ["-bogus", "1"], ["-listen", "127.0.0.1:0"], ["-listen", "nonsense"],
                                  ["-listen"]])
def test_binds_nothing_for_anything_the_cli_must_decide(argv, clean_prebind):
    assert prebind.early(argv) is False
    assert prebind._held is None


def test_a_socket_for_another_address_is_closed_not_used(clean_prebind):
    port = _free_port()
    assert prebind.early([f"-listen=127.0.0.1:{port}"])
    assert prebind.take("127.0.0.1", port + 1) is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_a_request_sent_before_the_server_is_ready_is_answered(tmp_path):
    """The console entry point binds first: a client connecting as soon as the port accepts gets its reply."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "wqtool", "serve", "-listen", f"127.0.0.1:{port}", "-cmdlog-path",
                          str(tmp_path / "log")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline and p.poll() is None
                time.sleep(0.005)
        s.settimeout(20)
        s.sendall(b"add 00000000-0000-4000-8000-000000000001 q 1000 60000 1\r\nx\r\nlease q 0\r\n")
        got = b""
        while not got.endswith(b"x\r\n"):
            d = s.recv(4096)
            assert d, got
            got += d
        assert got == b"+OK\r\n+OK 1\r\n00000000-0000-4000-8000-000000000001 q 1000 1\r\nx\r\n"
        s.close()
    finally:
        p.terminate()
        p.wait(20)
    assert p.returncode == 0
