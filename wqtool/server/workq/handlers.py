"""One handler per command: upstream's validation order (int/handlers/*.go, job.Validate*), then the live queue.

The order of the checks decides which error a request with several faults gets, so it is upstream's: first the
handler's parsing (ID syntax, TTR/TTL/time syntax, flags in the order max-attempts, max-fails, priority), then
the controller's validation (v4 ID, name, TTR and TTL ranges, expiration in the future), then the registry
(duplicate job, not found, duplicate result).
"""
from __future__ import annotations

from ...formats._common import format_uuid
from ...formats.workq import MAX_TTL_MS, MAX_TTR_MS
from . import wire
from .queue import _AT_SHIFT, NS_PER_MS, Job, LiveQueue

MUTATING = frozenset((b"add", b"run", b"schedule", b"lease", b"complete", b"fail", b"delete"))


class Handlers:
    """Executes parsed requests against a LiveQueue. ``stats()`` gives ``inspect server``'s numbers."""

    def __init__(self, queue: LiveQueue, stats):
        self.q = queue
        self.stats = stats      # () -> (active_clients, started_unix_ns)
        self.read_only = False  # the circuit breaker (an append failed): mutating commands are refused
        #: command name -> its handler (the names wire.parse_line accepts)
        self.dispatch = {name: getattr(self, "_" + name.decode()) for name in wire.COMMANDS}

    def execute(self, req: wire.Request, body: bytes | None, now: int, make_waiter) -> bytes | list | None:
        """The reply (bytes or a list of chunks), or None when the command blocks on a waiter from
        ``make_waiter()`` (its callback then carries the reply, possibly before this returns)."""
        name = req.name
        if self.read_only and name in MUTATING:
            return wire.E_READ_ONLY
        heap = self.q._heap
        if heap and heap[0][0] < (now + 1) << _AT_SHIFT:      # a timer is due (LiveQueue.advance's own test)
            self.q.advance(now)
        return self.dispatch[name](req, body, now, make_waiter)

    # ---------------------------------------------------------------- add / schedule / run
    def _add(self, req, body, now, make_waiter, schedule: bool = False):
        """add (and, with ``schedule``, schedule): the handler's parsing, then the controller's validation — one
        frame for the whole of it (this runs for a third of the requests of a worker's add -> lease -> complete)."""
        a, flags = req.args, req.flags
        if len(flags) > 3:
            return wire.E_ARGS
        jid = wire.parse_uuid(a[0])
        if jid is None:
            return wire.E_ID
        ttr = wire.parse_uint(a[2], 32)
        if ttr is None:
            return wire.E_TTR
        ttl = wire.parse_uint(a[3], 64)
        if ttl is None:
            return wire.E_TTL
        t = None
        if schedule:
            t = wire.parse_go_time(a[4])
            if t is None or t == wire.GO_ZERO_UNIX_NS:
                return wire.E_TIME
        ma = mf = prio = 0
        if flags:
            v = flags.get(b"max-attempts")
            if v is not None:
                ma = wire.parse_uint(v, 8)
                if ma is None:
                    return wire.E_MAX_ATTEMPTS
            v = flags.get(b"max-fails")
            if v is not None:
                mf = wire.parse_uint(v, 8)
                if mf is None:
                    return wire.E_MAX_FAILS
            v = flags.get(b"priority")
            if v is not None:
                prio = wire.parse_int(v, 32)
                if prio is None:
                    return wire.E_PRIORITY
        if not wire.is_v4(jid):
            return wire.E_ID
        name = a[1]
        if not wire.valid_name(name):
            return wire.E_NAME
        if ttr == 0 or ttr > MAX_TTR_MS:
            return wire.E_TTR
        if ttl == 0 or ttl > MAX_TTL_MS:
            return wire.E_TTL
        if now > (now if t is None else t) + ttl * NS_PER_MS:
            return wire.E_TIME
        return self.q.add(Job(jid, name, ttr, ttl, prio, ma, mf, body, t, now), now)

    def _schedule(self, req, body, now, make_waiter):
        return self._add(req, body, now, make_waiter, True)

    def _run(self, req, body, now, make_waiter):
        a = req.args
        if len(req.flags) > 1:
            return wire.E_ARGS
        jid = wire.parse_uuid(a[0])
        if jid is None:
            return wire.E_ID
        ttr = wire.parse_uint(a[2], 32)
        if ttr is None:
            return wire.E_TTR
        prio = 0
        v = req.flags.get(b"priority")
        if v is not None:
            prio = wire.parse_int(v, 32)
            if prio is None:
                return wire.E_PRIORITY
        wait = wire.parse_uint(a[3], 32)
        if wait is None or wait > wire.MAX_WAIT_MS:
            return wire.E_WAIT
        if not wire.is_v4(jid):
            return wire.E_ID
        if not wire.valid_name(a[1]):
            return wire.E_NAME
        if ttr == 0 or ttr > MAX_TTR_MS:
            return wire.E_TTR
        job = Job(jid, a[1], ttr, 0, prio, 0, 0, body, None, now, is_run=True)
        return self.q.run(job, wait, now, make_waiter())

    # ---------------------------------------------------------------- lease / complete / fail / delete / result
    def _fail(self, req, body, now, make_waiter):
        return self._complete(req, body, now, make_waiter, False)

    def _lease(self, req, body, now, make_waiter):
        if req.flags:
            return wire.E_ARGS
        a = req.args
        wait = wire.parse_uint(a[-1], 32)
        if wait is None or wait > wire.MAX_WAIT_MS:
            return wire.E_WAIT
        names = a[:-1]
        for n in names:            # queues are created in order until an invalid name, as upstream
            if not wire.valid_name(n):
                return wire.E_NAME
            self.q.queue(n)
        return self.q.lease(names, wait, now, make_waiter)      # (a waiter is made only if it waits)

    def _complete(self, req, body, now, make_waiter, success: bool = True):
        """complete (and, with ``success`` false, fail)."""
        if req.flags:
            return wire.E_ARGS
        jid = wire.parse_uuid(req.args[0])
        if jid is None or not wire.is_v4(jid):
            return wire.E_ID
        return self.q.finish(jid, success, body, now)

    def _delete(self, req, body, now, make_waiter):
        if req.flags:
            return wire.E_ARGS
        jid = wire.parse_uuid(req.args[0])
        if jid is None:
            return wire.E_ID
        if not wire.is_v4(jid):
            return wire.OK          # upstream swallows the validation error: +OK, nothing deleted or logged
        return self.q.delete(jid)

    def _result(self, req, body, now, make_waiter):
        if req.flags:
            return wire.E_ARGS
        jid = wire.parse_uuid(req.args[0])
        if jid is None or not wire.is_v4(jid):
            return wire.E_ID
        wait = wire.parse_uint(req.args[1], 32)
        if wait is None or wait > wire.MAX_WAIT_MS:
            return wire.E_WAIT
        return self.q.result(jid, wait, now, make_waiter())

    # ---------------------------------------------------------------- inspect
    def _inspect(self, req, body, now, make_waiter):
        a = req.args
        obj = a[0]
        if obj == b"server":
            if len(a) != 1 or req.flags:
                return wire.E_ARGS
            active, started = self.stats()
            return b"+OK 1\r\nserver 2\r\nactive-clients %d\r\nevicted-jobs %d\r\nstarted %s\r\n" % (
                active, self.q.evicted, wire.timestamp(started))
        if obj == b"queues":
            if len(a) != 3 or req.flags:
                return wire.E_ARGS
            offset = wire.parse_uint(a[1], 32)
            if offset is None:
                return wire.E_OFFSET
            limit = _limit(a[2])
            if limit is None:
                return wire.E_LIMIT
            names = sorted(self.q.queues)
            page = names[offset:offset + limit]
            out = [b"+OK %d\r\n" % len(page)]
            for n in page:
                out.append(_queue_block(n, self.q.queues[n]))
            return b"".join(out)
        if obj == b"queue":
            if len(a) != 2 or req.flags:
                return wire.E_ARGS
            if not wire.valid_name(a[1]):
                return wire.E_NAME
            q = self.q.queues.get(a[1])
            if q is None:
                return wire.NOT_FOUND
            return b"+OK 1\r\n" + _queue_block(a[1], q)
        if obj == b"jobs" or obj == b"scheduled-jobs":
            if len(a) != 4 or req.flags:
                return wire.E_ARGS
            if not wire.valid_name(a[1]):
                return wire.E_NAME
            offset = wire.parse_uint(a[2], 32)
            if offset is None:
                return wire.E_OFFSET
            limit = _limit(a[3])
            if limit is None:
                return wire.E_LIMIT
            q = self.q.queues.get(a[1])
            if q is None:
                return wire.NOT_FOUND
            lst = q.ready if obj == b"jobs" else q.scheduled
            page = list(lst.islice(offset, offset + limit)) if offset < len(lst) else []
            out = [b"+OK %d\r\n" % len(page)]
            for job in page:
                out.extend(job_block(job))
            return out
        if obj == b"job":
            if len(a) != 2 or req.flags:
                return wire.E_ARGS
            jid = wire.parse_uuid(a[1])
            if jid is None:
                return wire.E_ID
            job = self.q.jobs.get(jid)
            if job is None:
                return wire.NOT_FOUND
            return [b"+OK 1\r\n", *job_block(job)]
        return wire.E_UNKNOWN


