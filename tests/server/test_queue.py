"""The live queues with an explicit clock: random command histories, written through the engine's appender, replay
in ``wqtool replay``'s engine to exactly the state the queues hold (same digest at any instant), and a restart
from that log rebuilds the same state. Plus the timer and ordering rules one by one."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from wqtool.engine.workq.appender import Appender
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.model import Command
from wqtool.engine.workq.replay import state_digest
from wqtool.engine.workq.startup import replay_directory
from wqtool.formats._common import GO_ZERO_TIME, GoTime, encode_uvarint
from wqtool.formats.workq import CmdType
from wqtool.server.workq import wire
from wqtool.engine.workq.jobtable import K_STATE
from wqtool.server.workq.queue import COMPLETED, FAILED, LEASED, NEW, PENDING, Job, LiveQueue, Waiter
from wqtool.engine.findings import Verdict

T0 = 1_795_302_891_000_000_000          # 2026-11-21T23:14:51Z
MS = 1_000_000


class Recorder:
    """The server's record encoding (Server._log_record), into a list."""

    def __init__(self, clock):
        self.records: list[bytes] = []
        self.clock = clock

    def __call__(self, cmd, jid, extra):
        if cmd in (CmdType.ADD, CmdType.SCHEDULE):
            j = extra
            payload = encode_payload(Command(cmd, jid, j.name, j.ttr, j.ttl, j.priority, j.max_attempts, j.max_fails,
                                             j.payload, GO_ZERO_TIME if j.time_ns is None else
                                             GoTime.from_unix_ns(j.time_ns), GoTime.from_unix_ns(j.created_ns)))
        elif cmd in (CmdType.COMPLETE, CmdType.FAIL):
            payload = bytes((cmd,)) + jid + encode_uvarint(len(extra)) + extra
        else:
            payload = bytes((cmd,)) + jid
        self.records.append(encode_record(GoTime.from_unix_ns(self.clock[0]), payload))


def jid(n: int) -> bytes:
    return bytes.fromhex("00000000000040008000%012x" % n)


def waiter(sink: list) -> Waiter:
    return Waiter(sink.append)


