"""The forwarder (the client side of the libfastjournal design, per the unimplemented design): every pending line
goes to a real daemon over loopback and is blanked only once acknowledged; a crash between an acknowledgement and
its blanking resends that line alone, which changes nothing on the daemon."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import cli
from wqtool.engine.format import Options, get
from wqtool.engine.snaplist.pack import content_lines
from wqtool.engine.snaplist.writer import acknowledge, append_raw, append_request
from wqtool.errors import InputError, UsageError
from wqtool.formats.snap import Function
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
    want = {u: (e.priority, e.key_start_date) for u, e in FMT.run_log(log, OPTS).state.entries.items()}
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
def test_kill_between_acknowledgement_and_blanking_resends_only_that_line(tmp_path, window):
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
        rep = FMT.send(FMT.discover([d], OPTS)[0], target, OPTS)
        assert (rep.sent, rep.failed) == (5, 0)
        sets = {k: v for (f, k), v in r.server.keys.items() if f == Function.SET}
        assert sets[b"http://f.org/old"] == 1 and sets[b"http://e.com/p0"] == 1     # never resent
        assert sets[b"http://e.com/p1"] == 2                                         # the one line in doubt
        rest = 1 if window == 1 else 2          # a window sends ahead: those lines had no acknowledgement yet
        assert [sets[b"http://e.com/p%d" % i] for i in range(2, 6)] == [rest] * 4
        assert r.server.appender.appended == 7 and len(r.server.fifo) == 7      # resends changed nothing
    for n in os.listdir(d):
        assert content_lines(open(os.path.join(d, n), "rb").read()) == []


def test_replay_send_through_the_cli(tmp_path):
    d = journal(tmp_path / "j")
    with Running(str(tmp_path / "fj")) as r:
        target = f"fastjournal://127.0.0.1:{r.port}"
        dry = cli("replay", "--as-of", AS_OF, "--send", target, "--dry-run", d)
        assert dry.code == 0 and "would send 8, skipped 2" in dry.out and r.server.stats[Function.SET] == 0
        res = cli("replay", "--as-of", AS_OF, "--send", target, d)
        assert res.code == 0 and f"{target}: sent 8, skipped 2, failed 0" in res.out
        assert r.server.fifo.get(b"http://e.com/p1").priority == 9      # the newest line for p1 won
    assert cli("replay", "--send", "http://x", d).code == 2
    assert json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, d).out)["entries"]
