"""The lone connection's turn in C (``_proto.lone_turn``, wqtool/server/workq/_core.c) over real loopback sockets,
against the Python path of the same server (``WQTOOL_SERVE_CORE=0``: no core, no lone turn): the same replies byte
for byte and the same number of records for a lone client's stream with pipelined reads, a request the core
declines in the middle of a read, a second connection arriving mid-stream and leaving again, roll-overs
(``-cmdlog-seg-size 400``), ``always`` and ``interval``; a client's EOF inside a body; SIGTERM during a lone
client's stream still stops the server within 2 s. (The log's bytes under a fixed clock and the queue's state:
tests/server/test_core_c.py, in process.)"""
from __future__ import annotations

import re
import signal
import threading
import time

import pytest

from tests.server.conftest import jid, poll
from wqtool.server.workq import server as server_mod

pytestmark = pytest.mark.skipif(server_mod._CORE is None, reason="the C request core is not in use")


def _records(srv) -> int:
    srv.stop()
    m = re.search(r"msg=stopped .*records=(\d+)", srv.stderr_text())
    assert m, srv.stderr_text()
    return int(m.group(1))


def _stream(srv) -> bytes:
    """A lone client's stream, a second connection in the middle of it; every byte the two were sent."""
    a = srv.client()
    got = []

    def ask(c, data: bytes, n_lines: int) -> None:
        c.send(data)
        for _ in range(n_lines):
            got.append(c.line())

    for i in range(1, 31):
        j = jid(i)
        ask(a, b"add %s q1 60000 3600000 5\r\nhello\r\n" % j, 1)
        ask(a, b"lease q1 1000\r\n", 3)                         # +OK 1, the id and the body's line
        if i % 7 == 0:                                          # pipelined: three requests in one read
            ask(a, b"complete %s 2\r\nok\r\nadd %s q1 60000 3600000 1\r\nZ\r\nlease q1 0\r\n" % (j, jid(100 + i)), 5)
            ask(a, b"fail %s 1\r\nx\r\n" % jid(100 + i), 1)
        elif i % 5 == 0:                                        # a flagged add (declined) between two of the core's
            ask(a, b"complete %s 0\r\n\r\nadd %s q2 60000 3600000 1 -priority=7\r\nP\r\nadd %s q2 60000 3600000 1"
                   b"\r\nQ\r\n" % (j, jid(200 + i), jid(300 + i)), 3)
        else:
            ask(a, b"complete %s 2\r\nok\r\n" % j, 1)
        if i == 10:
            b = srv.client()                                    # a second connection arrives mid-stream
        if 10 <= i < 20:
            ask(b, b"add %s q3 60000 3600000 2\r\nbb\r\nlease q3 1000\r\n" % jid(400 + i), 4)
            ask(b, b"complete %s 0\r\n\r\n" % jid(400 + i), 1)
        if i == 20:
            b.close()                                           # ... and leaves: a is the lone one again
    ask(a, b"lease q2 0\r\n", 3)                                # the priority-7 job first
    a.close()
    return b"\n".join(got)


@pytest.mark.parametrize("sync", ["interval", "always"])
def test_a_lone_stream_answers_as_the_python_path(server_factory, tmp_path, sync):
    runs = []
    for name, env in (("lone", {}), ("python", {"WQTOOL_SERVE_CORE": "0"})):
        d = tmp_path / name
        srv = server_factory("-cmdlog-path", str(d), "-cmdlog-sync", sync, "-cmdlog-seg-size", "400", env=env)
        replies = _stream(srv)
        runs.append((replies, _records(srv), len(list(d.glob("*.log")))))
    assert runs[0] == runs[1]
    assert runs[0][1] == 30 * 3 + 4 * 3 + 6 * 2 + 10 * 3 + 1 and runs[0][2] > 5     # (every record; roll-overs)


def test_eof_inside_a_body_as_the_python_path(server_factory, tmp_path):
    """A lone client sends an add and half its body, then shuts its side: upstream's body error, then the close."""
    out = []
    for name, env in (("lone", {}), ("python", {"WQTOOL_SERVE_CORE": "0"})):
        srv = server_factory("-cmdlog-path", str(tmp_path / name), env=env)
        c = srv.client()
        c.send(b"add %s q1 60000 3600000 5\r\nhello\r\n" % jid(1))
        assert c.line() == b"+OK"
        c.send(b"add %s q1 60000 3600000 10\r\nhal" % jid(2))
        c.s.shutdown(2 - 1)                                     # SHUT_WR
        assert c.closed()
        out.append((c.buf, _records(srv)))
    assert out[0] == out[1] and out[0][1] == 1 and out[0][0].startswith(b"-CLIENT-ERROR")


def test_sigterm_during_a_lone_stream_stops_within_2_s(server_factory, tmp_path):
    srv = server_factory("-cmdlog-path", str(tmp_path / "log"))
    c = srv.client()
    stop = threading.Event()
    sent = [0]

    def run() -> None:
        try:
            k = 0
            while not stop.is_set():
                k += 1
                c.send(b"add %s q1 60000 3600000 1\r\nA\r\nlease q1 0\r\ncomplete %s 0\r\n\r\n" % (jid(k), jid(k)))
                for _ in range(5):
                    c.line()
                sent[0] = k
        except (OSError, EOFError):
            pass

    th = threading.Thread(target=run, daemon=True)
    th.start()
    poll(lambda: sent[0] >= 200, timeout=20)
    t0 = time.monotonic()
    srv.p.send_signal(signal.SIGTERM)
    assert poll(lambda: srv.p.poll() is not None, timeout=2.0), "still running 2 s after SIGTERM"
    assert time.monotonic() - t0 < 2.0 and srv.p.returncode == 0
    stop.set()
    c.close()
    th.join(5)