OPS = st.lists(st.tuples(st.sampled_from(["add", "sched", "lease", "complete", "fail", "delete", "tick", "run",
                                          "result"]),
                         st.integers(0, 11), st.integers(0, 3), st.integers(1, 2500)), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_histories_replay_to_the_live_state(tmp_path_factory, ops):
    d = str(tmp_path_factory.mktemp("q"))
    clock = [T0]
    rec = Recorder(clock)
    q = LiveQueue(rec)
    replies: list = []
    for op, n, k, dt in ops:
        now = clock[0]
        q.advance(now)
        j = jid(n)
        name = b"q%d" % (n % 3)
        if op == "add":
            q.add(Job(j, name, 100 + 50 * k, 300 + dt, k - 1, k % 3, k, b"p%d" % n, None, now), now)
        elif op == "sched":
            q.add(Job(j, name, 200, 2000, k, 0, 0, b"s", now + dt * MS // 2, now), now)
        elif op == "lease":
            q.lease([name, b"q%d" % ((n + 1) % 3)], 0 if k < 2 else dt, now, waiter(replies))
        elif op == "complete":
            q.finish(j, True, b"r%d" % k, now)
        elif op == "fail":
            q.finish(j, False, b"", now)
        elif op == "delete":
            q.delete(j)
        elif op == "run":
            q.run(Job(j, name, 150, 0, 0, 0, 0, b"run", None, now, is_run=True), dt // 4, now, waiter(replies))
        elif op == "result":
            q.result(j, dt // 2, now, waiter(replies))
        clock[0] = now + dt * MS // 3
    clock[0] += 1000 * MS
    q.advance(clock[0])
    ap = Appender(d, segment_size=600)
    ap.append(rec.records)
    ap.close()
    for lock in ("append.lock", "read.lock"):
        open(os.path.join(d, lock), "ab").close()
    as_of = clock[0]
    rep = replay_directory(d, as_of)
    assert rep.verdict == Verdict.CLEAN, [f.message for f in rep.report.findings if f.severity == "error"]
    assert state_digest(rep.state) == state_digest(q.snapshot(as_of))
    # a restart from that log rebuilds the same state
    q2 = LiveQueue()
    q2.restore(rep.state, rep.payloads, as_of)
    assert state_digest(q2.snapshot(as_of)) == state_digest(q.snapshot(as_of))
    assert {k: (v.state, v.attempts, v.result, v.payload) for k, v in q2.jobs.items()} == \
        {k: (v.state, v.attempts, v.result, v.payload) for k, v in q.jobs.items() if not v.is_run}


def test_ttr_timeouts_then_max_attempts_fail_with_empty_result():
    log: list = []
    q = LiveQueue(lambda c, j, e: log.append(c))
    q.add(Job(jid(1), b"q", 100, 60000, 0, 2, 0, b"x", None, T0), T0)
    box: list = []
    assert q.lease([b"q"], 0, T0, waiter(box)).startswith(b"+OK 1")
    q.advance(T0 + 100 * MS)
    assert q.jobs[jid(1)].state == PENDING
    q.lease([b"q"], 0, T0 + 100 * MS, waiter(box))
    q.advance(T0 + 200 * MS)
    job = q.jobs[jid(1)]
    assert (job.state, job.attempts, job.result) == (FAILED, 2, b"")
    assert log == [CmdType.ADD, CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT, CmdType.START_ATTEMPT,
                   CmdType.TIMEOUT_ATTEMPT]


def test_the_live_queue_applies_the_engines_rules(monkeypatch):
    """The server keeps no copy of the job state machine's rules: it applies replay.py's (issue 18 item 2). With
    the engine's timeout rule changed, the live queue changes with it (a server copy would not). The queue takes
    the engine's functions on their first use (an empty log's first replies import no replay module)."""
    from wqtool.engine.workq import replay
    from wqtool.server.workq import queue
    assert queue.after_timeout(replay.JobState.LEASED, 1, 1) is replay.JobState.FAILED
    assert queue.result_refused(replay.JobState.FAILED) == "WQ-DUPLICATE-RESULT"
    assert queue.after_timeout is replay.after_timeout and queue.result_refused is replay.result_refused
    monkeypatch.setattr(queue, "after_timeout", lambda state, att, ma: replay.JobState.PENDING)   # never fails
    q = LiveQueue()
    q.add(Job(jid(3), b"q", 100, 60000, 0, 1, 0, b"x", None, T0), T0)
    box: list = []
    q.lease([b"q"], 0, T0, waiter(box))
    q.advance(T0 + 100 * MS)
    assert q.jobs[jid(3)].state == PENDING          # at max-attempts 1: FAILED under the real rule
    monkeypatch.setattr(queue, "result_refused", lambda state: "WQ-DUPLICATE-RESULT")
    assert q.finish(jid(3), True, b"r", T0 + 200 * MS) == wire.E_DUP_RESULT


def test_the_engines_rules():
    from wqtool.engine.workq.replay import JobState as S, after_timeout, result_refused, start_refused
    assert [start_refused(st, 1, 2) for st in S] == [None, "WQ-ALREADY-PROCESSED", "WQ-ALREADY-PROCESSED", None,
                                                      "WQ-ALREADY-LEASED"]
    assert start_refused(S.PENDING, 2, 2) == "WQ-MAX-ATTEMPTS" and start_refused(S.PENDING, 9, 0) is None
    assert [result_refused(st) for st in S] == [None, "WQ-DUPLICATE-RESULT", "WQ-DUPLICATE-RESULT", None, None]
    assert [after_timeout(st, 2, 2) for st in S] == [S.FAILED, None, None, S.FAILED, S.FAILED]
    assert after_timeout(S.LEASED, 1, 2) is S.PENDING and after_timeout(S.LEASED, 7, 0) is S.PENDING


def test_hard_cap_of_255_attempts_fails_the_job_and_logs_it():
    log: list = []
    q = LiveQueue(lambda c, j, e: log.append((c, e)))
    q.add(Job(jid(2), b"q", 1, 60000, 0, 0, 0, b"x", None, T0), T0)
    now = T0
    for _ in range(255):
        assert q.lease([b"q"], 0, now, waiter([])).startswith(b"+OK")
        now += MS
        q.advance(now)
    assert q.jobs[jid(2)].state == PENDING and q.jobs[jid(2)].attempts == 255
    assert q.lease([b"q"], 0, now, waiter([])) == wire.TIMEOUT
    assert q.jobs[jid(2)].state == FAILED and log[-1] == (CmdType.FAIL, b"")


def test_ttl_expiry_counts_only_unprocessed_jobs():
    q = LiveQueue()
    q.add(Job(jid(3), b"q", 1000, 10, 0, 0, 0, b"", None, T0), T0)
    q.add(Job(jid(4), b"q", 1000, 10, 0, 0, 0, b"", None, T0), T0)
    q.finish(jid(4), True, b"", T0)
    q.advance(T0 + 10 * MS)
    assert not q.jobs and q.evicted == 1


def test_a_job_ready_at_the_deadline_of_a_lease_is_handed_out():
    q = LiveQueue()
    box: list = []
    assert q.lease([b"q"], 100, T0, waiter(box)) is None
    q.add(Job(jid(5), b"q", 1000, 60000, 0, 0, 0, b"s", T0 + 100 * MS, T0), T0)
    q.advance(T0 + 100 * MS)
    assert box and box[0][0].startswith(b"+OK 1")
    assert q.jobs[jid(5)].state == LEASED


def test_run_waits_for_the_ttr_of_a_leased_job_then_times_out():
    log: list = []
    q = LiveQueue(lambda c, j, e: log.append(c))
    box: list = []
    q.run(Job(jid(6), b"q", 500, 0, 0, 0, 0, b"r", None, T0, is_run=True), 100, T0, waiter(box))
    q.lease([b"q"], 0, T0 + 50 * MS, waiter([]))
    q.advance(T0 + 100 * MS)
    assert not box                                   # leased: the run waits up to the lease's TTR
    q.advance(T0 + 550 * MS)
    assert box == [[wire.TIMEOUT]] and jid(6) not in q.jobs
    assert log == [CmdType.START_ATTEMPT, CmdType.EXPIRE]


def test_restore_gives_upstream_timers():
    """A restart at R: an add-job's TTL starts again in full (workq 0.2.0 replay.go:77-88 -> controller.go:163),
    a scheduled job keeps time + TTL (controller.go:491, 659), a leased job gets a fresh TTR (controller.go:637);
    an add-job past its logged expiry is reported to the cleaner (``outliving``) until it is gone."""
    from wqtool.engine.workq.replay import ReplayState
    q = LiveQueue()
    q.add(Job(jid(7), b"q", 1000, 5000, 0, 0, 0, b"x", None, T0), T0)
    q.add(Job(jid(8), b"s", 1000, 5000, 0, 0, 0, b"y", T0 + 1000 * MS, T0), T0)
    q.add(Job(jid(9), b"l", 3000, 60000, 0, 0, 0, b"z", None, T0), T0)
    assert q.lease([b"l"], 0, T0, waiter([]))
    restart = T0 + 4000 * MS
    snap = q.snapshot(restart)
    q2 = LiveQueue()
    q2.restore(ReplayState(snap.as_of_ns, snap.jobs), {jid(7): b"x", jid(8): b"y", jid(9): b"z"}, restart)
    assert q2.outliving(restart) is None
    q2.advance(T0 + 5000 * MS)
    assert jid(7) in q2.jobs                          # restart + TTL, not created + TTL (upstream)
    assert q2.outliving(T0 + 5000 * MS) == T0 + 5000 * MS    # its add record must survive a cleaning
    assert jid(9) in q2.jobs and q2.row(q2.jobs[jid(9)])[K_STATE] == LEASED
    q2.advance(T0 + 6000 * MS)
    assert jid(8) not in q2.jobs                      # scheduled: time + TTL, as logged
    assert q2.row(q2.jobs[jid(9)])[K_STATE] == LEASED     # TTR 3 s from the restart, not from the lease
    q2.advance(restart + 3000 * MS)
    assert q2.row(q2.jobs[jid(9)])[K_STATE] == PENDING
    q2.advance(restart + 5000 * MS - 1)
    assert jid(7) in q2.jobs
    q2.advance(restart + 5000 * MS)
    assert jid(7) not in q2.jobs
    assert q2.outliving(restart + 5000 * MS) is None  # gone: nothing holds the cleaner back
    assert NEW == 0 and COMPLETED == 1


class _Owner:
    __slots__ = ("lst",)


class _J:
    __slots__ = ("key",)

    def __init__(self, key: bytes):
        self.key = key


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "add", "add", "remove", "pop0", "pop", "slice"]),
                          st.integers(0, 10_000), st.integers(0, 90)), max_size=260))
