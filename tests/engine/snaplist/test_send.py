"""The forwarder (the client side of the libfastjournal design, per the unimplemented design): every pending line
goes to a real daemon over loopback and is blanked only once acknowledged; a crash between an acknowledgement and
its blanking resends nothing: the daemon is asked first."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import cli
from wqtool.engine.format import Options, get
from wqtool.engine.snaplist.pack import content_lines
from wqtool.engine.snaplist.writer import acknowledge, append_raw, append_request
from wqtool.errors import InputError, UsageError
from wqtool.formats.fastjournal import Function
from wqtool.server.fastjournal import Running

AS_OF_US = 1_769_743_800_000_000
AS_OF_NS = AS_OF_US * 1000
AS_OF = "2026-01-30T03:30:00Z"
MIN = 60_000_000
FMT = get("snaplist")
OPTS = Options(AS_OF_NS)


def journal(root, n: int = 6, extra: bool = True) -> str:
    d = str(root)
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        append_request(d, b"http://e.com/p%d" % i, AS_OF_US - (20 - i) * MIN, priority=i)
    append_request(d, b"http://e.com/p1", AS_OF_US - 2 * MIN, priority=9)            # a newer request for p1
    append_request(d, b"http://f.org/old", AS_OF_US - 70 * MIN)                       # the previous hour
    _h, off, ln = append_request(d, b"http://e.com/done", AS_OF_US - 21 * MIN)
    acknowledge(os.path.join(d, "3.msg"), off, len(ln))
    if extra:
        append_raw(d, 3, b"priority=1;uri=http://e.com/skipped\n")
        append_raw(d, 3, b"priority=1;key_start_date=%d;uri=http://e.com/a;b\n" % AS_OF_US)
        append_raw(d, 3, b"priority=1;key_start_date=%d;uri=http://e.com/torn" % AS_OF_US)
    return d


def entries(server) -> dict:
    return {u: (e.priority, e.key_start_date) for u, e in server.fifo.entries.items()}


def test_forward_sends_every_pending_line_and_blanks_it(tmp_path):
    d = journal(tmp_path / "j", extra=False)
    (log,) = FMT.discover([d], OPTS)
    want = {u: (e.priority, e.key_start_date) for u, e in FMT.passes.run_log(log, OPTS).state.entries.items()}
    with Running(str(tmp_path / "fj")) as r:
        rep = FMT.send(log, f"fastjournal://127.0.0.1:{r.port}", OPTS)
        assert (rep.sent, rep.skipped, rep.failed) == (8, 0, 0)
        assert entries(r.server) == want              # the daemon holds what replay says: the newest p1 wins
        assert all(not content_lines(open(os.path.join(d, n), "rb").read()) for n in os.listdir(d))
        again = FMT.send(FMT.discover([d], OPTS)[0], f"fastjournal://127.0.0.1:{r.port}", OPTS)
        assert (again.sent, again.skipped, again.failed) == (0, 0, 0)


def test_lines_upstream_would_skip_or_misread_are_kept(tmp_path):
    d = journal(tmp_path / "j")
    with Running(str(tmp_path / "fj")) as r:
        rep = FMT.send(FMT.discover([d], OPTS)[0], f"fastjournal://127.0.0.1:{r.port}", OPTS)
    assert (rep.sent, rep.skipped) == (8, 2)
    kept = content_lines(open(os.path.join(d, "3.msg"), "rb").read())
    assert kept == [b"priority=1;uri=http://e.com/skipped\n",
                    b"priority=1;key_start_date=%d;uri=http://e.com/a;b\n" % AS_OF_US,
                    b"priority=1;key_start_date=%d;uri=http://e.com/torn" % AS_OF_US]
    assert any("SL-MISSING-FIELD" in x for x in rep.lines) and any("SL-URI-SEMICOLON" in x for x in rep.lines)


def test_dry_run_sends_and_changes_nothing(tmp_path):
    d = journal(tmp_path / "j")
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    rep = FMT.send(FMT.discover([d], OPTS)[0], "fastjournal://127.0.0.1:9", OPTS, dry_run=True)   # never connects
    assert rep.sent == 8 and rep.dry_run and all(x.startswith(("would send", "kept")) for x in rep.lines)
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_targets(tmp_path):
    d = journal(tmp_path / "j")
    (log,) = FMT.discover([d], OPTS)
    for bad in ("orth://x:1", "fastjournal://host", "fastjournal://h:1/path"):
        with pytest.raises(UsageError):
            FMT.send(log, bad, OPTS)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                            # nothing listens there now
    with pytest.raises(InputError, match="cannot connect"):
        FMT.send(log, f"fastjournal://127.0.0.1:{port}", OPTS)


CRASHER = """
import os, signal, sys
from wqtool.engine.format import Options, get
from wqtool.engine.snaplist import send
send.WINDOW = int(sys.argv[3])
fmt = get("snaplist")
(log,) = fmt.discover([sys.argv[1]], Options(int(sys.argv[4])))
acked = []
def hook(when, line):
    if when == "acked":
        acked.append(line)
        if len(acked) == 3:
            os.kill(os.getpid(), signal.SIGKILL)      # between the daemon's acknowledgement and the blanking
