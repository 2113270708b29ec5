"""The per-request path with its C pieces (``_proto``: the request-line parser and the record builders
``add_record`` / ``short_record``) against the Python reference (``WQTOOL_PURE_PYTHON=1``'s functions), end to end:
random sequences of requests — well-formed, malformed, for jobs that exist or not — and steps of a fake clock (TTR
and TTL expiry, scheduled jobs coming due, lease waits running out) through one in-process server each, with the
same clock; both must answer every request with the same bytes and leave the same command log, byte for byte."""
from __future__ import annotations

import heapq
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples
from wqtool.server.workq import server as server_mod, wire
from wqtool.server.workq.conn import Conn
from wqtool.server.workq.server import Server, ServeOptions

pytest.importorskip("wqtool.server.workq._proto")

T0 = 1_800_000_000 * 10 ** 9            # the fake clock's start (Unix ns)


class FakeLoop:
    """call_soon / call_later driven by the fake clock (``run_due``)."""

    def __init__(self, clock):
        self.clock = clock
        self.soon: list = []
        self.timers: list = []
        self.seq = 0

    def call_soon(self, cb, *args):
        h = _Handle(cb, args)
        self.soon.append(h)
        return h

    def call_later(self, delay, cb, *args):
        h = _Handle(cb, args)
        self.seq += 1
        heapq.heappush(self.timers, (self.clock() + int(delay * 1e9), self.seq, h))
        return h

    def time(self):
        return self.clock() / 1e9

    def run_due(self):
        while True:
            while self.soon:
                soon, self.soon = self.soon, []
                for h in soon:
                    if not h.cancelled:
                        h.cb(*h.args)
            if self.timers and self.timers[0][0] <= self.clock():
                h = heapq.heappop(self.timers)[2]
                if not h.cancelled:
                    h.cb(*h.args)
                continue
            if not self.soon:
                return


class _Handle:
    __slots__ = ("cb", "args", "cancelled")

    def __init__(self, cb, args):
        self.cb, self.args, self.cancelled = cb, args, False

    def cancel(self):
        self.cancelled = True


class FakeTransport:
    def __init__(self):
        self.got = bytearray()

    def write(self, data):
        self.got += data

    def is_closing(self):
        return False

    def close(self):
        pass

    def abort(self):
        pass

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def get_extra_info(self, name, default=None):
        return default

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


REFERENCE = {"parse_line": wire.py_parse_line, "parse_uuid": wire.py_parse_uuid, "parse_uint": wire.py_parse_uint,
             "parse_int": wire.py_parse_int}
REFERENCE_SRV = {"add_record": server_mod.add_record_py, "short_record": server_mod.short_record_py}



def close_and_read_log(srv, directory: str) -> bytes:
    """An in-process server's log closed (unsynced), its locks released: the bytes of its segments in order."""
    srv.appender.close(sync=False)
    srv.locks.release()
    if srv.queue.reader is not None:
        srv.queue.reader.close()
    return b"".join(open(os.path.join(directory, f), "rb").read()
                    for f in sorted(os.listdir(directory)) if f.endswith(".log"))

def in_process(directory: str, n: int, seg_size: int = 0, sync: str = "interval"):
    """([now], a server on a fake loop and clock, ``n`` connections made, their transports)."""
    now = [T0]
    extra = {"seg_size": seg_size} if seg_size else {}
    srv = Server(ServeOptions(cmdlog_path=directory, log_level="error", create=True, sync=sync, **extra))
    srv.clock = lambda: now[0]
    srv.loop = FakeLoop(srv.clock)
    srv.open_log()
    srv.inherits_sockopts = True
    conns = [Conn(srv) for _ in range(n)]
    ts = [FakeTransport() for _ in conns]
    for c, t in zip(conns, ts):
        c.connection_made(t)
    return now, srv, conns, ts


def run(steps, directory: str, reference: bool, monkeypatch) -> tuple[bytes, bytes]:
    """(every reply, the log's bytes) after ``steps`` through an in-process server."""
    with monkeypatch.context() as m:
        if reference:
            for k, v in REFERENCE.items():
                m.setattr(wire, k, v)
            for k, v in REFERENCE_SRV.items():
                m.setattr(server_mod, k, v)
        now, srv, conns, ts = in_process(directory, 2)
        if reference:
            srv.core = srv.lone = None  # (the C request core and lone turn: tests/server/test_core_c.py)
        for who, step in steps:
            if isinstance(step, int):
                now[0] += step * 1_000_000
                srv.after_change()
            else:
                conns[who].data_received(step)
            srv.loop.run_due()
        srv._commit()
        return b"|".join(bytes(t.got) for t in ts), close_and_read_log(srv, directory)


def _jid(n: int) -> bytes:
    return b"00000000-0000-4000-8000-%012x" % n


_GOOD_ID = st.integers(1, 4).map(_jid)
_ID = st.one_of(_GOOD_ID, _GOOD_ID, _GOOD_ID, st.sampled_from([b"bad-id", b"00000000-0000-1000-8000-000000000001",
                                                              b"{00000000-0000-4000-8000-000000000002}"]))
