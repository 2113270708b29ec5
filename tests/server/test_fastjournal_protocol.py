"""The priority-FIFO daemon (per the unimplemented libfastjournal design) over real TCP on loopback: every
function and every reply, stream errors, pipelining, persistence and start-up. Each test starts and stops its own
server on an ephemeral port; every wait has a timeout."""
from __future__ import annotations

import os
import time
import socket
import struct

import pytest

from wqtool.engine.fastjournal.client import Client, parse_value
from wqtool.engine.fastjournal.wire import Request, encode_request
from wqtool.engine.fastjournal.writer import encode_record, set_request
from wqtool.engine.format import Options, get
from wqtool.engine.fsops import LogBusy
from wqtool.errors import InputError
from wqtool.formats.fastjournal import (FLAG_DATA, FLAG_LISTEN, FLAG_OVERWRITE, FLAG_TIMEOUT, FLAG_UPDATE_TIMEOUT,
                                 FjError, Function, ValueType)
from wqtool.server.fastjournal import Running
from wqtool.engine.findings import Verdict

T0 = 1_769_743_800_000_000


class Clock:
    def __init__(self, t: int = T0):
        self.t = t

    def __call__(self) -> int:
        return self.t


@pytest.fixture
def srv(tmp_path):
    clock = Clock()
    r = Running(str(tmp_path / "journal"), clock=clock, track_keys=True)
    r.clock = clock
    r.dir = str(tmp_path / "journal")
    yield r
    r.stop()


@pytest.fixture
def c(srv):
    with Client("127.0.0.1", srv.port, timeout=10) as cl:
        yield cl


def uri(i) -> bytes:
    return b"http://a.com/%d" % i


def test_set_adds_updates_and_the_newest_timestamp_wins(c, srv):
    r = c.set(uri(1), 5, T0 - 10, 100)
    assert (r.error, r.timestamp, r.flags & FLAG_OVERWRITE) == (b"", 100, 0)
    r = c.set(uri(1), 3, T0 - 5, 101)
    assert (r.error, r.timestamp, r.flags & FLAG_OVERWRITE) == (b"", 101, FLAG_OVERWRITE)
    r = c.set(uri(1), 9, T0, 50)                         # older: acknowledged, changes nothing
    assert (r.error, r.timestamp) == (b"", 101)
    r = c.set(uri(1), 3, T0 - 5, 101)                    # the same request again: nothing either
    assert r.error == b"" and len(srv.server.fifo) == 1
    g = c.get(uri(1))
    assert parse_value(g.pairs[0][2]) == (3, T0 - 5) and g.timestamp == 101
    assert c.set(uri(1), 1, T0, 200, overwrite=False).error == FjError.EXISTS
    assert c.set(uri(2), 1, T0, 200, overwrite=False).error == b""


def test_set_refusals(c):
    def call(**kw):
        base = dict(function=Function.SET, flags=FLAG_OVERWRITE, timestamp=1, key=uri(1),
                    value_type=ValueType.BUFFER, value=struct.pack(">BQ", 1, T0))
        base.update(kw)
        return c.call(Request(**base))
    assert call(key=b"").error == FjError.KEY
    assert call(value_type=ValueType.STRING).error == FjError.VALUE
    assert call(value=b"short").error == FjError.VALUE
    assert call(timeout=5).error == FjError.FLAG                      # no TTL in the FIFO
    assert call(flags=FLAG_OVERWRITE | FLAG_LISTEN).error == FjError.FLAG
    assert call(flags=FLAG_OVERWRITE | 1 << 7, count=0, upper_key=b"z").error == FjError.QUERY
    assert call().error == b""


