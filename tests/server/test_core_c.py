"""The C request core (``_proto.core_run``, wqtool/server/workq/_core.c) against the Python reference: random
request sequences — add with and without flags, bad ids and names, TTR/TTL at and past their limits, duplicates,
bodies of the wrong size, schedule, lease of one or several queues waiting 0 or longer, complete and fail of leased,
ready and unknown jobs, delete, result, inspect — pipelined several to a read or not, on one connection (the inline
commit) or two, interleaved with steps of a fixed clock past TTRs, TTLs, scheduled times and lease waits, through
one in-process server with the core and one without it (``Server.core = None``: handlers.py and queue.py, and the
Python parser and record encoders): the same replies byte for byte, the same command log byte for byte, the same
job table rows, timers, ready and scheduled lists, reply counters and ``LiveQueue.counts()``."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples
from tests.server.test_hot_path import REFERENCE, REFERENCE_SRV, _jid, close_and_read_log, in_process
from wqtool.server.workq import server as server_mod, wire

_proto = pytest.importorskip("wqtool.server.workq._proto")
pytestmark = pytest.mark.skipif(server_mod._CORE is None, reason="the C request core is not in use")


def _state(srv) -> tuple:
    """Everything the queue and the server keep, in comparable form."""
    q = srv.queue
    rows = sorted((bytes(r[0]), tuple(r[1:])) for r in q.table.rows())
    heap = sorted((k, type(o).__name__, getattr(o, "id", None)) for k, o in q._heap)
    lists = {name: ([j.id for j in wq.ready], [j.id for j in wq.scheduled], len(wq.waiters))
             for name, wq in q.queues.items()}
    entries = {jid: (e.name, e.key, e.where, e.ttl_seq, e.ttr_seq, e.sched_seq, e.waiters is None)
               for jid, e in q.jobs.items()}
    return (rows, heap, lists, entries, q._seq, q._stale, q.counts(), dict(srv.replies), srv.lsn,
            sorted(q.unwritten), sorted(q.recent))


def run(steps, directory: str, core: bool, conns: int, monkeypatch, lone: bool = True, seg_size: int = 0,
        sync: str = "interval") -> tuple:
    """(every reply, the log's bytes, the final state) after ``steps`` through an in-process server (``lone``: the
    lone connection's turn in C, _core.c lone_turn, with the core; ``seg_size``: -cmdlog-seg-size)."""
    with monkeypatch.context() as m:
        if not core:                       # the whole Python reference
            for k, v in REFERENCE.items():
                m.setattr(wire, k, v)
            for k, v in REFERENCE_SRV.items():
                m.setattr(server_mod, k, v)
        now, srv, cs, ts = in_process(directory, conns, seg_size, sync)
        if not core:
            srv.core = None
        if not (core and lone):
            srv.lone = None
        assert (srv.core is not None) == core and (srv.lone is not None) == (core and lone)
        for who, step in steps:
            if isinstance(step, int):
                now[0] += step * 1_000_000
                srv.after_change()
            else:
                cs[who % conns].data_received(step)
            srv.loop.run_due()
        srv._commit()
        state = _state(srv)
        return b"|".join(bytes(t.got) for t in ts), close_and_read_log(srv, directory), state


def _b(x) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode()


_GOOD_ID = st.integers(1, 5).map(_jid)
_ID = st.one_of(_GOOD_ID, _GOOD_ID, _GOOD_ID, st.sampled_from([
    b"bad-id", b"00000000-0000-1000-8000-000000000001", b"{00000000-0000-4000-8000-000000000002}",
    b"00000000000040008000000000000003", b"urn:uuid:00000000-0000-4000-8000-000000000004"]))
_Q = st.sampled_from([b"q1", b"q1", b"q1", b"q2", b"q2", b"q3", b"", b"q" * 255, b"q" * 256, b"q!"])
_TTR = st.one_of(st.integers(1, 3000), st.integers(1, 3000), st.sampled_from(
    [0, 86_400_000, 86_400_001, b"-1", b"x", b"+5", b"4294967296", b"0007"]))
_TTL = st.one_of(st.integers(1, 8000), st.integers(1, 8000), st.sampled_from(
    [0, 2_592_000_000, 2_592_000_001, b"18446744073709551616", b"x"]))
_FLAGS = st.lists(st.sampled_from([b"-priority=5", b"-priority=-3", b"-max-attempts=2", b"-max-fails=1",
                                   b"-priority=x", b"-bogus=1"]), max_size=2, unique=True)


def _add(i, q, ttr, ttl, n, fl, extra):
    body = b"x" * n
    size = n + extra
    return b" ".join([b"add", i, q, _b(ttr), _b(ttl), _b(size), *fl]) + b"\r\n" + body + b"\r\n"


# plain adds (the core's) more often than flagged ones (the Python path's); now and then a size that is not the body's
_ADD = st.builds(_add, _ID, _Q, _TTR, _TTL, st.integers(0, 24),
                 st.one_of(st.just([]), st.just([]), st.just([]), _FLAGS),
                 st.sampled_from([0, 0, 0, 0, 0, 0, 1, -1]))
_GOOD_ADD = st.builds(lambda i, q, ttr, ttl, n: b"add %s %s %d %d %d\r\n%s\r\n" % (i, q, ttr, ttl, n, b"y" * n),
                      _GOOD_ID, st.sampled_from([b"q1", b"q2"]), st.integers(1, 3000), st.integers(1, 8000),
                      st.integers(0, 20))
_LEASE = st.builds(lambda qs, w: b"lease %s %s\r\n" % (b" ".join(qs), _b(w)),
                   st.lists(st.sampled_from([b"q1", b"q2", b"q3", b"q1"]), min_size=1, max_size=3),
                   st.one_of(st.just(0), st.just(0), st.integers(1, 2000), st.sampled_from([b"x", b"86400001"])))
_DONE = st.builds(lambda c, i, r: b"%s %s %d\r\n%s\r\n" % (c, i, len(r), r),
                  st.sampled_from([b"complete", b"fail"]), _ID, st.binary(max_size=8))
_REQ = st.one_of(
    _ADD, _GOOD_ADD, _GOOD_ADD, _LEASE, _LEASE, _LEASE, _DONE, _DONE, _DONE,
    st.builds(lambda i, q, s, ttr, ttl: b"schedule %s %s %s %s %s 1\r\nS\r\n" % (i, q, _b(ttr), _b(ttl), s), _ID, _Q,
              st.sampled_from([b"2027-01-15T08:00:03Z", b"2027-01-15T08:00:01Z", b"2020-01-01T00:00:00Z"]),
              _TTR, st.integers(1, 5000)),
    st.builds(lambda i: b"delete %s\r\n" % i, _ID),
    st.builds(lambda i, w: b"result %s %d\r\n" % (i, w), _ID, st.integers(0, 1500)),
    st.builds(lambda i: b"inspect job %s\r\n" % i, _ID),
    st.sampled_from([b"inspect queues 0 10\r\n", b"inspect jobs q1 0 10\r\n", b"inspect queue q2\r\n",
                     b"inspect scheduled-jobs q1 0 10\r\n", b"ADD x\r\n", b"lease  q1   0\r\n", b"lease q1 0 \r\n",
                     b"complete " + _jid(1) + b" 2\r\nabc\r\n", b"add " + _jid(2) + b" q1 10 10 1\r\n"]),
)
# one read: one request, or several pipelined (the core answers them in one call until one is not its own)
_READ = st.one_of(_REQ, _REQ, st.lists(_REQ, min_size=2, max_size=4).map(b"".join))
_STEP = st.one_of(st.tuples(st.integers(0, 1), _READ), st.tuples(st.just(0), st.integers(1, 2500)))
# a job's usual life, on either connection: added, leased (perhaps by the other one), completed or failed
_LIFE = st.builds(lambda i, q, ttr, n, who, w, c, r: [
    (who[0], b"add %s %s %d 60000 %d\r\n%s\r\n" % (i, q, ttr, n, b"z" * n)),
    (who[1], b"lease %s %d\r\n" % (q, w)), (who[2], b"%s %s %d\r\n%s\r\n" % (c, i, len(r), r))],
    _GOOD_ID, st.sampled_from([b"q1", b"q2", b"q1 q2"][:2]), st.integers(1, 3000), st.integers(0, 20),
    st.tuples(*[st.integers(0, 1)] * 3), st.sampled_from([0, 0, 50]), st.sampled_from([b"complete", b"fail"]),
    st.binary(max_size=8))
_STEPS = st.lists(st.one_of(_STEP.map(lambda x: [x]), _LIFE, _LIFE), min_size=1, max_size=30).map(
    lambda groups: [step for g in groups for step in g]
    + [(0, b"inspect job %s\r\n" % _jid(k)) for k in range(1, 6)]
    + [(0, b"inspect jobs q1 0 100\r\n"), (0, b"inspect jobs q2 0 100\r\n"), (0, b"inspect queues 0 100\r\n")])


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_STEPS, st.sampled_from([1, 2]))
def test_the_core_answers_logs_and_leaves_the_state_as_the_reference(tmp_path_factory, monkeypatch, steps, conns):
    a = run(steps, str(tmp_path_factory.mktemp("c")), True, conns, monkeypatch, lone=False)
    b = run(steps, str(tmp_path_factory.mktemp("py")), False, conns, monkeypatch)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_STEPS, st.sampled_from([0, 0, 300]), st.sampled_from(["interval", "interval", "always"]))