@example([("add", n * 7919, 0) for n in range(70)] + [("slice", 3, 60), ("pop0", 0, 0), ("remove", 5, 0)])
def test_a_short_work_list_orders_as_sortedcontainers(ops):
    """``FewSorted`` (a work queue's list while it is short: no sortedcontainers import before serve's first
    replies) answers every operation the queue and the handlers use as SortedKeyList does, also once it has
    grown past LIMIT and handed its jobs to a SortedKeyList in its owner."""
    from sortedcontainers import SortedKeyList
    from wqtool.server.workq.queue import FewSorted, _key
    owner = _Owner()
    owner.lst = FewSorted(owner, "lst")
    ref = SortedKeyList(key=_key)
    live: list = []
    for op, n, m in ops:
        got = owner.lst
        if op == "add":
            j = _J(b"%08d" % (n % 500) + b"%06d" % len(live))     # unique keys, as the queue's (they end with the id)
            live.append(j)
            got.add(j)
            ref.add(j)
        elif op == "remove" and live:
            j = live.pop(n % len(live))
            got.remove(j)
            ref.remove(j)
        elif op == "remove":
            j = _J(b"none")
            with pytest.raises(ValueError):
                got.remove(j)
        elif op in ("pop0", "pop") and len(ref):
            i = 0 if op == "pop0" else -1
            a, b = got.pop(i), ref.pop(i)
            assert a is b
            live.remove(a)
        elif op == "slice":
            assert list(got.islice(m, m + n % 20)) == list(ref.islice(m, m + n % 20))
            assert list(got.islice(m, m + 5, reverse=True)) == list(ref.islice(m, m + 5, reverse=True))
        assert len(owner.lst) == len(ref) and bool(owner.lst) == bool(ref)
        assert list(owner.lst) == list(ref)
        if len(ref) > FewSorted.LIMIT:
            assert isinstance(owner.lst, SortedKeyList)