def test_get_and_the_worked_on_mark(c, srv):
    c.set(uri(1), 5, T0 - 10, 100)
    g = c.get(uri(1), data=False)
    assert g.pairs == [(uri(1), None, None)] and g.timeout is None
    assert c.get(uri(9)).error == FjError.NOT_FOUND and c.get(uri(9)).pairs == []
    m = c.get(uri(1), timeout=1_000_000)                 # mark worked on for 1 s
    assert m.error == b"" and m.timeout == T0 + 1_000_000
    assert c.get(uri(1), skip_worked_on=True).error == FjError.WORKED_ON
    assert c.get(uri(1), timeout=5).error == FjError.WORKED_ON            # a mark is extended only with flag 4
    assert c.get(uri(1), timeout=2_000_000, update=True).timeout == T0 + 2_000_000
    assert c.next().pairs == []                          # hidden while worked on
    srv.clock.t = T0 + 2_000_000
    assert c.next().pairs[0][0] == uri(1)                # due again after the timeout
    # GET with an empty key is NEXT over every domain
    assert c.get(b"").pairs[0][0] == uri(1)


def test_next_order_not_before_and_next_job_at_t(c, srv):
    c.set(b"http://b.com/x", 0, T0 - 1, 1)
    c.set(b"http://a.com/late", 0, T0 + 600_000_000, 1)  # not before 10 min from now
    c.set(b"http://a.com/p2", 2, T0 - 100, 1)
    c.set(b"http://a.com/p1-new", 1, T0 - 5, 1)
    c.set(b"http://a.com/p1-old", 1, T0 - 50, 1)
    order = []
    for _ in range(4):
        r = c.next(timeout=3_600_000_000)
        order.append(r.pairs[0][0])
    assert order == [b"http://a.com/p1-old", b"http://a.com/p1-new", b"http://a.com/p2", b"http://b.com/x"]
    r = c.next()
    assert r.pairs == [] and r.error == b"" and r.timeout == T0 + 600_000_000       # "next job at T"
    assert c.next(b"b.com").timeout == T0 + 3_600_000_000                           # b.com: when its mark ends
    c.delete(b"http://a.com/late", 1)
    for u in (b"http://a.com/p1-old", b"http://a.com/p1-new", b"http://a.com/p2", b"http://b.com/x"):
        c.delete(u, 1)
    r = c.next()
    assert r.pairs == [] and r.timeout is None                                      # "nothing to do"
    srv.clock.t = T0 + 3_600_000_000
    assert c.next().pairs == []                          # deleted entries never come back


def test_next_by_domain(c):
    c.set(b"http://a.com/1", 9, T0 - 1, 1)
    c.set(b"http://b.com/1", 0, T0 - 1, 1)
    assert c.next(b"a.com").pairs[0][0] == b"http://a.com/1"
    assert c.next().pairs[0][0] == b"http://a.com/1"     # domain first, then priority
    assert c.next(b"c.com").pairs == [] and c.next(b"c.com").timeout is None


def test_delete_tombstone_stale_and_complete(c, srv):
    c.set(uri(1), 1, T0, 100)
    assert c.delete(uri(1), 100).error == b""
    assert srv.server.fifo.tombstones == {uri(1): 100}
    assert c.set(uri(1), 1, T0, 99).timestamp == 100                  # late, older: changes nothing
    g = c.get(uri(1))
    assert (g.error, g.timestamp, g.pairs) == (FjError.DELETED, 100, [])   # the tombstone, told apart from never set
    c.set(uri(2), 1, T0, 7)
    r = c.delete(uri(2), 5)                                # a newer SET replaced the version handed out
    assert r.error == b"" and r.timestamp == 7 and c.get(uri(2)).error == b""
    assert c.delete(uri(2), 8, complete=True).error == b"" and uri(2) not in srv.server.fifo.tombstones
    assert c.get(uri(2)).error == FjError.NOT_FOUND                   # complete: no tombstone either
    assert c.delete(uri(3), 1, complete=True).error == FjError.NOT_FOUND
    assert c.call(Request(Function.DELETE, 0, 0, 1, b"")).error == FjError.KEY