def test_the_lone_turn_answers_logs_and_leaves_the_state_as_the_reference(tmp_path_factory, monkeypatch, steps,
                                                                         seg_size, sync):
    """The lone connection's turn in C (_core.c lone_turn: the read, the core, the commit's write(2), the replies'
    write, the timer check) against the whole Python reference, one connection: pipelined reads, requests the core
    declines in the middle of a read (a flagged add, a waiting lease, a queue's first add: the rest goes on in
    Conn.process inside the same turn), -cmdlog-seg-size 300 (roll-overs: Server._commit's), always (the fsync:
    Server._commit's) and interval."""
    monkeypatch.setenv("WQTOOL_SERVE_SPIN", "0")
    a = run(steps, str(tmp_path_factory.mktemp("c")), True, 1, monkeypatch, seg_size=seg_size, sync=sync)
    b = run(steps, str(tmp_path_factory.mktemp("py")), False, 1, monkeypatch, seg_size=seg_size, sync=sync)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_STEPS, st.sampled_from([2, 2, 3]), st.sampled_from([0, 0, 300]), st.sampled_from(["interval", "interval",
                                                                                           "always"]))
def test_the_group_turn_and_tick_answer_log_and_leave_the_state_as_the_reference(tmp_path_factory, monkeypatch,
                                                                                  steps, conns, seg_size, sync):
    """Several connections: a read of one of them answered in C (_core.c lone_turn's group turn: the core, the end of
    Conn.process, the commit left to the loop iteration) and the loop iteration's group commit in C
    (_proto.commit_tick: the records' write(2), each dirty connection's replies, the timer check), against the whole
    Python reference: requests the core declines mid-read, roll-overs (-cmdlog-seg-size 300: Server._commit's),
    always (the fsync: Server._commit's) and interval."""
    monkeypatch.setenv("WQTOOL_SERVE_SPIN", "0")
    a = run(steps, str(tmp_path_factory.mktemp("c")), True, conns, monkeypatch, seg_size=seg_size, sync=sync)
    b = run(steps, str(tmp_path_factory.mktemp("py")), False, conns, monkeypatch, seg_size=seg_size, sync=sync)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]


