"""The live queues of ``wqtool serve``: workq 0.2.0's job controller, registry and work queues, in one thread.

Pure and synchronous: every operation takes ``now`` (Unix ns, wall clock) and the caller runs
``advance(now)`` first, so a job is never handed out after its deadline merely because a timer callback had not
run yet. Time-driven events (TTL expiry, TTR expiry, scheduled wake-up, the end of a ``lease``/``result``/``run``
wait) live in one heap; the server arms a single loop timer at ``next_deadline()``. Changes are reported to
``log(cmd, job_id, result)`` in the order they are applied, so the command log's order is the memory's order
(upstream mutates memory first and appends afterwards, and two connections can log in another order than they
applied: cmdlog spec 6.7). Blocking commands register a waiter whose ``cb(reply)`` is called once.

A restart is upstream's (``restore``): an add-job restored at start-up gets a fresh full TTL, a leased job a
fresh TTR, a scheduled job keeps its time + TTL. Where upstream is plainly buggy this does the right thing (README
"Differences from workq-server"): the 256th lease of a job without max-attempts fails it *and logs it*
(upstream fails it in memory only); every ``result`` waiter is woken (upstream wakes one); a ``run`` whose job
was deleted answers -TIMEOUT (upstream dereferences a nil record and crashes); the ``expire`` that ends a
``run`` is logged only when it removes the run's own job.
"""
from __future__ import annotations

import _heapq as heapq      # (heapq's, struct's and bisect's C modules: serve imports this before its first reply,
import _struct as struct    # and their Python wrappers cost a third of a millisecond of CPU)
import os
import sys
from _bisect import bisect_left, bisect_right
from _collections import OrderedDict    # (collections.OrderedDict, without the collections package)

try:                    # the kernel's CRC-32C, as the reader's (no google_crc32c import before serve's first reply)
    from ...engine.workq import _kernel
    _crc = _kernel.crc32c
except ImportError:     # not built: google-crc32c
    _kernel = None
    from google_crc32c import value as _crc

# (the replay's modules — fastreplay, payloads, replay — are imported where they are used: an empty log's first
# replies do without them, and without the dataclasses and enums they make)
from ...engine.workq.rules import COMPLETED, FAILED, LEASED, NEW, PENDING, result_refused   # (replay.py's own)
from ...engine.workq.jobtable import (K_ATT, K_MA, K_OFF, K_PCRC, K_PLEN, K_RES, K_SEG, K_STATE, K_TTR, PyJobTable)
from ...errors import FormatError
from ...formats.workq import CMD_CODES
from . import wire

NS_PER_MS = 1_000_000
MAX_HARD_ATTEMPTS = 255
#: bodies kept after their records are written (``LiveQueue.recent``): at most this many, of at most RECENT_BODY
#: bytes each (256 KiB at most in all)
RECENT = 256
RECENT_BODY = 1024
IN_NONE, IN_READY, IN_SCHEDULED = 0, 1, 2
# timer ranks at the same instant: a run's end first, then expiry, wake-ups and lease timeouts (a job that
# becomes ready at T is handed out before a lease waiting until T times out, as upstream prefers a job)
R_RUN, R_TTL, R_SCHED, R_TTR, R_WAIT = 0, 1, 2, 3, 4
_ZERO_KEY_TIME = wire.go_unix_nano(wire.GO_ZERO_UNIX_NS)
#: a row's segment number until the server has written the job's add/schedule record (its body is held until then)
NOWHERE = 0xFFFFFFFF
_SEQ_BITS = 48
_AT_SHIFT = _SEQ_BITS + 3
_B63 = 1 << 63
_KEY = struct.Struct(">QQQ").pack
#: the opcodes the queue logs (``log(cmd, ...)``): the schema's CmdType values, as plain ints
(_ADD, _SCHEDULE, _COMPLETE, _FAIL, _DELETE, _EXPIRE, _START_ATTEMPT, _TIMEOUT_ATTEMPT) = (
    CMD_CODES[n] for n in ("ADD", "SCHEDULE", "COMPLETE", "FAIL", "DELETE", "EXPIRE", "START_ATTEMPT",
                           "TIMEOUT_ATTEMPT"))