def _limit(tok: bytes) -> int | None:
    v = wire.parse_uint(tok, 16)
    return v if v is not None and 1 <= v <= wire.MAX_LIMIT else None


def _queue_block(name: bytes, q) -> bytes:
    return b"%s 2\r\nready-len %d\r\nscheduled-len %d\r\n" % (name, len(q.ready), len(q.scheduled))


def job_block(job: Job) -> list[bytes]:
    """The 12-key (13 for scheduled jobs) block of ``inspect job`` / ``inspect jobs``; the payload raw."""
    head = (b"%s %d\r\nname %s\r\nttr %d\r\nttl %d\r\npayload-size %d\r\npayload " % (
        format_uuid(job.id).encode(), 13 if job.time_ns is not None else 12, job.name, job.ttr, job.ttl,
        len(job.payload)))
    tail = (b"\r\nmax-attempts %d\r\nattempts %d\r\nmax-fails %d\r\nfails 0\r\npriority %d\r\nstate %d\r\n"
            b"created %s\r\n" % (job.max_attempts, job.attempts, job.max_fails, job.priority, job.state,
                                 wire.timestamp(job.created_ns)))
    if job.time_ns is not None:
        tail += b"time %s\r\n" % wire.timestamp(job.time_ns)
    return [head, job.payload, tail]