def test_the_load_clients_requests_take_the_group_turn_and_tick(tmp_path):
    """16 connections, the Go load client's add -> lease -> complete, 6 reads a loop iteration: every read but each
    queue's first add answered by the group turn, every loop iteration's commit written by commit_tick in C (its
    counters), every reply sent by it — if either were silently not taken, this fails."""
    now, srv, cs, ts = in_process(str(tmp_path), 16)
    g0, t0 = _proto.lone_counts()[2:]
    reads = iters = 0
    jobs = [[_jid(1000 * k + i + 1) for i in range(6)] for k in range(16)]
    for phase in range(18):                     # per connection: add, lease, complete of its 6 jobs in turn
        kind, i = phase % 3, phase // 3
        for first in range(0, 16, 6):
            for k in range(first, min(first + 6, 16)):
                jid, q = jobs[k][i], b"bench-%d" % k
                cs[k].data_received((b"add %s %s 60000 3600000 2\r\nab\r\n" % (jid, q), b"lease %s 1000\r\n" % q,
                                     b"complete %s 2\r\nok\r\n" % jid)[kind])
                reads += 1
            assert srv.loop.soon                # the commit: the loop iteration's
            srv.loop.run_due()
            iters += 1
            assert not srv.dirty and srv.durable_lsn == srv.lsn
    assert _proto.lone_counts()[2:] == (g0 + reads - 16, t0 + iters)
    assert all(bytes(t.got).count(b"+OK 1\r\n") == 6 for t in ts)
    assert srv.queue.counts() == {"new": 0, "completed": 96, "failed": 0, "pending": 0, "leased": 0}
    assert not srv.queue.unwritten                                  # every add located by the C commit
    srv.appender.close(sync=False)
    srv.locks.release()