def test_ping_quit_and_nop(c, srv):
    p = c.ping()
    assert p.error == b"" and p.timestamp == T0 and p.pairs is None
    assert c.call(Request(Function.NOP)).error == FjError.NOP
    q = c.quit()
    assert q.error == b""
    with pytest.raises(ConnectionError):
        c.recv()                                           # the server closed the connection after the reply


def test_bad_version_and_unknown_function_keep_the_connection(c):
    assert c.call(Request(Function.PING, version=2)).error == FjError.VERSION
    raw = bytearray(encode_request(Request(Function.PING, identifier=42)))
    raw[4:6] = (9).to_bytes(2, "big")
    c.send_bytes(bytes(raw))
    r = c.recv()
    assert (r.identifier, r.error) == (42, FjError.FUNCTION)
    raw = encode_request(Request(Function.SET, 43, FLAG_OVERWRITE, 1, uri(1), value_type=1, value=b"x" * 9))
    raw = raw[:-10] + b"\x09" + raw[-9:]                 # value type 9: not in the design
    c.send_bytes(raw)
    assert c.recv().error == FjError.VALUE
    assert c.ping().error == b""


@pytest.mark.parametrize("raw,error", [
    (b"XX" + bytes(30), FjError.MAGIC),
    (b"FJ\x00\x01\x00\x06\x00\x07\xe0\x00" + bytes(9), FjError.RESERVED),
    (b"FJ\x00\x01\x00\x02\x00\x07\x00\x06" + bytes(8) + b"\x00" + (2**24).to_bytes(4, "big"), FjError.TOO_LARGE),
])
def test_stream_errors_reply_and_close(srv, raw, error):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(raw)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
    from wqtool.engine.fastjournal.wire import decode_reply
    r = decode_reply(got)
    assert r.error == error


def test_pipelined_requests_are_answered_in_order(c, srv):
    n = 500
    for i in range(n):
        c.send(Request(Function.SET, 0, FLAG_OVERWRITE, i, uri(i), value_type=1, value=struct.pack(">BQ", 1, T0)))
    ids = [c.recv().identifier for _ in range(n)]
    assert ids == list(range(1, n + 1)) and len(srv.server.fifo) == n


def test_each_change_is_on_disk_before_its_reply(c, srv):
    seg = os.path.join(srv.dir, "000000001.fjj")
    size = os.path.getsize(seg)
    c.set(uri(1), 1, T0, 5)
    rec = encode_record(T0, set_request(uri(1), 1, T0, 5))
    data = open(seg, "rb").read()
    assert len(data) == size + len(rec) and data.endswith(rec)
    c.next()                                             # a read changes nothing on disk
    assert os.path.getsize(seg) == size + len(rec)
    c.next(timeout=10)                                   # a mark is a change
    assert os.path.getsize(seg) > size + len(rec)


def test_restart_replays_the_journal_and_it_reads_like_any_format(tmp_path):
    d = str(tmp_path / "j")
    clock = Clock()
    with Running(d, clock=clock) as r, Client("127.0.0.1", r.port) as c:
        for i in range(20):
            c.set(uri(i % 7), i % 3, T0 - i, i)
        c.next(timeout=10_000_000)
        c.delete(uri(3), 100)
        before = {u: (e.priority, e.key_start_date, e.timestamp, e.worked_until)
                  for u, e in r.server.fifo.entries.items()}
        tomb = dict(r.server.fifo.tombstones)
    with Running(d, clock=clock) as r:
        assert {u: (e.priority, e.key_start_date, e.timestamp, e.worked_until)
                for u, e in r.server.fifo.entries.items()} == before and r.server.fifo.tombstones == tomb
        with Client("127.0.0.1", r.port) as c:
            assert c.get(uri(1)).error == b""
    fmt = get("fastjournal")
    (log,) = fmt.discover([d], Options(T0 * 1000))
    rep = fmt.passes.run_log(log, Options(T0 * 1000))
    assert rep.verdict == Verdict.CLEAN and len(rep.state.fifo.entries) == len(before)


