"""kill -9 loses no acknowledged SET: a real server process is killed while 4 connections write, restarted, and
every SET it acknowledged is there (twice over). Bounded: each phase has a deadline."""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time

import pytest

from wqtool.engine.fastjournal.client import Client, parse_value
from wqtool.engine.format import Options, get
from wqtool.engine.findings import Verdict

SERVER = ("import sys\nfrom wqtool.server.fastjournal import serve\n"
          "serve(sys.argv[1], '127.0.0.1', 0, ready=lambda p: print(p, flush=True))\n")


def start(d: str, timeout: float = 20.0) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, "-c", SERVER, d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        p.kill()
        p.wait(10)
        raise AssertionError("the server did not start: " + p.stderr.read().decode())
    line = p.stdout.readline()
    assert line.strip().isdigit(), p.stderr.read().decode()
    return p, int(line)


def writer(port: int, n: int, acked: dict, stop: threading.Event) -> None:
    """SETs (some updating earlier uris with a newer timestamp) until the connection breaks."""
    try:
        with Client("127.0.0.1", port, timeout=5) as c:
            i = 0
            while not stop.is_set():
                u = b"http://w%d.example/%d" % (n, i % 300)
                ts = time.time_ns()
                r = c.set(u, i % 256, ts // 1000, ts)
                if r.error == b"":
                    acked[u] = (ts, i % 256, ts // 1000)      # newest acknowledged version of u
                i += 1
    except (OSError, ConnectionError):
        pass


def round_trip(d: str, acked: dict, seconds: float) -> None:
    p, port = start(d)
    try:
        stop = threading.Event()
        ts = [threading.Thread(target=writer, args=(port, n, acked, stop)) for n in range(4)]
        for t in ts:
            t.start()
        time.sleep(seconds)
        os.kill(p.pid, signal.SIGKILL)                      # mid-flight
        p.wait(10)
        stop.set()
        for t in ts:
            t.join(10)
            assert not t.is_alive()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)


def check(d: str, acked: dict) -> None:
    p, port = start(d)
    try:
        with Client("127.0.0.1", port, timeout=10) as c:
            for u, (ts, prio, ksd) in acked.items():
                r = c.get(u)
                assert r.error == b"", u
                if r.timestamp == ts:
                    assert parse_value(r.pairs[0][2]) == (prio, ksd)
                else:
                    assert r.timestamp > ts, u               # a newer SET in flight at the kill may have landed
    finally:
        p.terminate()
        p.wait(20)
        assert p.returncode in (0, -signal.SIGTERM)


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_set(tmp_path):
    d = str(tmp_path / "journal")
    acked: dict = {}
    round_trip(d, acked, 0.8)
    n1 = len(acked)
    check(d, acked)
    round_trip(d, acked, 0.8)
    check(d, acked)
    assert n1 > 50 and len(acked) >= n1
    fmt = get("fastjournal")
    (log,) = fmt.discover([d], Options(time.time_ns()))
    rep = fmt.passes.run_log(log, Options(time.time_ns()))
    assert rep.verdict == Verdict.CLEAN          # the restarts truncated any torn tail; the history replays clean


def test_python_dash_m_entry_point(tmp_path):
    """``python -m wqtool.server.fastjournal``: serves until SIGTERM (exit 0); a second server on the same journal
    is refused with one line (exit 5)."""
    d = str(tmp_path / "journal")
    p = subprocess.Popen([sys.executable, "-m", "wqtool.server.fastjournal", "--listen", "127.0.0.1:0", d],
                         stderr=subprocess.PIPE, text=True)
    try:
        sel = selectors.DefaultSelector()
        sel.register(p.stderr, selectors.EVENT_READ)
        assert sel.select(20), "no start-up line"
        line = p.stderr.readline()
        port = int(line.rsplit(":", 1)[1].split()[0])
        with Client("127.0.0.1", port, timeout=10) as c:
            assert c.ping().error == b""
        second = subprocess.run([sys.executable, "-m", "wqtool.server.fastjournal", "--listen", "127.0.0.1:0", d],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 5 and "journal.lock is locked" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
    finally:
        p.terminate()
        p.wait(20)
    assert p.returncode == 0


def test_python_dash_m_reports_every_error_through_the_clis_funnel(tmp_path):
    """``python -m wqtool.server.fastjournal`` ends through the CLI's one funnel (``wqtool._run.settle``): an
    error that is no WqError — the port already taken, an OSError — is one line and the table's exit code (5, as
    for any I/O error), not a traceback (before: only a WqError was caught, with a bare 5)."""
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "wqtool.server.fastjournal", "--listen", f"127.0.0.1:{port}",
                            str(tmp_path / "journal")], capture_output=True, text=True, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 5, r.stderr
    assert len(lines) == 1 and lines[0].startswith("fastjournal: ") and "Traceback" not in r.stderr, r.stderr