def test_a_write_error_in_the_c_tick_opens_the_breaker(tmp_path):
    """commit_tick's write(2) fails: no reply leaves, the records stay pending, Server._append_failed opens the
    breaker and schedules the retry (Server._commit releases nothing then); the retry writes them and the replies
    leave."""
    now, srv, cs, ts = in_process(str(tmp_path), 2)
    for k, c in enumerate(cs):                  # (the queues made: Python)
        c.data_received(b"add %s q%d 100 5000 1\r\nA\r\n" % (_jid(k + 1), k))
    srv.loop.run_due()
    ap = srv.appender
    good, size = ap.fd, ap.size
    ap.fd = os.open(ap.path, os.O_RDONLY)
    t0 = _proto.lone_counts()[3]
    for k, c in enumerate(cs):
        c.data_received(b"add %s q%d 100 5000 1\r\nB\r\n" % (_jid(k + 11), k))
    srv.loop.run_due()
    assert _proto.lone_counts()[3] == t0 + 1
    assert [bytes(t.got) for t in ts] == [b"+OK\r\n"] * 2 and srv.handlers.read_only
    assert srv._retry_handle is not None and len(srv.pending) == 2 and srv.durable_lsn == srv.lsn - 2
    assert os.path.getsize(ap.path) == size == ap.size and srv.append_errors == 1 and srv.dirty == set(cs)
    os.close(ap.fd)
    ap.fd = good
    now[0] += 1_001_000_000
    srv.loop.run_due()
    assert [bytes(t.got) for t in ts] == [b"+OK\r\n+OK\r\n"] * 2 and srv.durable_lsn == srv.lsn
    srv.appender.close(sync=False)
    srv.locks.release()


def test_the_lone_turn_keeps_the_recent_bodies_as_the_reference(tmp_path_factory, monkeypatch):
    """300 adds, each leased, on one connection: each add's row located by the lone turn's commit, its body moved to
    the recent ones, the oldest dropped past RECENT (256), a body past RECENT_BODY not kept — as LiveQueue.located."""
    steps = [(0, s) for k, n in ((k, 1100 if k % 50 == 0 else 7) for k in range(1, 301))
             for s in (b"add %s q1 60000 3600000 %d\r\n%s\r\n" % (_jid(k), n, b"b" * n), b"lease q1 0\r\n")]
    turns = _proto.lone_counts()[0]
    a = run(steps, str(tmp_path_factory.mktemp("c")), True, 1, monkeypatch)
    assert _proto.lone_counts()[0] - turns == 600 - 1 - 6   # (not: the first add, a lease of a body read back)
    b = run(steps, str(tmp_path_factory.mktemp("py")), False, 1, monkeypatch)
    assert a == b
    assert len(a[2][-1]) == 256 and not a[2][-2]          # (recent: the newest 256; unwritten: none)