def test_one_server_per_journal(srv):
    with pytest.raises(LogBusy):
        Running(srv.dir)


def test_start_up_truncates_a_torn_tail_and_refuses_corruption(tmp_path):
    d = str(tmp_path / "j")
    with Running(d, clock=Clock()) as r, Client("127.0.0.1", r.port) as c:
        c.set(uri(1), 1, T0, 1)
        c.set(uri(2), 1, T0, 1)
    seg = os.path.join(d, "000000001.fjj")
    good = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(encode_record(T0, set_request(uri(3), 1, T0, 1))[:20])      # a write cut short by a crash
    with Running(d, clock=Clock()) as r:
        assert r.server.truncated == (seg, good) and len(r.server.fifo) == 2
        with Client("127.0.0.1", r.port) as c:
            c.set(uri(4), 1, T0, 1)
    assert get("fastjournal").passes.run_log(get("fastjournal").discover([d], Options(0))[0], Options(0)).verdict == Verdict.CLEAN
    data = bytearray(open(seg, "rb").read())
    data[30] ^= 0xFF                                      # damage inside the first record
    open(seg, "wb").write(bytes(data))
    with pytest.raises(InputError, match="refusing to start"):
        Running(d, clock=Clock())


def test_start_up_quarantines_the_torn_tail_it_cuts(tmp_path):
    """The cut bytes are kept, byte for byte, in repair's quarantine naming beside the journal; one log line."""
    d = str(tmp_path / "j")
    with Running(d, clock=Clock()) as r, Client("127.0.0.1", r.port) as c:
        c.set(uri(1), 1, T0, 1)
    seg = os.path.join(d, "000000001.fjj")
    good = os.path.getsize(seg)
    torn = encode_record(T0, set_request(uri(2), 1, T0, 1))[:23]
    with open(seg, "ab") as f:
        f.write(torn)
    lines: list[str] = []
    with Running(d, clock=Clock(), log=lines.append) as r:
        assert r.server.truncated == (seg, good)
    (cut,) = r.server.appender.cuts
    from wqtool.engine.fastjournal.writer import quarantine_dir
    assert os.path.dirname(cut.quarantine) == quarantine_dir(d, T0 * 1000) == os.path.abspath(d) + \
        ".quarantine-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(T0 // 1_000_000))
    assert os.path.basename(cut.quarantine) == f"000000001.fjj@{good:x}-{good + len(torn):x}.bin"
    assert open(cut.quarantine, "rb").read() == torn
    assert os.path.getsize(seg) == good
    assert lines == [f"start-up: cut a torn tail: file={seg} offset={good} bytes={len(torn)} "
                     f"quarantine={cut.quarantine}"]


def test_a_header_cut_short_is_quarantined_too(tmp_path):
    from wqtool.engine.fastjournal.writer import JournalAppender, segment_header
    d = tmp_path / "j"
    d.mkdir()
    (d / "000000001.fjj").write_bytes(segment_header(1)[:7])
    app = JournalAppender(str(d), segment_size=1 << 20, now_ns=T0 * 1000)
    try:
        (cut,) = app.cuts
        assert open(cut.quarantine, "rb").read() == segment_header(1)[:7] and cut.offset == 0
        assert (d / "000000001.fjj").read_bytes() == segment_header(1)
    finally:
        app.close()


def test_reply_flags_carry_the_data(c):
    c.set(uri(1), 4, T0, 1)
    r = c.get(uri(1))
    assert r.flags & FLAG_DATA and r.pairs[0][1] == ValueType.BUFFER
    r = c.get(uri(1), timeout=7)
    assert r.flags & FLAG_TIMEOUT and r.timeout == T0 + 7
    assert not c.ping().flags & FLAG_DATA and FLAG_UPDATE_TIMEOUT