def after_timeout(state: int, attempts: int, max_attempts: int):
    """The engine's rule (``engine.workq.replay.after_timeout``, which takes this name on its first use: the
    replay's module is not imported before a first lease times out)."""
    global after_timeout
    from ...engine.workq.replay import after_timeout
    return after_timeout(state, attempts, max_attempts)


def _empty_table():
    """An empty job table, the one the replay makes (``fastreplay.new_table``): the C kernel's when the replay would
    take it (the kernel built, ``WQTOOL_PURE_PYTHON`` unset: fastreplay's ``KERNEL``), without importing the replay
    unless it is loaded already (tests switch its ``KERNEL``) or pure Python is asked for."""
    fr = sys.modules.get("wqtool.engine.workq.fastreplay")
    if fr is None and (_kernel is None or os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0")):
        from ...engine.workq import fastreplay as fr
    return _kernel.JobTable() if fr is None else fr.new_table()


def job_key(priority: int, time_ns: int | None, created_ns: int, jid: bytes) -> bytes:
    """The ready/scheduled order of a job as one bytes string: upstream's (-priority, UnixNano(time),
    UnixNano(created), id) as big-endian unsigned fields (each biased by 2**63), then the id — bytes compare
    exactly as that tuple does, and take less room."""
    if time_ns is None:
        t = _ZERO_KEY_TIME
    else:
        t = time_ns if 0 <= time_ns < _B63 else wire.go_unix_nano(time_ns)
    c = created_ns if 0 <= created_ns < _B63 else wire.go_unix_nano(created_ns)
    return _KEY(_B63 - priority, t + _B63, c + _B63) + jid


class Job:
    """A job as a command makes it (the handlers' add / schedule / run): every field and the body. The queue keeps
    none of these: a logged job becomes a row of the job table plus an ``Entry``; a run job a ``RunEntry``."""

    __slots__ = ("id", "name", "ttr", "ttl", "priority", "max_attempts", "max_fails", "payload", "time_ns",
                 "created_ns", "is_run")

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
        self.is_run = is_run

    @property
    def scheduled(self) -> bool:
        return self.time_ns is not None

    @property
    def expiration_ns(self) -> int:
        base = self.created_ns if self.time_ns is None else self.time_ns
        return base + self.ttl * NS_PER_MS


class Entry:
    """A live job's runtime state: where it is (ready / scheduled list of its queue), its timers, the ``result``
    calls waiting for it, and its ready-order key. Its durable fields (jobtable.ROW) are the row of the queue's job
    table; its body is read back from the log (``LiveQueue.payload``). The attributes below read the row."""

    __slots__ = ("id", "name", "key", "where", "ttl_seq", "ttr_seq", "sched_seq", "waiters", "lq")
    is_run = False
    run = None

    def __init__(self, jid: bytes, name: bytes, key: bytes | None, lq: "LiveQueue"):
        self.id = jid
        self.name = name                 # interned by the queue
        self.key = key                   # the ready order (job_key) while in a ready or scheduled list, else None
        self.where = IN_NONE
        self.ttl_seq = self.ttr_seq = self.sched_seq = 0
        self.waiters: list[Waiter] | None = None
        self.lq = lq

    def _f(self, k: int):
        return self.lq.row(self)[k]

    state = property(lambda self: self._f(K_STATE))
    attempts = property(lambda self: self._f(K_ATT))
    result = property(lambda self: self._f(K_RES))
    ttr = property(lambda self: self._f(K_TTR))
    ttl = property(lambda self: self._f(3))
    priority = property(lambda self: self._f(4))
    max_attempts = property(lambda self: self._f(K_MA))
    max_fails = property(lambda self: self._f(6))
    created_ns = property(lambda self: self._f(7))
    time_ns = property(lambda self: self._f(8))

    @property
    def payload(self) -> bytes:
        return self.lq.payload(self, self.lq.row(self))

class RunEntry(Entry):
    """A ``run`` job (never logged, transient): its row is a list in ``LiveQueue.runs`` and its body is held."""

    __slots__ = ("run", "ttr_at")
    is_run = True

    def __init__(self, jid: bytes, name: bytes, key: bytes | None, lq: "LiveQueue"):
        Entry.__init__(self, jid, name, key, lq)
        self.run: "Waiter | None" = None
        self.ttr_at = 0


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
        # short lists until one grows (serve's first replies import no sortedcontainers, see FewSorted), also once
        # sortedcontainers is imported: the C request core (_core.c) adds to and leases from a FewSorted only
        self.ready = FewSorted(self, "ready")
        self.scheduled = FewSorted(self, "scheduled")
        self.waiters: OrderedDict[int, Waiter] = OrderedDict()


class FewSorted:
    """A work queue's ready or scheduled list while it is short: the operations of sortedcontainers' SortedKeyList
    (key ``_key``) the queue and the handlers use, on a plain list kept in key order. Importing sortedcontainers
    (with traceback, tokenize, re and enum) was a third of the CPU to an empty log's first ``add`` reply; past
    ``LIMIT`` jobs the list hands its jobs to a SortedKeyList, which takes its place in the owning WorkQueue
    (``owner.<attr>``: the queue reads the attribute at each use, never keeps the list). Job keys are unique (they
    end with the job id), so the order is the SortedKeyList's (tests/server/test_queue.py compares the two)."""

    __slots__ = ("keys", "jobs", "owner", "attr")
    LIMIT = 64

    def __init__(self, owner, attr: str):
        self.keys: list[bytes] = []
        self.jobs: list = []
        self.owner, self.attr = owner, attr

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self):
        return iter(list(self.jobs))

    def add(self, job) -> None:
        keys = self.keys
        if len(keys) >= self.LIMIT:
            from sortedcontainers import SortedKeyList
            big = SortedKeyList(self.jobs, key=_key)
            setattr(self.owner, self.attr, big)
            big.add(job)
            return
        i = bisect_right(keys, job.key)
        keys.insert(i, job.key)
        self.jobs.insert(i, job)

    def remove(self, job) -> None:
        keys, k = self.keys, job.key
        i = bisect_left(keys, k)
        while i < len(keys) and keys[i] == k:
            if self.jobs[i] == job:
                del keys[i], self.jobs[i]
                return
            i += 1
        raise ValueError(f"{job!r} not in list")

    def pop(self, index: int = -1):
        if not self.jobs:
            raise IndexError("pop index out of range")
        del self.keys[index]
        return self.jobs.pop(index)

    def islice(self, start=None, stop=None, reverse=False):
        if reverse:
            return reversed(self.jobs[start:stop])
        return iter(self.jobs[start:stop])