_Q = st.sampled_from([b"q1", b"q1", b"q2", b"q2", b"", b"q" * 300])
_MS = st.one_of(st.integers(1, 3000), st.integers(1, 3000), st.sampled_from([b"0", b"-1", b"x", b"86400001"]))
_FLAGS = st.lists(st.sampled_from([b"-priority=5", b"-priority=-3", b"-max-attempts=2", b"-max-fails=1",
                                   b"-priority=x", b"-max-attempts=300", b"-bogus=1"]), max_size=2, unique=True)


def _b(x) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode()


def _body(n: int) -> bytes:
    return b"x" * n


_ADD = st.builds(lambda i, q, ttr, ttl, fl, n: b" ".join([b"add", i, q, _b(ttr), _b(ttl), _b(n), *fl]) + b"\r\n"
              + _body(n) + b"\r\n", _ID, _Q, _MS, st.integers(1, 5000), _FLAGS, st.integers(0, 20))
_GOOD_ADD = st.builds(lambda i, q, ttr, ttl, p, n: b"add %s %s %d %d %d -priority=%d\r\n%s\r\n" % (
    i, q, ttr, ttl, n, p, _body(n)), _GOOD_ID, st.sampled_from([b"q1", b"q2"]), st.integers(1, 3000),
    st.integers(1, 8000), st.integers(-2, 2), st.integers(0, 20))
_LEASE = st.builds(lambda qs, w: b"lease %s %s\r\n" % (b" ".join(qs), _b(w)),
                   st.lists(st.sampled_from([b"q1", b"q2", b"q3"]), min_size=1, max_size=2),
                   st.one_of(st.integers(0, 2000), st.just(b"x")))
_DONE = st.builds(lambda c, i, r: b"%s %s %d\r\n%s\r\n" % (c, i, len(r), r),
                  st.sampled_from([b"complete", b"fail"]), _GOOD_ID, st.binary(max_size=8))
_REQ = st.one_of(
    _ADD, _GOOD_ADD, _GOOD_ADD, _GOOD_ADD, _LEASE, _LEASE, _LEASE, _DONE, _DONE, _DONE,
    st.builds(lambda i, q, s, ttr, ttl: b"schedule %s %s %s %s %s 1\r\nS\r\n" % (i, q, _b(ttr), _b(ttl), s), _ID, _Q,
              st.sampled_from([b"2027-01-15T08:00:03Z", b"2027-01-15T08:00:01Z", b"2020-01-01T00:00:00Z", b"bad"]),
              _MS, st.integers(1, 5000)),
    st.builds(lambda i: b"delete %s\r\n" % i, _ID),
    st.builds(lambda i, w: b"result %s %d\r\n" % (i, w), _ID, st.integers(0, 1500)),
    st.builds(lambda q: b"inspect queue %s\r\n" % q, _Q),
    st.sampled_from([b"inspect queues 0 10\r\n", b"inspect jobs q1 0 10\r\n", b"ADD x\r\n", b"add\r\n",
                     b"complete " + _jid(1) + b" 2\r\nabc\r\n", b"lease  q1   0\r\n"]),
)
_STEP = st.one_of(st.tuples(st.integers(0, 1), _REQ), st.tuples(st.just(0), st.integers(1, 2500)))
# a job's usual life, on either connection: added, leased (perhaps by the other one), completed or failed
_LIFE = st.builds(lambda add, who, w, done: [(who[0], add), (who[1], b"lease q1 q2 %d\r\n" % w), (who[2], done)],
                  _GOOD_ADD, st.tuples(*[st.integers(0, 1)] * 3), st.integers(0, 50), _DONE)
_STEPS = st.lists(st.one_of(_STEP.map(lambda x: [x]), _LIFE), min_size=1, max_size=25).map(
    lambda groups: [step for g in groups for step in g])


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_STEPS)
def test_the_c_pieces_answer_and_log_as_the_reference(tmp_path_factory, monkeypatch, steps):
    a = run(steps, str(tmp_path_factory.mktemp("c")), False, monkeypatch)
    b = run(steps, str(tmp_path_factory.mktemp("py")), True, monkeypatch)
    assert a == b


