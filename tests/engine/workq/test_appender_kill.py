"""A process killed at any point of a roll-over leaves a log that verifies and serves.

workq-server creates a new segment, then writes its header (int/captain/segment.go:89-118): killed in between, it
leaves a 0-byte newest segment that it refuses to start on (``Replay error, open segment cursor ...: invalid segment
header: EOF``), and so does ``wqtool serve``. Upstream's own TestCmdLog/1K, which kills the server while it writes,
left one in 2 of 4 idle runs here (once workq-server, once serve). The appender now names a segment only once its
header is in it (``appender.create_whole``). Here a child process appends one-record segments and SIGKILLs itself
right after one system call of its second roll-over; then ``wqtool verify`` and ``wqtool serve`` take the directory.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.server.conftest import ServerProc
from wqtool.engine.workq import appender as appender_mod

pytestmark = pytest.mark.skipif(appender_mod._TMPFILE is False, reason="no O_TMPFILE on this platform")

CHILD = r"""
import os, signal, sys
import wqtool.engine.workq.appender as a
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.writer import simple
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

d, point = sys.argv[1], sys.argv[2]
if point == "create-empty":
    a._TMPFILE = False              # the fallback: upstream's order
real_open, real_link, real_write_all, real_write = os.open, os.link, a._write_all, os.write
state = {"rolls": 0, "linked": False}

def die(when):
    if state["rolls"] == 2 and point == when:
        os.kill(os.getpid(), signal.SIGKILL)

def opened(path, flags, *args, **kw):
    fd = real_open(path, flags, *args, **kw)
    if flags & getattr(os, "O_TMPFILE", 0) == getattr(os, "O_TMPFILE", -1):
        state["rolls"] += 1
        state["linked"] = False
        die("tmpfile")
    elif flags & os.O_CREAT and str(path).endswith(".log"):
        state["rolls"] += 1
        die("create-empty")
    return fd

def write_all(fd, data):
    real_write_all(fd, data)
    if bytes(data) == b"wqwq\x00\x00\x00\x01":
        die("header")

def linked(src, dst, **kw):
    real_link(src, dst, **kw)
    state["linked"] = True
    die("link")

def wrote(fd, data):
    n = real_write(fd, data)
    if state["linked"]:
        die("first-records")
    return n

os.open, os.link, a._write_all, os.write = opened, linked, write_all, wrote
ap = a.Appender(d, segment_size=15, defer_roll_sync=lambda fd: fd is not None and os.close(fd))
for i in range(3):
    ap.append([encode_record(GoTime(63930899691 + i, 0), encode_payload(simple(CmdType.DELETE, bytes([i + 1]) * 16)))])
print("not killed")
"""


def run_child(d: str, point: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", CHILD, d, point], capture_output=True, text=True, env=env,
                          timeout=60)


def verify(d: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "wqtool", "verify", "--as-of", "last", d], capture_output=True,
                          text=True, env=env, timeout=60)


@pytest.mark.parametrize("point, segments", [
    ("tmpfile", {"000000001.log": 45}),             # an unnamed file: gone with the process
    ("header", {"000000001.log": 45}),              # the header in the unnamed file: gone as well
    ("link", {"000000001.log": 45, "000000002.log": 8}),    # named, whole: header-only
    ("first-records", {"000000001.log": 45, "000000002.log": 45}),
])
def test_killed_during_a_roll_over_the_log_verifies_and_serves(tmp_path, point, segments):
    d = str(tmp_path / "log")
    os.makedirs(d)
    r = run_child(d, point)
    assert r.returncode == -9, (r.returncode, r.stdout, r.stderr)
    assert {n: os.path.getsize(os.path.join(d, n)) for n in sorted(os.listdir(d))} == segments
    v = verify(d)
    assert v.returncode == 0, v.stdout + v.stderr
    srv = ServerProc("-cmdlog-path", d, timeout=60)        # it starts (RuntimeError if it refuses)
    c = srv.client()
    c.send(b"inspect server\r\n")
    assert c.line().startswith(b"+OK")
    c.close()
    assert srv.stop() == 0


def test_the_fallback_keeps_upstreams_window(tmp_path):
    """Without O_TMPFILE the segment is created empty (upstream's order): killed there, the log is refused, as
    workq-server refuses it. This is the state the test above rules out (and shows the harness can make it)."""
    d = str(tmp_path / "log")
    os.makedirs(d)
    r = run_child(d, "create-empty")
    assert r.returncode == -9, (r.returncode, r.stdout, r.stderr)
    assert {n: os.path.getsize(os.path.join(d, n)) for n in sorted(os.listdir(d))} == {"000000001.log": 45,
                                                                                     "000000002.log": 0}
    v = verify(d)
    assert v.returncode == 1 and "WQ-HDR-EMPTY" in v.stdout, v.stdout   # a torn tail: workq-server refuses it
    with pytest.raises(RuntimeError, match="workq-server would not start on it either"):
        ServerProc("-cmdlog-path", d, timeout=60)