def _key(job: Job):
    return job.key


class LiveQueue:
    """The live queues. Every logged job's durable fields are a row of ``self.table`` — the engine's compact job
    table (jobtable.py: ``_kernel.JobTable``, or ``PyJobTable`` in pure Python), the very table the start-up replay
    filled (``restore`` takes it over) — updated (``put``) at every change the queue logs and deleted with the job.
    A job's body is not held: it is read back from its add/schedule record (``reader``, by segment and offset) when
    a reply carries it; only until the server has written that record (``located``) is it kept in ``unwritten``
    (and then, for the last RECENT jobs written, in ``recent``).
    ``run`` jobs are never logged: their rows are lists in ``runs`` and their bodies stay in ``unwritten``."""

    def __init__(self, log=None):
        self.log = log or _no_log          # log(cmd: int (a CmdType value), job_id: bytes, result: bytes | None)
        self.jobs: dict[bytes, Entry] = {}
        self.queues: dict[bytes, WorkQueue] = {}
        self.table = _empty_table()
        self.runs: dict[bytes, list] = {}
        self.unwritten: dict[bytes, bytes] = {}
        #: the bodies of the last jobs whose records were written (``located``), by id: (entry, body), oldest first,
        #: at most RECENT of them, each at most RECENT_BODY bytes — the Go load client, as most workers, leases a
        #: job right after its add, and its body is then at hand (no ``pread`` and no record check per lease)
        self.recent: dict[bytes, tuple] = {}
        self.reader = None                 # a PayloadReader (``payload_reader``)
        self.evicted = 0
        #: told of a job body a timer could not read back (the job stays ready; the server logs it)
        self.on_read_error = None
        self._heap: list = []
        self._seq = 0
        self._stale = 0
        self._names: dict = {}             # queue name bytes -> str and str -> bytes (interned)
        self._settle: list | None = None   # a pass translating rows past rewritten segments: [ids, next, generation]
        # restored add-jobs by logged expiry, and the first not yet passed over (``outliving``)
        self._outliving_exp = ()          # (an array("q") once restored: array is not imported before)
        self._outliving: list = []
        self._outliving_at = 0

    # ---------------------------------------------------------------- rows and bodies
    def row(self, e: Entry) -> list:
        """The job's row as a list (a run job's is its own list: changes to it are kept)."""
        if e.is_run:
            return self.runs[e.id]
        return list(self.table.get_row(e.id))

    def _set(self, e: Entry, row: list) -> None:
        if not e.is_run:
            self._put(e.id, tuple(row))

    def _put(self, jid: bytes, row: tuple) -> None:
        try:
            self.table.put(jid, row)
        except OverflowError:
            # a field the C table cannot hold (a schedule beyond the year 2262): the same rows in a PyJobTable,
            # as the replay hands such a log to the reference path
            if isinstance(self.table, PyJobTable):
                raise
            py = PyJobTable()
            for r in self.table.rows():
                py.put(r[0], tuple(r[1:]))
            self.table = py
            py.put(jid, row)

    def payload(self, e: Entry, row) -> bytes:
        """The job's body: held until its record is written (and for run jobs), else read back from the log."""
        p = self.unwritten.get(e.id)
        if p is not None:
            return p
        r = self.recent.get(e.id)
        if r is not None and r[0] is e:
            return r[1]
        if self.reader is None:
            raise FormatError("a job body is neither held nor in a log this queue reads")
        return self.reader.read(row[K_SEG], row[K_OFF], e.id, row[K_PLEN], row[K_PCRC])

    def located(self, e: Entry, seg: int, offset: int) -> None:
        """The server wrote ``e``'s add/schedule record at (segment number ``seg``, ``offset``): the row says so
        and the body is no longer held (nothing if the job is gone, or is another job with the same id now)."""
        if self.jobs.get(e.id) is not e:
            return
        row = list(self.table.get_row(e.id))
        row[K_SEG] = seg
        row[K_OFF] = offset
        self._put(e.id, tuple(row))
        body = self.unwritten.pop(e.id, None)
        if body is not None and len(body) <= RECENT_BODY:
            recent = self.recent
            recent.pop(e.id, None)
            recent[e.id] = (e, body)
            if len(recent) > RECENT:
                del recent[next(iter(recent))]

    def settle(self, budget: int) -> bool:
        """Translate up to ``budget`` rows that name a segment a cleaning cycle rewrote to the segment and offset
        their record has now (``PayloadReader.locate``), so the reader can forget the rewrite (its drop offsets
        would otherwise be kept for the server's life). A pass over every row started after a rewrite settles it;
        True while a pass has rows left (the server calls again on a later loop iteration)."""
        reader = self.reader
        if self._settle is None:
            if reader is None or not reader.has_moves:
                return False
            self._settle = [self.table.ids(), 0, reader.generation]
        ids, pos, gen = self._settle
        end = min(len(ids), pos + budget)
        get, moved, locate = self.table.get_row, reader.moved, reader.locate
        for i in range(pos, end):
            row = get(ids[i])
            if row is not None and moved(row[K_SEG]):
                seg, off = locate(row[K_SEG], row[K_OFF])
                row = list(row)
                row[K_SEG], row[K_OFF] = seg, off
                self._put(ids[i], tuple(row))
        if end < len(ids):
            self._settle[1] = end
            return True
        self._settle = None
        reader.settled(gen)
        return reader.has_moves            # rewrites told during this pass: another pass

    def _name(self, name):
        """The interned queue name as (bytes, str) from either."""
        v = self._names.get(name)
        if v is None:
            if isinstance(name, bytes):
                v = (name, name.decode("ascii"))
            else:
                v = (name.encode("ascii"), name)
            self._names[v[0]] = self._names[v[1]] = v
        return v

    # ---------------------------------------------------------------- timers
    # A timer is (at << 51 | rank << 48 | seq, obj): the order of (at, rank, seq) in one int (seq < 2**48), so an
    # entry is a 2-tuple and one int, and that int is also what the owner keeps to tell its live timer from stale
    # ones (``ttl_seq`` ...; 0: none) — every live job has a TTL timer: this is per-job memory.
    def _push(self, at: int, rank: int, obj) -> int:
        self._seq += 1
        k = (at << _AT_SHIFT) | (rank << _SEQ_BITS) | self._seq
        heapq.heappush(self._heap, (k, obj))
        return k

    def _drop(self) -> None:
        """One heap entry became stale; rebuild the heap when stale entries dominate (memory follows live
        timers, not the history of cancelled ones)."""
        self._stale += 1
        if self._stale > 1024 and self._stale * 2 > len(self._heap):
            self._heap = [e for e in self._heap if self._live(e)]
            heapq.heapify(self._heap)
            self._stale = 0

    def _live(self, e) -> bool:
        k, obj = e
        rank = (k >> _SEQ_BITS) & 7
        if rank == R_TTL:
            return obj.ttl_seq == k
        if rank == R_TTR:
            return obj.ttr_seq == k
        if rank == R_SCHED:
            return obj.sched_seq == k
        return not obj.done and obj.seq == k

    def next_deadline(self) -> int | None:
        """The instant of the earliest live timer. Stale entries on top are dropped first: a lease that waited and
        was then handed a job leaves its wait timer behind, and the loop timer is not armed for it (under 16
        connections sharing queues that was one loop timer firing for nothing per satisfied wait)."""
        heap = self._heap
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)
            if self._stale:
                self._stale -= 1
        return heap[0][0] >> _AT_SHIFT if heap else None

    def advance(self, now: int) -> None:
        """Fire every timer due at ``now`` or earlier, in time order."""
        heap = self._heap
        limit = (now + 1) << _AT_SHIFT
        while heap and heap[0][0] < limit:
            e = heapq.heappop(heap)
            if not self._live(e):
                self._stale = max(0, self._stale - 1)
                continue
            k, obj = e
            rank = (k >> _SEQ_BITS) & 7
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

    def _dequeue(self, job: Entry) -> None:
        if job.where == IN_READY:
            self.queues[job.name].ready.remove(job)
        elif job.where == IN_SCHEDULED:
            self.queues[job.name].scheduled.remove(job)
        job.where = IN_NONE
        job.key = None                      # kept only while the job is in a ready or scheduled list

    def _make_ready(self, job: Entry, now: int) -> None:
        """The job is ready in its queue: hand it to the first waiting lease, or queue it."""
        q = self.queue(job.name)
        waiters = q.waiters
        while waiters:
            w = next(iter(waiters.values()))
            if w.done:
                waiters.popitem(last=False)
                continue
            try:
                got = self._start_attempt(job, now)
            except FormatError as exc:      # its body cannot be read back: it stays ready, the waiter waits on
                if self.on_read_error is not None:
                    self.on_read_error(exc)
                break
            if got is not None:
                job.key = None
                self._finish_lease(w)
                w.cb(wire.job_reply(job.id, job.name, got[0][K_TTR], got[1]))
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

    def _start_attempt(self, job: Entry, now: int):
        """LEASED, attempts+1, TTR timer, start-attempt logged: (row, body); None when the job hits the hard cap
        of 255 attempts instead (it fails, with an empty result, and that is logged as a fail). The body is read
        before anything changes (a read that fails leaves the job as it was)."""
        row = self.runs[job.id] if job.is_run else list(self.table.get_row(job.id))
        if row[K_ATT] >= MAX_HARD_ATTEMPTS and not row[K_MA]:
            self._finish(job, FAILED, b"", now, log=True, row=row)
            return None
        body = self.payload(job, row)
        row[K_STATE] = LEASED
        row[K_ATT] += 1
        if not job.is_run:
            self.table.put(job.id, tuple(row))
        at = now + row[K_TTR] * NS_PER_MS
        if job.is_run:
            job.ttr_at = at
        job.ttr_seq = self._push(at, R_TTR, job)
        self.log(_START_ATTEMPT, job.id, None)
        return row, body

    def _entry(self, job: Job, cls=Entry) -> tuple[Entry, str]:
        name_b, name_s = self._name(job.name)
        return cls(job.id, name_b, job_key(job.priority, job.time_ns, job.created_ns, job.id), self), name_s

    # ---------------------------------------------------------------- commands (validated by the handlers)
    def add(self, job: Job, now: int) -> bytes:
        jid = job.id
        if jid in self.jobs:
            return wire.E_DUP_JOB
        names = self._names.get(job.name) or self._name(job.name)
        sched = job.time_ns
        created = job.created_ns
        exp = (created if sched is None else sched) + job.ttl * NS_PER_MS
        body = job.payload
        e = Entry(jid, names[0], job_key(job.priority, sched, created, jid), self)
        row = (_ADD if sched is None else _SCHEDULE, names[1], job.ttr, job.ttl, job.priority, job.max_attempts,
               job.max_fails, created, sched, exp, len(body), _crc(body), NOWHERE, 0, NEW, 0, None)
        try:
            self.table.put(jid, row)
        except OverflowError:
            self._put(jid, row)
        self.unwritten[jid] = body
        self.jobs[jid] = e
        e.ttl_seq = self._push(exp, R_TTL, e)
        self.log(_ADD if sched is None else _SCHEDULE, jid, job)
        if sched is None:
            self._make_ready(e, now)
        else:
            q = self.queue(e.name)
            q.scheduled.add(e)
            e.where = IN_SCHEDULED
            e.sched_seq = self._push(sched, R_SCHED, e)
        return wire.OK

    def run(self, job: Job, wait_ms: int, now: int, w: Waiter) -> bytes | None:
        jid = job.id
        if jid in self.jobs:
            return wire.E_DUP_JOB
        e, name = self._entry(job, RunEntry)
        body = job.payload
        self.runs[jid] = [_ADD, name, job.ttr, job.ttl, job.priority, job.max_attempts, job.max_fails,
                          job.created_ns, None, job.expiration_ns, len(body), 0, NOWHERE, 0, NEW, 0, None]
        self.unwritten[jid] = body
        self.jobs[jid] = e
        e.run = w
        w.job = e
        self._make_ready(e, now)
        if w.done:                          # impossible: a result needs a lease and a complete first
            return None
        w.seq = self._push(now + wait_ms * NS_PER_MS, R_RUN, w)
        if wait_ms == 0:
            self.advance(now)
        return None

    def lease(self, names: list[bytes], wait_ms: int, now: int, w) -> bytes | None:
        """The first ready job of ``names`` (in order), else -TIMEOUT at ``wait_ms`` 0, else None: it waits on
        ``w`` (a Waiter, or a function that makes one)."""
        for name in names:
            q = self.queue(name)
            while q.ready:
                job = q.ready.pop(0)
                job.where = IN_NONE
                try:
                    got = self._start_attempt(job, now)
                except BaseException:                   # a body that cannot be read leaves the job ready
                    q.ready.add(job)
                    job.where = IN_READY
                    raise
                job.key = None
                if got is not None:
                    return b"".join(wire.job_reply(job.id, job.name, got[0][K_TTR], got[1]))
        if wait_ms == 0:
            return wire.TIMEOUT
        if not isinstance(w, Waiter):       # a function making the waiter: called only now, when the lease waits
            w = w()
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
        row = self.runs[jid] if job.is_run else list(self.table.get_row(jid))      # (self.row, inline)
        if result_refused(row[K_STATE]) or row[K_RES] is not None:     # the engine's rule
            return wire.E_DUP_RESULT
        self._finish(job, COMPLETED if success else FAILED, result, now, log=True, row=row)
        return wire.OK

    def _finish(self, job: Entry, state: int, result: bytes, now: int, *, log: bool = False,
                row: list | None = None) -> None:
        if row is None:
            row = self.row(job)
        row[K_STATE] = state
        row[K_RES] = result
        if not job.is_run:                  # (self._set, inline)
            self._put(job.id, tuple(row))
        if job.ttr_seq:
            job.ttr_seq = 0
            self._drop()
        if job.where != IN_NONE or job.key is not None:     # (a leased job is in no list: nothing to dequeue)
            self._dequeue(job)
        if log:
            self.log(_COMPLETE if state == COMPLETED else _FAIL, job.id, result)
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
        self.log(_DELETE, jid, None)
        return wire.OK

    def _remove(self, job: Entry) -> None:
        jid = job.id
        del self.jobs[jid]
        if job.is_run:
            del self.runs[jid]
        else:
            self.table.delete(jid)
        self.unwritten.pop(jid, None)
        self._dequeue(job)
        for attr in ("ttl_seq", "ttr_seq", "sched_seq"):
            if getattr(job, attr):
                setattr(job, attr, 0)
                self._drop()

    def result(self, jid: bytes, wait_ms: int, now: int, w: Waiter) -> bytes | None:
        job = self.jobs.get(jid)
        if job is None:
            return wire.NOT_FOUND
        row = self.row(job)
        st = row[K_STATE]
        if st == COMPLETED or st == FAILED:
            return b"".join(wire.result_reply(jid, st == COMPLETED, row[K_RES] or b""))
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

    def abandon(self, w: Waiter) -> None:
        """The client behind ``w`` vanished: a lease or a result stops waiting (``cancel``), but a run goes on until
        its deadline, as upstream's (a handler blocked in Controller.Run notices no disconnect: int/job/controller.go
        Run, 425-469, its job removed only by the deferred timeoutRun, 426-431): its job stays leasable, and a worker
        that leased it gets +OK from complete or fail. The reply then goes to nobody."""
        job = w.job
        if not w.done and w.names is None and job is not None and job.run is w:
            w.cb = _nobody
            return
        self.cancel(w)

    # ---------------------------------------------------------------- time-driven events
    def _expire(self, job: Entry) -> None:
        if self.jobs.get(job.id) is not job:
            return
        st = self.row(job)[K_STATE]
        if st != COMPLETED and st != FAILED:
            self.evicted += 1
        self._remove(job)
        self.log(_EXPIRE, job.id, None)

    def _timeout_attempt(self, job: Entry, now: int) -> None:
        if self.jobs.get(job.id) is not job:
            return
        row = self.row(job)
        if row[K_STATE] != LEASED:
            return
        self.log(_TIMEOUT_ATTEMPT, job.id, None)
        if after_timeout(LEASED, row[K_ATT], row[K_MA]) == FAILED:       # the engine's rule
            self._finish(job, FAILED, b"", now, row=row)
        else:
            row[K_STATE] = PENDING
            self._set(job, row)
            job.key = job_key(row[4], row[8], row[7], job.id)
            self._make_ready(job, now)

    def _awake(self, job: Entry, now: int) -> None:
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
        if not w.phase2 and self.jobs.get(job.id) is job and self.runs[job.id][K_STATE] == LEASED:
            w.phase2 = True                   # leased: wait up to the lease's TTR for the result
            w.seq = self._push(job.ttr_at, R_RUN, w)
            return
        w.done = True
        self._end_run(job)
        w.cb([wire.TIMEOUT])

    def _end_run(self, job: Entry) -> None:
        if self.jobs.get(job.id) is job:
            self._remove(job)
            self.log(_EXPIRE, job.id, None)

    # ---------------------------------------------------------------- start-up and checks
    def payload_reader(self):
        """The reader of the job bodies in the log (``PayloadReader``), made on first use when ``restore`` made
        none (an empty log: the first record the server writes)."""
        if self.reader is None:
            from ...engine.workq.payloads import PayloadReader
            self.reader = PayloadReader(None)
        return self.reader

    def restore(self, state: ReplayState, payloads: dict[bytes, bytes] | None, now: int) -> None:
        """Rebuild the live queues from the engine's replayed state (start-up), taking its job table over (the
        kernel's ``CompactJobs.table``; a state of Job objects is turned into a table). Bodies are read back from
        the log the state was replayed from (``payloads``, when given, are held instead: tests).

        The timers are upstream's at a restart at the replay's instant (``state.as_of_ns``, the ``expires`` and
        ``lease_expires`` of ``wqtool replay``): an add-job gets a fresh full TTL — workq 0.2.0's replayAdd
        (int/cmdlog/replay.go:77-88) skips an add whose created + TTL has passed and hands the rest to
        Controller.Add, which starts the TTL timer in full (int/job/controller.go:163); a scheduled job keeps
        time + TTL (replaySchedule, replay.go:90-102, then Schedule's timer to the time, controller.go:491, and
        awake's to Expiration(), controller.go:659); a leased job gets a fresh TTR (replayStartAttempt,
        replay.go:166-178, then StartAttempt's timer, controller.go:637-640). ``now``: the instant the queue
        starts at (a scheduled job whose time has come is ready). Add-jobs are also listed by their logged
        expiry (``outliving``): the cleaner must not drop the add record of one that outlives it."""
        if self.jobs:
            raise ValueError("restore: the queue is not empty")
        from ...engine.workq.payloads import PayloadReader, job_table
        reader = self.reader
        if reader is None:
            reader = self.reader = PayloadReader(getattr(state.jobs, "paths", None))
        table = self.table = job_table(state, reader)
        if payloads:
            self.unwritten.update((k, v) for k, v in payloads.items() if k in table)
        get = table.get_row
        name_of = self._name
        push = self._push
        jobs = self.jobs
        as_of = state.as_of_ns
        outliving = []
        for jid in table.ids():
            (kind, name, ttr, ttl, prio, ma, mf, created, sched, log_exp, plen, pcrc, seg, off, st, att,
             res) = get(jid)
            e = Entry(jid, name_of(name)[0], None, self)
            jobs[jid] = e
            q = self.queue(e.name)
            if kind == _ADD:
                exp = as_of + ttl * NS_PER_MS
                if exp > log_exp:
                    outliving.append((log_exp, e))
            else:
                exp = log_exp
            e.ttl_seq = push(exp, R_TTL, e)
            if st == NEW or st == PENDING:
                e.key = job_key(prio, sched, created, jid)
                if sched is not None and sched > now:
                    q.scheduled.add(e)
                    e.where = IN_SCHEDULED
                    e.sched_seq = push(sched, R_SCHED, e)
                else:
                    q.ready.add(e)
                    e.where = IN_READY
            elif st == LEASED:
                e.ttr_seq = push(as_of + ttr * NS_PER_MS, R_TTR, e)
        outliving.sort(key=_first)
        from array import array
        self._outliving_exp = array("q", [x[0] for x in outliving])
        self._outliving = [x[1] for x in outliving]
        self._outliving_at = 0

    def outliving(self, as_of: int) -> int | None:
        """The logged expiry (created + TTL) of a job restored at start-up that is still live at ``as_of`` past
        it — its fresh TTL (``restore``) keeps it — or None. A cleaning cycle at ``as_of`` would drop its add
        record (the replay at ``as_of`` says it expired) and with it the job's body, so the server skips the
        cycle until no such job is left (upstream's cleaner keeps every record of a job in its registry,
        int/cmdlog/clean.go). Jobs gone since are passed over once."""
        exps, entries = self._outliving_exp, self._outliving
        i = self._outliving_at
        while i < len(exps) and exps[i] <= as_of:
            e = entries[i]
            if self.jobs.get(e.id) is e:
                self._outliving_at = i
                return exps[i]
            entries[i] = None
            i += 1
        self._outliving_at = i
        if i == len(exps) and exps:
            self._outliving_exp, self._outliving, self._outliving_at = (), [], 0
        return None

    def snapshot(self, as_of_ns: int) -> ReplayState:
        """The live jobs as ``wqtool replay --as-of as_of_ns`` describes them (run jobs are never logged, so
        they are left out): its digest equals the replay digest of the log this server wrote. A view over the
        queue's job table (valid until the queue changes)."""
        from ...engine.workq.replay import CompactJobs, ReplayState
        paths = self.reader.paths if self.reader is not None else []
        return ReplayState(as_of_ns, CompactJobs(self.table, paths, as_of_ns))

    def counts(self) -> dict[str, int]:
        labels = ("new", "completed", "failed", "pending", "leased")
        by = list(self.table.counts()[0])
        for row in self.runs.values():
            by[row[K_STATE]] += 1
        return dict(zip(labels, by))


def _first(pair):
    return pair[0]


def _no_log(cmd, jid, extra) -> None:
    return None


def _nobody(reply) -> None:
    return None
