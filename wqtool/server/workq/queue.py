"""The live queues of ``wqtool serve``: workq 0.2.0's job controller, registry and work queues, in one thread.

Pure and synchronous: every operation takes ``now`` (Unix ns, wall clock) and the caller runs
``advance(now)`` first, so a job is never handed out after its deadline merely because a timer callback had not
run yet. Time-driven events (TTL expiry, TTR expiry, scheduled wake-up, the end of a ``lease``/``result``/``run``
wait) live in one heap; the server arms a single loop timer at ``next_deadline()``. Changes are reported to
``log(cmd, job_id, result)`` in the order they are applied, so the command log's order is the memory's order
(upstream mutates memory first and appends afterwards, and two connections can log in another order than they
applied: cmdlog spec 6.7). Blocking commands register a waiter whose ``cb(reply)`` is called once.

Where upstream is plainly buggy this does the right thing (README "Differences from workq-server"): a job
restored at start-up keeps its logged TTL (created + TTL; upstream restarts it in full, so a restarted server
holds jobs that the next restart drops); the 256th lease of a job without max-attempts fails it *and logs it*
(upstream fails it in memory only); every ``result`` waiter is woken (upstream wakes one); a ``run`` whose job
was deleted answers -TIMEOUT (upstream dereferences a nil record and crashes); the ``expire`` that ends a
``run`` is logged only when it removes the run's own job.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict

from sortedcontainers import SortedList

from ...engine.workq.replay import Job as ReplayJob, JobState, ReplayState
from ...formats._common import crc32c
from ...formats.workq import CmdType
from . import wire

NEW, COMPLETED, FAILED, PENDING, LEASED = 0, 1, 2, 3, 4
NS_PER_MS = 1_000_000
MAX_HARD_ATTEMPTS = 255
IN_NONE, IN_READY, IN_SCHEDULED = 0, 1, 2
# timer ranks at the same instant: a run's end first, then expiry, wake-ups and lease timeouts (a job that
# becomes ready at T is handed out before a lease waiting until T times out, as upstream prefers a job)
R_RUN, R_TTL, R_SCHED, R_TTR, R_WAIT = 0, 1, 2, 3, 4
_ZERO_KEY_TIME = wire.go_unix_nano(wire.GO_ZERO_UNIX_NS)


class Job:
    __slots__ = ("id", "name", "ttr", "ttl", "priority", "max_attempts", "max_fails", "payload", "time_ns",
                 "created_ns", "state", "attempts", "result", "key", "where", "ttl_seq", "ttr_seq", "ttr_at",
                 "sched_seq", "run", "waiters", "is_run")

    def __init__(self, jid: bytes, name: bytes, ttr: int, ttl: int, priority: int, max_attempts: int,
                 max_fails: int, payload: bytes, time_ns: int | None, created_ns: int, *, is_run: bool = False):
        self.id = jid
        self.name = name
        self.ttr = ttr
        self.ttl = ttl
        self.priority = priority
        self.max_attempts = max_attempts
        self.max_fails = max_fails
        self.payload = payload
        self.time_ns = time_ns           # None: an add (Go zero time); else the scheduled time
        self.created_ns = created_ns
        self.state = NEW
        self.attempts = 0
        self.result: bytes | None = None
        self.key = (-priority, _ZERO_KEY_TIME if time_ns is None else wire.go_unix_nano(time_ns),
                    wire.go_unix_nano(created_ns), jid)
        self.where = IN_NONE
        self.ttl_seq = self.ttr_seq = self.sched_seq = 0
        self.ttr_at = 0
        self.run: "Waiter | None" = None
        self.waiters: list[Waiter] | None = None
        self.is_run = is_run

    @property
    def scheduled(self) -> bool:
        return self.time_ns is not None

    @property
    def expiration_ns(self) -> int:
        base = self.created_ns if self.time_ns is None else self.time_ns
        return base + self.ttl * NS_PER_MS

    @property
    def processed(self) -> bool:
        return self.state == COMPLETED or self.state == FAILED


class Waiter:
    """A blocked ``lease``, ``result`` or ``run``: ``cb(reply)`` is called exactly once (unless cancelled)."""

    __slots__ = ("cb", "done", "seq", "names", "job", "phase2")

    def __init__(self, cb):
        self.cb = cb
        self.done = False
        self.seq = 0
        self.names: list[bytes] | None = None
        self.job: Job | None = None
        self.phase2 = False


class WorkQueue:
    __slots__ = ("ready", "scheduled", "waiters")

    def __init__(self):
        self.ready = SortedList(key=_key)
        self.scheduled = SortedList(key=_key)
        self.waiters: OrderedDict[int, Waiter] = OrderedDict()


def _key(job: Job):
    return job.key


class LiveQueue:
    def __init__(self, log=None):
        self.log = log or _no_log          # log(cmd: CmdType, job_id: bytes, result: bytes | None)
        self.jobs: dict[bytes, Job] = {}
        self.queues: dict[bytes, WorkQueue] = {}
        self.evicted = 0
        self._heap: list = []
        self._seq = 0
        self._stale = 0

    # ---------------------------------------------------------------- timers
    def _push(self, at: int, rank: int, obj) -> int:
        self._seq += 1
        heapq.heappush(self._heap, (at, rank, self._seq, obj))
        return self._seq

    def _drop(self) -> None:
        """One heap entry became stale; rebuild the heap when stale entries dominate (memory follows live
        timers, not the history of cancelled ones)."""
        self._stale += 1
        if self._stale > 1024 and self._stale * 2 > len(self._heap):
            self._heap = [e for e in self._heap if self._live(e)]
            heapq.heapify(self._heap)
            self._stale = 0

    def _live(self, e) -> bool:
        at, rank, seq, obj = e
        if rank == R_TTL:
            return obj.ttl_seq == seq
        if rank == R_TTR:
            return obj.ttr_seq == seq
        if rank == R_SCHED:
            return obj.sched_seq == seq
        return not obj.done and obj.seq == seq

    def next_deadline(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def advance(self, now: int) -> None:
        """Fire every timer due at ``now`` or earlier, in time order."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            e = heapq.heappop(heap)
            if not self._live(e):
                self._stale = max(0, self._stale - 1)
                continue
            at, rank, seq, obj = e
            if rank == R_TTL:
                obj.ttl_seq = 0
                self._expire(obj)
            elif rank == R_TTR:
                obj.ttr_seq = 0
                self._timeout_attempt(obj, now)
            elif rank == R_SCHED:
                obj.sched_seq = 0
                self._awake(obj, now)
            elif rank == R_WAIT:
                self._wait_timeout(obj)
            else:
                self._run_deadline(obj, now)

    # ---------------------------------------------------------------- queues
    def queue(self, name: bytes) -> WorkQueue:
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = WorkQueue()
        return q

    def _dequeue(self, job: Job) -> None:
        if job.where == IN_READY:
            self.queues[job.name].ready.remove(job)
        elif job.where == IN_SCHEDULED:
            self.queues[job.name].scheduled.remove(job)
        job.where = IN_NONE

    def _make_ready(self, job: Job, now: int) -> None:
        """The job is ready in its queue: hand it to the first waiting lease, or queue it."""
        q = self.queue(job.name)
        waiters = q.waiters
        while waiters:
            w = next(iter(waiters.values()))
            if w.done:
                waiters.popitem(last=False)
                continue
            if self._start_attempt(job, now):
                self._finish_lease(w)
                w.cb(wire.job_reply(job.id, job.name, job.ttr, job.payload))
            return                          # leased, or failed at the hard cap: not ready any more
        q.ready.add(job)
        job.where = IN_READY

    def _finish_lease(self, w: Waiter) -> None:
        w.done = True
        for name in w.names:
            q = self.queues.get(name)
            if q is not None:
                q.waiters.pop(id(w), None)
        self._drop()

    def _start_attempt(self, job: Job, now: int) -> bool:
        """LEASED, attempts+1, TTR timer, start-attempt logged; False when the job hits the hard cap of 255
        attempts instead (it fails, with an empty result, and that is logged as a fail)."""
        if job.attempts >= MAX_HARD_ATTEMPTS and not job.max_attempts:
            self._finish(job, FAILED, b"", now, log=True)
            return False
        job.state = LEASED
        job.attempts += 1
        job.ttr_at = now + job.ttr * NS_PER_MS
        job.ttr_seq = self._push(job.ttr_at, R_TTR, job)
        self.log(CmdType.START_ATTEMPT, job.id, None)
        return True

    # ---------------------------------------------------------------- commands (validated by the handlers)
    def add(self, job: Job, now: int) -> bytes:
        if job.id in self.jobs:
            return wire.E_DUP_JOB
        self.jobs[job.id] = job
        job.ttl_seq = self._push(job.expiration_ns, R_TTL, job)
        self.log(CmdType.ADD if job.time_ns is None else CmdType.SCHEDULE, job.id, job)
        if job.time_ns is None:
            self._make_ready(job, now)
        else:
            q = self.queue(job.name)
            q.scheduled.add(job)
            job.where = IN_SCHEDULED
            job.sched_seq = self._push(job.time_ns, R_SCHED, job)
        return wire.OK

    def run(self, job: Job, wait_ms: int, now: int, w: Waiter) -> bytes | None:
        if job.id in self.jobs:
            return wire.E_DUP_JOB
        self.jobs[job.id] = job
        job.run = w
        w.job = job
        self._make_ready(job, now)
        if w.done:                          # impossible: a result needs a lease and a complete first
            return None
        w.seq = self._push(now + wait_ms * NS_PER_MS, R_RUN, w)
        if wait_ms == 0:
            self.advance(now)
        return None

    def lease(self, names: list[bytes], wait_ms: int, now: int, w: Waiter) -> bytes | None:
        for name in names:
            q = self.queue(name)
            while q.ready:
                job = q.ready.pop(0)
                job.where = IN_NONE
                if self._start_attempt(job, now):
                    return b"".join(wire.job_reply(job.id, job.name, job.ttr, job.payload))
        if wait_ms == 0:
            return wire.TIMEOUT
        w.names = names
        for name in names:
            self.queue(name).waiters[id(w)] = w
        w.seq = self._push(now + wait_ms * NS_PER_MS, R_WAIT, w)
        return None

    def finish(self, jid: bytes, success: bool, result: bytes, now: int) -> bytes:
        """complete / fail."""
        job = self.jobs.get(jid)
        if job is None:
            return wire.NOT_FOUND
        if job.processed or job.result is not None:
            return wire.E_DUP_RESULT
        self._finish(job, COMPLETED if success else FAILED, result, now, log=True)
        return wire.OK

    def _finish(self, job: Job, state: int, result: bytes, now: int, *, log: bool = False) -> None:
        job.state = state
        job.result = result
        if job.ttr_seq:
            job.ttr_seq = 0
            self._drop()
        self._dequeue(job)
        if log:
            self.log(CmdType.COMPLETE if state == COMPLETED else CmdType.FAIL, job.id, result)
        reply = None
        if job.waiters:
            reply = wire.result_reply(job.id, state == COMPLETED, result)
            for w in job.waiters:
                if not w.done:
                    w.done = True
                    self._drop()
                    w.cb(reply)
            job.waiters = None
        if job.run is not None and not job.run.done:
            w = job.run
            w.done = True
            self._drop()
            self._end_run(job)
            w.cb(reply or wire.result_reply(job.id, state == COMPLETED, result))

    def delete(self, jid: bytes) -> bytes:
        job = self.jobs.get(jid)
        if job is None:
            return wire.NOT_FOUND
        self._remove(job)
        self.log(CmdType.DELETE, jid, None)
        return wire.OK

    def _remove(self, job: Job) -> None:
        del self.jobs[job.id]
        self._dequeue(job)
        for attr in ("ttl_seq", "ttr_seq", "sched_seq"):
            if getattr(job, attr):
                setattr(job, attr, 0)
                self._drop()

    def result(self, jid: bytes, wait_ms: int, now: int, w: Waiter) -> bytes | None:
        job = self.jobs.get(jid)
        if job is None:
            return wire.NOT_FOUND
        if job.processed:
            return b"".join(wire.result_reply(jid, job.state == COMPLETED, job.result or b""))
        if wait_ms == 0:
            return wire.TIMEOUT
        if job.waiters is None:
            job.waiters = []
        job.waiters.append(w)
        w.job = job
        w.seq = self._push(now + wait_ms * NS_PER_MS, R_WAIT, w)
        return None

    def cancel(self, w: Waiter) -> None:
        """The client behind ``w`` is gone: a lease stops waiting (no job is leased to nobody); a run ends as
        at its deadline (its job removed, expire logged); a result stops waiting."""
        if w.done:
            return
        if w.names is not None:
            self._finish_lease(w)
            return
        w.done = True
        self._drop()
        job = w.job
        if job is not None and job.run is w:
            self._end_run(job)

    # ---------------------------------------------------------------- time-driven events
    def _expire(self, job: Job) -> None:
        if self.jobs.get(job.id) is not job:
            return
        if not job.processed:
            self.evicted += 1
        self._remove(job)
        self.log(CmdType.EXPIRE, job.id, None)

    def _timeout_attempt(self, job: Job, now: int) -> None:
        if self.jobs.get(job.id) is not job or job.state != LEASED:
            return
        self.log(CmdType.TIMEOUT_ATTEMPT, job.id, None)
        if job.max_attempts and job.attempts >= job.max_attempts:
            self._finish(job, FAILED, b"", now)
        else:
            job.state = PENDING
            self._make_ready(job, now)

    def _awake(self, job: Job, now: int) -> None:
        if self.jobs.get(job.id) is not job or job.where != IN_SCHEDULED:
            return
        self.queues[job.name].scheduled.remove(job)
        job.where = IN_NONE
        self._make_ready(job, now)

    def _wait_timeout(self, w: Waiter) -> None:
        if w.names is not None:
            self._finish_lease(w)
            self._stale = max(0, self._stale - 1)   # its own entry was just popped
        else:
            w.done = True
            if w.job is not None and w.job.waiters:
                try:
                    w.job.waiters.remove(w)
                except ValueError:
                    pass
        w.cb([wire.TIMEOUT])

    def _run_deadline(self, w: Waiter, now: int) -> None:
        job = w.job
        if not w.phase2 and self.jobs.get(job.id) is job and job.state == LEASED:
            w.phase2 = True                   # leased: wait up to the lease's TTR for the result
            w.seq = self._push(job.ttr_at, R_RUN, w)
            return
        w.done = True
        self._end_run(job)
        w.cb([wire.TIMEOUT])

    def _end_run(self, job: Job) -> None:
        if self.jobs.get(job.id) is job:
            self._remove(job)
            self.log(CmdType.EXPIRE, job.id, None)

    # ---------------------------------------------------------------- start-up and checks
    def restore(self, state: ReplayState, payloads: dict[bytes, bytes], now: int) -> None:
        """Rebuild the live queues from the engine's replayed state (start-up). A job keeps its logged TTL
        (created + TTL, or time + TTL); a leased job gets a fresh TTR from ``now`` (as upstream)."""
        for rj in state.jobs.values():
            sched = rj.scheduled_ns
            job = Job(rj.id, rj.name.encode("ascii"), rj.ttr, rj.ttl, rj.priority, rj.max_attempts, rj.max_fails,
                      payloads[rj.id], sched, rj.created_ns)
            job.state = int(rj.state)
            job.attempts = rj.attempts
            job.result = rj.result
            self.jobs[job.id] = job
            q = self.queue(job.name)
            job.ttl_seq = self._push(rj.log_expires_ns, R_TTL, job)
            if job.state == NEW or job.state == PENDING:
                if sched is not None and sched > now:
                    q.scheduled.add(job)
                    job.where = IN_SCHEDULED
                    job.sched_seq = self._push(sched, R_SCHED, job)
                else:
                    q.ready.add(job)
                    job.where = IN_READY
            elif job.state == LEASED:
                job.ttr_at = now + job.ttr * NS_PER_MS
                job.ttr_seq = self._push(job.ttr_at, R_TTR, job)

    def snapshot(self, as_of_ns: int) -> ReplayState:
        """The live jobs as ``wqtool replay --as-of as_of_ns`` describes them (run jobs are never logged, so
        they are left out): its digest equals the replay digest of the log this server wrote."""
        jobs = {}
        for job in self.jobs.values():
            if job.is_run:
                continue
            log_exp = job.expiration_ns
            if job.time_ns is None:
                kind, exp = CmdType.ADD, as_of_ns + job.ttl * NS_PER_MS
            else:
                kind, exp = CmdType.SCHEDULE, log_exp
            st = JobState(job.state)
            lease = as_of_ns + job.ttr * NS_PER_MS if st is JobState.LEASED else None
            jobs[job.id] = ReplayJob(job.id, kind, job.name.decode("ascii"), job.ttr, job.ttl, job.priority,
                                     job.max_attempts, job.max_fails, job.created_ns, job.time_ns, exp, log_exp,
                                     len(job.payload), crc32c(job.payload), "", 0, st, job.attempts,
                                     job.result if job.processed else None, lease)
        return ReplayState(as_of_ns, jobs)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("new", "completed", "failed", "pending", "leased"), 0)
        labels = ("new", "completed", "failed", "pending", "leased")
        for j in self.jobs.values():
            out[labels[j.state]] += 1
        return out


def _no_log(cmd, jid, extra) -> None:
    return None