send.forward(log, sys.argv[2], hook=hook)
"""


@pytest.mark.parametrize("window", [1, 32])
def test_kill_between_acknowledgement_and_blanking_resends_nothing(tmp_path, window):
    """Killed after the daemon acknowledged p1 and before p1 was blanked (with a window of 32, p2..p5 were sent
    too, their replies unread): the next run asks the daemon first, blanks what it already holds without sending
    it again, and sends only what it never had. Every SET reaches the daemon exactly once."""
    d = str(tmp_path / "j")
    os.makedirs(d)
    append_request(d, b"http://f.org/old", AS_OF_US - 70 * MIN)                     # 2.msg, read first
    for i in range(6):
        append_request(d, b"http://e.com/p%d" % i, AS_OF_US - (20 - i) * MIN)       # 3.msg
    with Running(str(tmp_path / "fj"), track_keys=True) as r:
        target = f"fastjournal://127.0.0.1:{r.port}"
        p = subprocess.run([sys.executable, "-c", CRASHER, d, target, str(window), str(AS_OF_NS)], timeout=60,
                           capture_output=True)
        assert p.returncode == -signal.SIGKILL, p.stderr.decode()
        # acknowledged and blanked: f.org/old and p0; p1 acknowledged, killed before its blanking
        assert content_lines(open(os.path.join(d, "2.msg"), "rb").read()) == []
        assert len(content_lines(open(os.path.join(d, "3.msg"), "rb").read())) == 5
        in_flight = 3 if window == 1 else 7          # a window sends ahead: the daemon got p2..p5 as well
        deadline = time.monotonic() + 10
        while r.server.stats[Function.SET] < in_flight and time.monotonic() < deadline:
            time.sleep(0.01)                         # what the dead client sent, all processed by the daemon
        assert r.server.stats[Function.SET] == in_flight
        rep = FMT.send(FMT.discover([d], OPTS)[0], target, OPTS)
        held = 1 if window == 1 else 5
        assert (rep.sent, rep.already, rep.failed) == (5 - held, held, 0), rep.lines
        assert "blanked 3.msg@0x40: http://e.com/p1 (already at the daemon: not sent)" in rep.lines
        sets = {k: v for (f, k), v in r.server.keys.items() if f == Function.SET}
        assert sets == {b"http://f.org/old": 1, **{b"http://e.com/p%d" % i: 1 for i in range(6)}}
        assert r.server.appender.appended == 7 and len(r.server.fifo) == 7
    for n in os.listdir(d):
        assert content_lines(open(os.path.join(d, n), "rb").read()) == []


def _line(uri=b"http://e.com/x", prio=3, ksd=AS_OF_US):
    from wqtool.engine.snaplist.model import Line
    return Line("3.msg", 0, 0, 0, 3, "pending", uri=uri, priority=prio, key_start_date=ksd, valid=True)


def test_the_probe_follows_the_fifo_rules(tmp_path):
    """delivered() says "a SET of this line would change nothing" exactly when the daemon's fifo says so: run the
    SET after the probe and check that it changed nothing (or something) as predicted."""
    from wqtool.engine.fastjournal.client import Client
    from wqtool.engine.snaplist.send import _Conn, delivered, get_request
    u = b"http://e.com/x"
    cases = [  # (what the daemon holds first, the line) -> delivered
        (None, (3, AS_OF_US), False),
        (("set", 3, AS_OF_US), (3, AS_OF_US), True),          # the same request: a resend
        (("set", 3, AS_OF_US + 1), (3, AS_OF_US), True),      # a newer request for the uri
        (("set", 3, AS_OF_US - 1), (3, AS_OF_US), False),     # an older one: this line updates it
        (("set", 4, AS_OF_US), (3, AS_OF_US), False),         # same timestamp, other priority: an update
        (("del", AS_OF_US), (3, AS_OF_US), True),             # tombstone not older
        (("del", AS_OF_US - 1), (3, AS_OF_US), False),        # an older tombstone: the SET adds it again
        (("complete", AS_OF_US), (3, AS_OF_US), False),       # removed completely: nothing to tell
    ]
    for k, (held, (prio, ksd), want) in enumerate(cases):
        with Running(str(tmp_path / f"fj{k}")) as r:
            c = Client("127.0.0.1", r.port)
            if held and held[0] == "set":
                c.set(u, held[1], held[2], held[2])
            elif held:
                c.set(u, 1, held[1], held[1])
                c.delete(u, held[1], complete=held[0] == "complete")
            conn = _Conn("127.0.0.1", r.port, 10.0)       # the forwarder's own connection: its parser
            conn.send(get_request(7, u))
            probe = conn.reply()
            conn.close()
            assert delivered(probe, _line(u, prio, ksd)) is want, (held, prio, ksd)
            before = r.server.appender.appended
            c.set(u, prio, ksd, ksd)
            assert (r.server.appender.appended == before) is want, (held, prio, ksd)   # nothing journaled
            c.close()


def test_replay_send_through_the_cli(tmp_path):
    d = journal(tmp_path / "j")
    with Running(str(tmp_path / "fj")) as r:
        target = f"fastjournal://127.0.0.1:{r.port}"
        dry = cli("replay", "--as-of", AS_OF, "--send", target, "--dry-run", d)
        assert dry.code == 0 and "would send 8, skipped 2" in dry.out and r.server.stats[Function.SET] == 0
        res = cli("replay", "--as-of", AS_OF, "--send", target, d)
        assert res.code == 0 and f"{target}: sent 8, skipped 2, failed 0" in res.out
        assert r.server.fifo.get(b"http://e.com/p1").priority == 9      # the newest line for p1 won
        append_request(d, b"http://f.org/old", AS_OF_US - 70 * MIN)            # 2.msg: the daemon holds it already
        res = cli("replay", "--as-of", AS_OF, "--send", target, d)
        assert res.code == 0 and f"{target}: sent 0, skipped 2, failed 0, already delivered 1" in res.out
        assert "(already at the daemon: not sent)" in res.out and r.server.stats[Function.SET] == 8
    assert cli("replay", "--send", "http://x", d).code == 2
    assert json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, d).out)["entries"]