def test_the_load_clients_requests_take_the_lone_turn(tmp_path):
    """One connection, the Go load client's add -> lease -> complete, one request a read: every read but the
    queue's first add (the Python path makes the queue) answered by lone_turn, and every one of its records
    written by it (its counters) — if the lone turn were silently not taken, this fails."""
    now, srv, cs, ts = in_process(str(tmp_path), 1)
    assert srv.lone is not None
    c, t = cs[0], ts[0]
    turns, commits = _proto.lone_counts()[:2]
    n = 0
    for k in range(30):
        jid = _jid(k + 1)
        for req in (b"add %s bench-0 60000 3600000 16\r\n0123456789abcdef\r\n" % jid, b"lease bench-0 1000\r\n",
                    b"complete %s 2\r\nok\r\n" % jid):
            c.data_received(req)
            assert not srv.loop.soon          # nothing left for the loop: the reply went out in the turn
            n += 1
    assert _proto.lone_counts()[:2] == (turns + n - 1, commits + n - 1)
    assert bytes(t.got).count(b"+OK 1\r\n") == 30 and srv.durable_lsn == srv.lsn == n
    assert srv.queue.counts() == {"new": 0, "completed": 30, "failed": 0, "pending": 0, "leased": 0}
    rows = {bytes(r[0]): r for r in srv.queue.table.rows()}
    assert len(rows) == 30 and not srv.queue.unwritten           # every add located (its body no longer held)
    srv.appender.close(sync=False)
    srv.locks.release()


def test_a_write_error_in_the_lone_turn_opens_the_breaker(tmp_path):
    """The lone turn's write(2) fails (the segment's descriptor read-only): no reply, the record stays pending,
    Server._append_failed opens the circuit breaker and schedules the retry — as Server._commit does."""
    now, srv, cs, ts = in_process(str(tmp_path), 1)
    c, t = cs[0], ts[0]
    c.data_received(b"add %s q1 100 5000 1\r\nA\r\n" % _jid(1))      # (the queue made: Python)
    assert bytes(t.got) == b"+OK\r\n"
    ap = srv.appender
    good = ap.fd
    ap.fd = os.open(ap.path, os.O_RDONLY)
    turns, commits = _proto.lone_counts()[:2]
    size = ap.size
    c.data_received(b"add %s q1 100 5000 1\r\nB\r\n" % _jid(2))
    assert _proto.lone_counts()[:2] == (turns + 1, commits)
    assert bytes(t.got) == b"+OK\r\n" and srv.handlers.read_only and srv._retry_handle is not None
    assert len(srv.pending) == 1 and srv.durable_lsn == srv.lsn - 1 and ap.size == size
    assert os.path.getsize(ap.path) == size and srv.append_errors == 1
    os.close(ap.fd)
    ap.fd = good
    now[0] += 1_001_000_000                     # the retry writes it; the reply leaves
    srv.loop.run_due()
    assert bytes(t.got) == b"+OK\r\n+OK\r\n" and srv.durable_lsn == srv.lsn
    srv.appender.close(sync=False)
    srv.locks.release()


