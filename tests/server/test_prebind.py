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


def _connect_when_bound(port: int, p: subprocess.Popen, timeout: float) -> socket.socket:
    """A connection to the server ``p`` as soon as its port accepts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.002)


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
                                             (("000000001.log",), True), (("notes.txt",), True)])
def test_binds_early_for_any_directory_it_can_list(tmp_path, clean_prebind, contents, bound):
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


@pytest.mark.parametrize("create, bound", [((), False), (("--create",), True)])
def test_a_missing_directory_is_bound_for_only_with_create(tmp_path, clean_prebind, create, bound):
    """Without --create the CLI refuses a missing -cmdlog-path (exit 2): no early client is accepted for it."""
    port = _free_port()
    assert prebind.early(["-listen", f"127.0.0.1:{port}", "-cmdlog-path", str(tmp_path / "no"), *create]) is bound
    assert not (tmp_path / "no").exists()


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
                          str(tmp_path / "log"), "--create"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        s = _connect_when_bound(port, p, 20)
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


@pytest.mark.parametrize("argv", [["-h"], ["--traceback"], ["--fastjournal", "x"], ["-cmdlog-seg-size", "0x10"],
                                  ["-cmdlog-seg-size", "010"], ["-cmdlog-sync", "never"], ["--log-level", "trace"],
                                  ["-log-level", "info"], ["--max-connections", "0"], ["--idle-timeout", "nan"],
                                  ["-listen"], ["extra"], ["-bogus"]])
def test_the_lean_start_leaves_anything_unusual_to_the_cli(argv):
    assert prebind.lean(argv) is None


@pytest.mark.parametrize("extra, said", [((), False), (("--sync-rolled",), True)])
def test_sync_rolled_reaches_the_server_on_the_lean_start(tmp_path, extra, said):
    """``--sync-rolled`` is one of the lean start's flags (no CLI import for it) and the server says it is on."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-path",
                          str(tmp_path / "log"), "--create", *extra], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        line = b""
        while b"msg=listening" not in line:
            line = p.stderr.readline()
            assert line, "the server stopped before it listened"
    finally:
        p.terminate()
        p.wait(20)
    assert (b" sync_rolled=on" in line) is said and b" sync=interval" in line
    assert b"imported=" in line                 # the lean start's mark: the CLI was not needed


def test_the_lean_start_leaves_a_refused_log_to_the_cli(tmp_path):
    """A log the server refuses: lean() returns None having changed nothing, and the CLI reports it as always."""
    d = tmp_path / "log"
    d.mkdir()
    (d / "000000001.log").write_bytes(b"not a workq segment header")
    before = sorted(os.listdir(d))
    assert prebind.lean(["-listen", "127.0.0.1:0", "-cmdlog-path", str(d)]) is None
    assert sorted(os.listdir(d)) == before
    r = subprocess.run([sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-path", str(d)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert r.returncode == 3 and "refusing to serve" in r.stderr and "Traceback" not in r.stderr


def test_the_lean_start_leaves_a_bad_flag_value_to_the_cli(tmp_path):
    r = subprocess.run([sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-sync", "interval",
                        "-cmdlog-sync-int", "0"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert r.returncode == 2 and "Invalid sync interval, must be greater than 0" in r.stderr


def test_the_serve_start_imports_no_cli(tmp_path):
    """The lean start: typer, click, rich and the other commands are not imported to serve."""
    code = ("import sys, threading, os, signal\n"
            "sys.argv = ['wqtool', 'serve', '-listen', '127.0.0.1:0']\n"
            "threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()\n"
            "from wqtool._entry import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n"
            "    bad = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'pydantic')\n"
            "                 or m.startswith('wqtool.commands') or m == 'wqtool.cli')\n"
            "    print('exit', e.code, 'imported', bad)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert r.stdout.strip().splitlines()[-1] == "exit 0 imported []", (r.stdout, r.stderr)


def test_only_the_first_server_of_a_process_counts_from_the_process_start(monkeypatch):
    """The restart instant is the process's start for its first server only: a later server in the same process
    (the test suite runs hundreds) starts at its own start. Counting every server from the process's start made
    a restarted job's fresh TTL end before the server started, once the test process had run a minute."""
    monkeypatch.setattr(prebind, "started_ns", time.time_ns() - 120 * 10**9)
    assert prebind.since_start() >= 120 * 10**9
    assert prebind.since_start() == 0


def test_on_a_big_log_clients_connect_at_once_and_are_answered_when_the_replay_ends(tmp_path):
    """Issue 33 item 1: the port is bound before the replay (and before the imports); a client that connects during
    the replay waits in the socket and gets its answer once the replay ends, as workq-server's clients do."""
    import select

    from wqtool.engine.workq.writer import SegmentWriter, add
    from wqtool.formats._common import GoTime
    d = tmp_path / "log"
    now = GoTime.from_unix_ns(time.time_ns())
    with SegmentWriter(str(d), segment_size=400) as w:
        for i in range(3000):
            w.append(add(bytes.fromhex("00000000000040008000%012x" % i), f"big-{i % 7}", ttr=60000, ttl=3_600_000,
                         created=now, payload=b"x" * 40), now)
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "wqtool", "serve", "-listen", f"127.0.0.1:{port}", "-cmdlog-path",
                          str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        s = _connect_when_bound(port, p, 30)
        # nothing on the server's stdout yet: it prints "Listening" (flushed) when the replay ends
        replaying = not select.select([p.stdout], [], [], 0)[0]
        s.settimeout(30)
        s.sendall(b"inspect queue big-6\r\n")
        got = b""
        while got.count(b"\r\n") < 4:
            part = s.recv(4096)
            assert part, got
            got += part
        s.close()
        assert got == b"+OK 1\r\nbig-6 2\r\nready-len 428\r\nscheduled-len 0\r\n"
        assert replaying                                              # connected before the replay ended
        assert any(line.startswith(b"Listening") for line in iter(p.stdout.readline, b""))   # printed since
    finally:
        p.terminate()
        p.wait(20)
    assert p.returncode == 0