def test_the_sequences_reach_expiry_timeouts_and_every_record_kind(tmp_path, monkeypatch):
    """The harness itself: a lease that waits, a TTR that runs out, a TTL that runs out, a scheduled job coming
    due, a lease wait running out — the log holds every kind of record, the same bytes from both."""
    steps = [(0, b"add %s q1 100 5000 1\r\nA\r\n" % _jid(1)), (1, b"lease q1 1000\r\n"), (0, 150),
             (1, b"lease q1 0\r\n"), (1, b"complete %s 2\r\nok\r\n" % _jid(1)),
             (0, b"add %s q2 1000 200 0\r\n\r\n" % _jid(2)), (0, 300),
             (0, b"add %s q2 1000 5000 0\r\n\r\n" % _jid(3)), (1, b"lease q2 0\r\n"),
             (1, b"fail %s 1\r\nx\r\n" % _jid(3)),
             (0, b"add %s q3 1000 5000 0\r\n\r\n" % _jid(4)), (0, b"delete %s\r\n" % _jid(4)),
             (0, b"schedule %s q4 1000 5000 2027-01-15T08:00:01Z 0\r\n\r\n" % _jid(5)), (1, b"lease q4 2000\r\n"),
             (1, b"lease q9 500\r\n"), (0, 600), (0, 600)]
    replies, log = run(steps, str(tmp_path / "c"), False, monkeypatch)
    assert replies.split(b"|")[0] == b"+OK\r\n" * 6                  # four adds, a delete, a schedule
    two = replies.split(b"|")[1]
    assert two.count(b"+OK 1\r\n") == 4      # q1 twice (the second after the TTR ran out), q2, q4 once it came due
    assert two.endswith(b"-TIMEOUT\r\n")     # the last lease's wait ran out
    kinds, pos = [], 8                        # the segment's records: TIME, SIZE (uvarint), PAYLOAD, CRC
    while pos < len(log):
        pos += 15
        size = shift = 0
        while log[pos] & 0x80:
            size |= (log[pos] & 0x7F) << shift
            shift += 7
            pos += 1
        size |= log[pos] << shift
        kinds.append(log[pos + 1])
        pos += 1 + size + 4
    # add, start-attempt, timeout-attempt, start-attempt, complete; add, expire; add, start-attempt, fail; add,
    # delete; schedule, start-attempt (formats.workq.CmdType)
    assert kinds == [1, 7, 8, 7, 3, 1, 6, 1, 7, 4, 1, 5, 2, 7]
    assert (replies, log) == run(steps, str(tmp_path / "py"), True, monkeypatch)


def test_a_loop_iteration_of_requests_arms_the_timer_once_and_an_answered_lease_makes_no_waiter(tmp_path,
                                                                                                   monkeypatch):
    """Six connections' requests in one loop iteration (one group commit): the loop timer is looked at once, by
    the commit, not once per request; a lease answered at once makes no Waiter (one that waits makes one, and its
    wait still runs out)."""
    from wqtool.server.workq import conn as conn_mod
    made = []

    class CountedWaiter(conn_mod.Waiter):
        __slots__ = ()

        def __init__(self, cb):
            made.append(1)
            super().__init__(cb)

    monkeypatch.setattr(conn_mod, "Waiter", CountedWaiter)
    now, srv, conns, ts = in_process(str(tmp_path), 6)
    looks = []
    real = srv.queue.next_deadline
    monkeypatch.setattr(srv.queue, "next_deadline", lambda: looks.append(1) or real())
    for k, c in enumerate(conns):
        c.data_received(b"add %s q1 60000 3600000 1\r\nA\r\n" % _jid(k + 1))
    srv.loop.run_due()
    assert [bytes(t.got) for t in ts] == [b"+OK\r\n"] * 6
    assert len(looks) == 1
    assert srv.loop.timers                         # armed (the first TTR/TTL deadline)
    for c in conns:
        c.data_received(b"lease q1 1000\r\n")
    srv.loop.run_due()
    assert all(bytes(t.got).count(b"+OK 1\r\n") == 1 for t in ts)
    assert made == []
    conns[0].data_received(b"lease q1 50\r\n")    # nothing ready: it waits
    srv.loop.run_due()
    assert made == [1] and conns[0].blocked is not None
    now[0] += 60 * 1_000_000
    srv.loop.run_due()
    assert bytes(ts[0].got).endswith(b"-TIMEOUT\r\n") and conns[0].blocked is None
    srv.appender.close(sync=False)
    srv.locks.release()


def test_a_turn_that_handles_all_that_was_read_schedules_no_continuation(tmp_path):
    """Exactly TURN requests in one read: all answered in one turn, and the turn ends on the empty buffer (no look
    for a next line, no callback to resume parsing); one more than TURN: the rest at the next loop iteration."""
    from wqtool.server.workq.conn import TURN
    now = [T0]
    srv = Server(ServeOptions(cmdlog_path=str(tmp_path), log_level="error", create=True))
    srv.clock = lambda: now[0]
    srv.loop = FakeLoop(srv.clock)
    srv.open_log()
    srv.inherits_sockopts = True
    c, t = Conn(srv), FakeTransport()
    c.connection_made(t)
    c.data_received(b"inspect queues 0 10\r\n" * TURN)
    assert bytes(t.got).count(b"+OK 0\r\n") == TURN
    assert not c.resume_scheduled and not any(h.cb == c._continue for h in srv.loop.soon)
    c.data_received(b"inspect queues 0 10\r\n" * (TURN + 1))
    assert bytes(t.got).count(b"+OK 0\r\n") == 2 * TURN and c.resume_scheduled
    srv.loop.run_due()
    assert bytes(t.got).count(b"+OK 0\r\n") == 2 * TURN + 1
    srv.appender.close(sync=False)
    srv.locks.release()