def test_the_load_clients_requests_take_the_c_path(tmp_path):
    """The Go load client's add -> lease -> complete (bench_serve_load.go), on two connections sharing the loop:
    every one of them answered by the core (its counter) but a queue's first add (the Python path makes the queue
    and interns its name) — if the core were silently not taken (a check that always declines), this fails."""
    now, srv, cs, ts = in_process(str(tmp_path), 2)
    assert srv.core is not None
    before = _proto.core_handled()
    n = 0
    for k in range(40):
        c = cs[k % 2]
        jid = _jid(k + 1)
        q = b"bench-%d" % (k % 2)
        for req in (b"add %s %s 60000 3600000 16\r\n0123456789abcdef\r\n" % (jid, q), b"lease %s 1000\r\n" % q,
                    b"complete %s 2\r\nok\r\n" % jid):
            c.data_received(req)
            srv.loop.run_due()
            n += 1
    # pipelined: three requests in one read
    jid = _jid(99)
    cs[0].data_received(b"add %s bench-0 60000 3600000 1\r\nA\r\nlease bench-0 1000\r\nfail %s 1\r\nx\r\n"
                        % (jid, jid))
    srv.loop.run_due()
    n += 3
    assert _proto.core_handled() - before == n - 2      # all but the first add of each queue (which makes it)
    assert bytes(ts[0].got).count(b"+OK 1\r\n") == 21 and bytes(ts[1].got).count(b"+OK 1\r\n") == 20
    assert srv.replies[(b"add", b"+OK\r")] == 41 and srv.replies[(b"lease", b"+OK ")] == 41
    assert srv.queue.counts() == {"new": 0, "completed": 40, "failed": 1, "pending": 0, "leased": 0}
    srv._commit()
    assert srv.durable_lsn == srv.lsn == 41 * 3
    srv.appender.close(sync=False)
    srv.locks.release()


def test_what_the_core_does_not_take_goes_the_python_way(tmp_path):
    """A lease that must wait, a flagged add, a timer due, read-only mode: the core declines (its counter stays),
    and the Python path answers as before."""
    now, srv, cs, ts = in_process(str(tmp_path), 1)
    c, t = cs[0], ts[0]
    c.data_received(b"add %s q1 100 5000 1\r\nA\r\n" % _jid(1))      # first add of a queue: Python (interns it)
    srv.loop.run_due()
    before = _proto.core_handled()
    c.data_received(b"add %s q1 100 5000 1 -priority=3\r\nB\r\n" % _jid(2))    # flags
    c.data_received(b"lease q1 0\r\n")                                # the priority-3 job: the core's
    c.data_received(b"lease q9 1000\r\n")                             # a queue not made yet: Python, it waits
    srv.loop.run_due()
    assert _proto.core_handled() - before == 1
    assert c.blocked is not None
    now[0] += 1001 * 1_000_000                                        # the wait and the TTR of job 2 run out
    srv.loop.run_due()
    assert c.blocked is None and bytes(t.got).endswith(b"-TIMEOUT\r\n")
    srv.handlers.read_only = True
    before = _proto.core_handled()
    c.data_received(b"complete %s 0\r\n\r\n" % _jid(2))
    srv.loop.run_due()
    assert _proto.core_handled() == before and bytes(t.got).endswith(wire.E_READ_ONLY)
    srv.appender.close(sync=False)
    srv.locks.release()


def test_pure_python_has_no_core(tmp_path, monkeypatch):
    """``Server.core`` is None without a log (nothing to record), with WQTOOL_SERVE_CORE=0, and when the module
    has none (``_CORE``: wire._c, which WQTOOL_PURE_PYTHON turns off — tests/server/test_proto_c.py checks it)."""
    srv = server_mod.Server(server_mod.ServeOptions(log_level="error"))
    assert srv.core is None
    monkeypatch.setenv("WQTOOL_SERVE_CORE", "0")
    srv = server_mod.Server(server_mod.ServeOptions(cmdlog_path=str(tmp_path), log_level="error", create=True))
    assert srv.core is None
    monkeypatch.delenv("WQTOOL_SERVE_CORE")
    monkeypatch.setattr(server_mod, "_CORE", None)
    srv = server_mod.Server(server_mod.ServeOptions(cmdlog_path=str(tmp_path), log_level="error", create=True))
    assert srv.core is None
