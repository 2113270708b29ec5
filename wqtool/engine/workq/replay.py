"""The workq 0.2.0 job state machine, replayed with an explicit clock (``as_of``).

``WorkqReplay.apply(record)`` does what ``cmdlog.Replay`` + ``job.Controller`` do on startup of a
workq-server started at ``as_of``: skip already expired adds/schedules, validate, refuse impossible
histories (recorded as exit-4 findings; the record is then not applied, so the rest of the log still
replays), ignore records of unknown jobs (warnings). The resulting state is what upstream would rebuild,
including its quirks (add-jobs get a fresh TTL, leased jobs come back leased with a fresh TTR); where that
differs from the log's own history, the job carries both values and a note says so.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from collections.abc import Iterator      # (not typing: serve imports this before its first reply)

from ...formats._common import GoTime, crc32c, format_uuid
from ...formats.workq import (MAX_PAYLOAD_BYTES, MAX_RESULT_BYTES, MAX_TTL_MS, MAX_TTR_MS, MIN_TTL_MS, MIN_TTR_MS,
                             NAME_RE, CmdType)
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .model import Command, Record
from . import rules
from .rules import result_refused       # (there: serve's live queue applies it without importing this module)

NS_PER_MS = 1_000_000
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


class JobState(IntEnum):
    NEW = rules.NEW
    COMPLETED = rules.COMPLETED
    FAILED = rules.FAILED
    PENDING = rules.PENDING
    LEASED = rules.LEASED

    @property
    def label(self) -> str:
        return _STATE_LABELS[self]


_STATE_LABELS = {s: s.name.lower() for s in JobState}


# ---------------------------------------------------------------- the job state machine's rules, once in Python
# WorkqReplay.apply below and the server's live queue (server/workq/queue.py) apply these; the C kernel has them
# once in C (kernel/scan.c), proven equal by tests/engine/workq/test_kernel_c.py. States are JobState values.
_DONE = (JobState.COMPLETED, JobState.FAILED)


def start_refused(state: int, attempts: int, max_attempts: int) -> str | None:
    """Why a start-attempt does not apply to a job in ``state`` (a finding code), or None: it makes the job LEASED
    with one more attempt."""
    if state == JobState.LEASED:
        return "WQ-ALREADY-LEASED"
    if state in _DONE:
        return "WQ-ALREADY-PROCESSED"
    if max_attempts and attempts >= max_attempts:
        return "WQ-MAX-ATTEMPTS"
    return None


def after_timeout(state: int, attempts: int, max_attempts: int) -> JobState | None:
    """The state a timeout-attempt leaves a job in: FAILED (with an empty result) once its attempts reach
    max-attempts, else PENDING; None for a finished job (it stays as it is)."""
    if state in _DONE:
        return None
    if max_attempts and attempts >= max_attempts:
        return JobState.FAILED
    return JobState.PENDING


def lease_expires_at(as_of_ns: int, ttr_ms: int) -> int:
    """When a job leased at the end of the replay times out: upstream restarts its TTR timer at replay, so the
    lease runs TTR from the replay's instant, whenever it was taken. The reference replay, the compact job table
    and the fleet's summaries use this; the C kernel has its own copy (kernel/jobtable.c), proven equal."""
    return as_of_ns + ttr_ms * NS_PER_MS


@dataclass(slots=True)
class Job:
    id: bytes
    kind: CmdType           # ADD or SCHEDULE
    name: str
    ttr: int                # ms, as upstream uses it (uint32-truncated)
    ttl: int                # ms
    priority: int
    max_attempts: int       # uint8-truncated
    max_fails: int
    created_ns: int
    scheduled_ns: int | None  # schedule: the wake-up time
    expires_ns: int         # what upstream would use after a restart at as_of
    log_expires_ns: int     # what the log's history says (created+TTL / time+TTL)
    payload_len: int
    payload_crc: int
    src_path: str
    src_offset: int
    state: JobState = JobState.NEW
    attempts: int = 0
    result: bytes | None = None
    lease_expires_ns: int | None = None  # leased: upstream restarts the TTR timer at replay

    @property
    def uuid(self) -> str:
        return format_uuid(self.id)

    def canonical(self) -> dict:
        """The job's canonical form: the digest and `replay -o json` are made of it."""
        return {
            "id": self.uuid, "kind": self.kind.label, "name": self.name, "state": self.state.label,
            "priority": self.priority, "attempts": self.attempts, "max_attempts": self.max_attempts,
            "max_fails": self.max_fails, "ttr_ms": self.ttr, "ttl_ms": self.ttl,
            "created_ns": self.created_ns, "scheduled_ns": self.scheduled_ns, "expires_ns": self.expires_ns,
            "log_expires_ns": self.log_expires_ns, "lease_expires_ns": self.lease_expires_ns,
            "payload_len": self.payload_len, "payload_crc32c": f"{self.payload_crc:08x}",
            "result": None if self.result is None else self.result.hex(),
        }


def is_v4(job_id: bytes) -> bool:
    return len(job_id) == 16 and job_id[6] >> 4 == 4 and job_id[8] & 0xC0 == 0x80


_UNKNOWN_UPSTREAM = "workq-server ignores it and starts"


# Finding constructors shared with the hot kernel (fastreplay.py), so both paths say exactly the same thing.
def unknown_job_finding(path: str, offset: int, index: int, cmd: CmdType, job_id: bytes) -> Finding:
    return Finding(WARNING, "WQ-UNKNOWN-JOB", f"{cmd.label} of a job that is not live (never added — e.g. a run job — "
                   "or already gone)", path=path, offset=offset, record_index=index, upstream=_UNKNOWN_UPSTREAM,
                   job_id=format_uuid(job_id))


def expired_finding(path: str, offset: int, index: int, cmd: CmdType, log_exp_ns: int, job_id: bytes) -> Finding:
    return Finding(WARNING, "WQ-ADD-EXPIRED", f"{cmd.label} already expired at --as-of (expired "
                   f"{GoTime.from_unix_ns(log_exp_ns).isoformat()}); upstream skips it", path=path, offset=offset,
                   record_index=index, upstream="workq-server skips it silently", job_id=format_uuid(job_id),
                   when=log_exp_ns)


class CompactJobs(Mapping):
    """The live jobs of a kernel replay as a read-only mapping id -> ``Job`` over its compact job table
    (jobtable.py): a ``Job`` is built when one is asked for, never kept; counts, the digest and replay's JSON rows
    come from the table directly (the C table writes them without a Python object per job).

    ``paths``: the log's segment paths (a row keeps the segment's number); ``as_of_ns``: what add-jobs' expiry and
    leased jobs' lease expiry are computed from, as ``WorkqReplay.finish`` does."""

    __slots__ = ("table", "paths", "as_of_ns")

    def __init__(self, table, paths: list[str], as_of_ns: int):
        self.table = table
        self.paths = paths
        self.as_of_ns = as_of_ns

    def __getitem__(self, jid: bytes) -> Job:
        row = self.table.get_row(jid) if isinstance(jid, bytes) and len(jid) == 16 else None
        if row is None:
            raise KeyError(jid)
        return self._job(jid, row)

    def _job(self, jid: bytes, row: tuple) -> Job:
        kind, name, ttr, ttl, prio, ma, mf, created, sched, log_exp, plen, pcrc, seg, off, st, att, res = row
        as_of = self.as_of_ns
        if kind == 1:
            k, exp = CmdType.ADD, as_of + ttl * NS_PER_MS
        else:
            k, exp = CmdType.SCHEDULE, log_exp
        paths = self.paths
        return Job(jid, k, name, ttr, ttl, prio, ma, mf, created, sched, exp, log_exp, plen, pcrc,
                   paths[seg] if seg < len(paths) else "", off, _STATES[st], att, res,
                   as_of + ttr * NS_PER_MS if st == 4 else None)

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.table.ids())

    def __contains__(self, jid) -> bool:
        return isinstance(jid, bytes) and len(jid) == 16 and jid in self.table

    def __repr__(self) -> str:
        return f"<CompactJobs: {len(self)} jobs>"

    def sorted_ids(self) -> list[bytes]:
        return self.table.sorted_ids()

    def iter_sorted(self) -> Iterator[Job]:
        """The jobs in id order, one at a time."""
        get, job = self.table.get_row, self._job
        for k in self.table.sorted_ids():
            yield job(k, get(k))

    def counts(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """(jobs per state label, {queue: jobs per state label} sorted by queue): ``ReplayState``'s two counts."""
        by, per = self.table.counts()
        labels = list(_STATE_LABELS.values())
        return (dict(zip(labels, by)),
                {name: dict(zip(labels, c)) for name, c in sorted(per.items())})

    def digest(self) -> str:
        """``state_digest`` of the state these jobs are (lines written by the C table when it can)."""
        as_of = self.as_of_ns
        c_digest = getattr(self.table, "digest", None)
        if c_digest is not None:
            h = digest_start(as_of)
            try:
                c_digest(h, as_of)
                return h.hexdigest()
            except OverflowError:      # an as-of beyond 128 bits: the Python lines
                pass
        h = digest_start(as_of)
        ids = self.table.sorted_ids()
        for i in range(0, len(ids), _DIGEST_CHUNK):
            chunk = [self[k] for k in ids[i:i + _DIGEST_CHUNK]]
            h.update(_C_DIGEST(chunk) if _C_DIGEST is not None else b"".join(digest_line(j) for j in chunk))
        return h.hexdigest()

    def encoded_rows(self, style: str, row_fn) -> Iterator[str]:
        """replay's rows, encoded (see ``StateView.encoded_rows``): by the C table, else ``row_fn(job)`` through
        json.dumps."""
        rows = getattr(self.table, "encode_rows", None)
        if rows is not None:
            n = len(self.table)
            try:
                first = rows(style, self.as_of_ns, 0, min(n, _ROWS_CHUNK)) if n else ""
            except OverflowError:      # an as-of beyond 128 bits
                rows = None
            else:
                if first:
                    yield first
                for i in range(_ROWS_CHUNK, n, _ROWS_CHUNK):
                    yield rows(style, self.as_of_ns, i, min(n, i + _ROWS_CHUNK))
                return
        yield from _json_rows((row_fn(j) for j in self.iter_sorted()), style)


def _json_rows(rows, style: str) -> Iterator[str]:
    """Rows through json.dumps as ``StateView.encoded_rows`` defines it (engine/format.py)."""
    import json
    if style == "jsonl":
        for row in rows:
            yield json.dumps(row) + "\n"
    else:
        for row in rows:
            yield "    " + json.dumps(row, indent=2).replace("\n", "\n    ")


_ROWS_CHUNK = 2048


@dataclass(slots=True)
class ReplayState:
    as_of_ns: int
    jobs: dict[bytes, Job]      # or CompactJobs (the kernel's state): a Mapping id -> Job either way
    records: int = 0
    applied: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: a finished replay's state, which no record changes any more: its digest is computed once (report shows it
    #: and plans from the same pass state it: 0.4 s each on a 100 MB log); a state that may change keeps None
    sealed_digest: str | None = field(default=None, repr=False, compare=False)

    def job_count(self) -> int:
        """The replayed jobs (a state computed elsewhere, e.g. on Spark, may count jobs it does not hold)."""
        return len(self.jobs)

    def sorted_jobs(self) -> list[Job]:
        return list(self.iter_sorted_jobs())

    def iter_sorted_jobs(self) -> Iterator[Job]:
        """The jobs in id order, built one at a time for a compact state (memory stays flat)."""
        jobs = self.jobs
        if isinstance(jobs, CompactJobs):
            return jobs.iter_sorted()
        return (jobs[k] for k in sorted(jobs))

    def counts_by_state(self) -> dict[str, int]:
        if isinstance(self.jobs, CompactJobs):
            return self.jobs.counts()[0]
        c = Counter(j.state for j in self.jobs.values())
        return {lab: c[s] for s, lab in _STATE_LABELS.items()}

    def queues(self) -> dict[str, dict[str, int]]:
        """Per queue name: jobs per state (only queues that hold a replayed job exist after a restart)."""
        if isinstance(self.jobs, CompactJobs):
            return self.jobs.counts()[1]
        c = Counter((j.name, j.state) for j in self.jobs.values())
        out: dict[str, dict[str, int]] = {}
        for (name, st), n in c.items():
            q = out.get(name)
            if q is None:
                q = out[name] = dict.fromkeys(_STATE_LABELS.values(), 0)
            q[_STATE_LABELS[st]] = n
        return dict(sorted(out.items()))

    def digest(self) -> str:
        if self.sealed_digest == "":
            self.sealed_digest = state_digest(self)
        return self.sealed_digest if self.sealed_digest else state_digest(self)


def digest_start(as_of_ns: int):
    """The digest's sha256 object after its header; feed it ``digest_line(job)`` in job-id order."""
    import hashlib          # the digest only: verify never loads OpenSSL for it
    h = hashlib.sha256()
    h.update(b"wqtool-workq-state-v1\n")
    h.update(f"as_of_ns={as_of_ns}\n".encode())
    return h


def _n(v: int | None) -> str:
    return "null" if v is None else str(v)


def digest_line(j: Job) -> bytes:
    """``json.dumps(j.canonical(), sort_keys=True, separators=(",", ":"))`` + newline, built directly (3x faster)."""
    return _digest_text(j).encode()


def _digest_text(j: Job) -> str:
    """digest_line as str.

    Safe without JSON escaping: every string is a UUID, a hex string, a state/kind label or a queue name that
    replay validated as [A-Za-z0-9_.-]. tests/engine/test_replay.py checks equality with json.dumps.
    """
    res = "null" if j.result is None else f'"{j.result.hex()}"'
    h = j.id.hex()
    return (f'{{"attempts":{j.attempts},"created_ns":{j.created_ns},"expires_ns":{j.expires_ns},'
            f'"id":"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}","kind":"{_KIND_LABELS[j.kind]}",'
            f'"lease_expires_ns":{_n(j.lease_expires_ns)},'
            f'"log_expires_ns":{j.log_expires_ns},"max_attempts":{j.max_attempts},"max_fails":{j.max_fails},'
            f'"name":"{j.name}","payload_crc32c":"{j.payload_crc:08x}","payload_len":{j.payload_len},'
            f'"priority":{j.priority},"result":{res},"scheduled_ns":{_n(j.scheduled_ns)},'
            f'"state":"{_STATE_LABELS[j.state]}","ttl_ms":{j.ttl},"ttr_ms":{j.ttr}}}\n')


_KIND_LABELS = {c: c.label for c in CmdType}
_STATES = list(JobState)


# The optional C kernel's digest_text(jobs) == b"".join(digest_line(j) for j in jobs) (_kernel.c; off with
# WQTOOL_PURE_PYTHON=1, like fastreplay's scan; tests/engine/test_digest_c.py compares both).
try:
    from . import _kernel
except ImportError:  # pragma: no cover - the extension is optional
    _kernel = None
_C_DIGEST = (None if _kernel is None or os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0")
             else getattr(_kernel, "digest_text", None))
_DIGEST_CHUNK = 8192


def state_digest(state: ReplayState) -> str:
    """sha256 over one canonical JSON line per job, sorted by job id (as_of is part of the state)."""
    jobs = state.jobs
    if isinstance(jobs, CompactJobs) and jobs.as_of_ns == state.as_of_ns:
        return jobs.digest()
    h = digest_start(state.as_of_ns)
    c_digest = _C_DIGEST
    if c_digest is not None:
        ordered = [jobs[k] for k in sorted(jobs)]
        for i in range(0, len(ordered), _DIGEST_CHUNK):
            h.update(c_digest(ordered[i:i + _DIGEST_CHUNK]))
    else:
        for k in sorted(jobs):
            h.update(digest_line(jobs[k]))
    return h.hexdigest()


class WorkqReplay:
    """Applies records in log order. Findings go to ``self.findings`` (capped per code by the caller)."""

    def __init__(self, as_of_ns: int):
        self.as_of_ns = as_of_ns
        self.jobs: dict[bytes, Job] = {}
        self.findings: list[Finding] = []
        self.records = 0
        self.applied = 0
        self.ttl_resets = 0
        self.leases_restored = 0

    # ---------------------------------------------------------------- helpers
    def _err(self, rec: Record, code: str, msg: str, upstream: str, job: bytes | None = None) -> None:
        self.findings.append(Finding(ERROR, code, msg, path=rec.path, offset=rec.offset, record_index=rec.index,
                                     last_good_offset=rec.offset, upstream="workq-server would refuse to start: "
                                     + upstream, verdict=Verdict.INVALID_HISTORY,
                                     job_id=format_uuid(job) if job else None))

    def _warn(self, rec: Record, code: str, msg: str, job: bytes | None, upstream: str | None = None) -> None:
        self.findings.append(Finding(WARNING, code, msg, path=rec.path, offset=rec.offset, record_index=rec.index,
                                     upstream=upstream, job_id=format_uuid(job) if job else None))

    # ---------------------------------------------------------------- records
    def apply(self, rec: Record) -> None:
        self.records += 1
        c = rec.command
        if c is None:
            self._payload_error(rec)
            return
        cmd = c.cmd
        if cmd is CmdType.ADD or cmd is CmdType.SCHEDULE:
            self._add(rec, c)
            return
        job = self.jobs.get(c.job_id)
        if cmd is CmdType.START_ATTEMPT:
            if job is None:
                self._unknown(rec, c)
                return
            why = start_refused(job.state, job.attempts, job.max_attempts)
            if why == "WQ-ALREADY-LEASED":
                self._err(rec, why, "start-attempt on a job that is already leased "
                          "(two start-attempts without a timeout-attempt between)", "Replay error, Job already leased",
                          c.job_id)
            elif why == "WQ-ALREADY-PROCESSED":
                self._err(rec, why, f"start-attempt on a {job.state.label} job",
                          "Replay error, Job already processed", c.job_id)
            elif why is not None:
                self._err(rec, why, f"start-attempt number {job.attempts + 1} beyond max-attempts "
                          f"{job.max_attempts}", "Replay error, Max attempts reached", c.job_id)
            else:
                job.state = JobState.LEASED
                job.attempts += 1
                self.applied += 1
            return
        if cmd is CmdType.COMPLETE or cmd is CmdType.FAIL:
            if not is_v4(c.job_id):
                self._err(rec, "WQ-INVALID-ID", f"{cmd.label} of a job id that is not a v4 UUID",
                          "Replay error, Invalid ID", c.job_id)
            elif job is None:
                self._unknown(rec, c)
            elif result_refused(job.state):
                self._err(rec, "WQ-DUPLICATE-RESULT", f"{cmd.label} of a job that is already {job.state.label}",
                          "Replay error, Duplicate result", c.job_id)
            elif len(c.result) > MAX_RESULT_BYTES:
                self._err(rec, "WQ-INVALID-RESULT", f"result of {len(c.result)} bytes (max {MAX_RESULT_BYTES})",
                          "Replay error, Invalid Result", c.job_id)
            else:
                job.state = JobState.COMPLETED if cmd is CmdType.COMPLETE else JobState.FAILED
                job.result = c.result
                self.applied += 1
            return
        if cmd is CmdType.DELETE or cmd is CmdType.EXPIRE:
            if job is None:
                self._unknown(rec, c)
            else:
                del self.jobs[c.job_id]
                self.applied += 1
            return
        # TIMEOUT_ATTEMPT
        if job is None:
            self._unknown(rec, c)
            return
        self.applied += 1
        st = after_timeout(job.state, job.attempts, job.max_attempts)
        if st is JobState.FAILED:
            job.state = st
            job.result = b""
        elif st is not None:
            job.state = st

    def _unknown(self, rec: Record, c: Command) -> None:
        self.findings.append(unknown_job_finding(rec.path, rec.offset, rec.index, c.cmd, c.job_id))

    def _payload_error(self, rec: Record) -> None:
        from ...errors import UnknownOpcode
        exc = rec.payload_error
        field_ = getattr(exc, "field", None)
        if isinstance(exc, UnknownOpcode):
            code = "WQ-UNKNOWN-CMD"
            up = ("unable to recognize cmd from record" if rec.size == 1 else "Replay error, trailing garbage detected")
        elif rec.size == 0:
            code, up = "WQ-PAYLOAD-EMPTY", "Replay error, EOF"
        elif field_ == "trailing":
            code, up = "WQ-PAYLOAD-TRAILING", "Replay error, trailing garbage detected"
        elif "ends inside" in str(exc.message):
            code, up = "WQ-PAYLOAD-SHORT", "Replay error, unexpected EOF"
        else:
            code, up = "WQ-PAYLOAD-BAD", "Replay error, " + exc.message
        self._err(rec, code, f"payload: {exc.message} ({rec.size} bytes)", up)

    def _add(self, rec: Record, c: Command) -> None:
        cmd = c.cmd
        created_ns = c.created.unix_ns
        if cmd is CmdType.ADD:
            log_exp = created_ns + c.ttl * NS_PER_MS
            sched = None
        else:
            sched = c.time.unix_ns
            log_exp = sched + c.ttl * NS_PER_MS
        if log_exp <= self.as_of_ns:
            self.findings.append(expired_finding(rec.path, rec.offset, rec.index, cmd, log_exp, c.job_id))
            return
        # validation, in upstream's order
        name = c.name
        if not is_v4(c.job_id):
            return self._err(rec, "WQ-INVALID-ID", f"{cmd.label} of a job id that is not a v4 UUID",
                             "Replay error, Invalid ID", c.job_id)
        if not NAME_RE.match(name):
            return self._err(rec, "WQ-INVALID-NAME", f"queue name {name[:40]!r} is not [A-Za-z0-9_.-]{{1,255}}",
                             "Replay error, Invalid Name", c.job_id)
        ttr = c.ttr & 0xFFFFFFFF
        if ttr != c.ttr:
            self._warn(rec, "WQ-FIELD-TRUNCATED", f"TTR {c.ttr} is truncated to uint32 ({ttr}) by upstream",
                       c.job_id)
        if not MIN_TTR_MS <= ttr <= MAX_TTR_MS:
            return self._err(rec, "WQ-INVALID-TTR", f"TTR {ttr} ms outside {MIN_TTR_MS}..{MAX_TTR_MS}",
                             "Replay error, Invalid TTR", c.job_id)
        if not MIN_TTL_MS <= c.ttl <= MAX_TTL_MS:
            return self._err(rec, "WQ-INVALID-TTL", f"TTL {c.ttl} ms outside {MIN_TTL_MS}..{MAX_TTL_MS}",
                             "Replay error, Invalid TTL", c.job_id)
        if len(c.payload) > MAX_PAYLOAD_BYTES:
            return self._err(rec, "WQ-INVALID-PAYLOAD", f"payload of {len(c.payload)} bytes (max {MAX_PAYLOAD_BYTES})",
                             "Replay error, Invalid Payload", c.job_id)
        if not INT32_MIN <= c.priority <= INT32_MAX:
            return self._err(rec, "WQ-INVALID-PRIORITY", f"priority {c.priority} outside int32",
                             "Replay error, Invalid Priority", c.job_id)
        max_attempts = c.max_attempts & 0xFF
        if max_attempts != c.max_attempts:
            self._warn(rec, "WQ-FIELD-TRUNCATED", f"max-attempts {c.max_attempts} is truncated to uint8 "
                       f"({max_attempts}) by upstream", c.job_id)
        if c.job_id in self.jobs:
            return self._err(rec, "WQ-DUPLICATE-JOB", f"{cmd.label} of a job that is already live",
                             "Replay error, Duplicate job", c.job_id)
        if cmd is CmdType.ADD:
            exp = self.as_of_ns + c.ttl * NS_PER_MS  # upstream: NewTimer(TTL) at replay
            self.ttl_resets += 1
        else:
            exp = log_exp
        self.jobs[c.job_id] = Job(c.job_id, cmd, name.decode("ascii"), ttr, c.ttl, c.priority, max_attempts,
                                  c.max_fails & 0xFF, created_ns, sched, exp, log_exp, len(c.payload),
                                  crc32c(c.payload), rec.path, rec.offset)
        self.applied += 1

    # ---------------------------------------------------------------- result
    def finish(self) -> ReplayState:
        leased = 0
        for j in self.jobs.values():
            if j.state is JobState.LEASED:
                j.lease_expires_ns = lease_expires_at(self.as_of_ns, j.ttr)
                leased += 1
        resets = sum(1 for j in self.jobs.values() if j.kind is CmdType.ADD)
        self.findings.extend(closing_notes(resets, leased))
        return ReplayState(self.as_of_ns, self.jobs, self.records, self.applied, self.findings)


def closing_notes(resets: int, leased: int) -> list[Finding]:
    """The notes on upstream's restart quirks, from the live add-jobs and leased jobs at the end."""
    out = []
    if resets:
        out.append(Finding(NOTE, "WQ-TTL-RESET", f"{resets} add-job(s) would get a fresh TTL at a restart at "
                           "--as-of: upstream expires them at as-of+TTL, not created+TTL (see expires vs log_expires)",
                           upstream="workq-server restarts TTL timers"))
    if leased:
        out.append(Finding(NOTE, "WQ-LEASE-RESTORED", f"{leased} job(s) come back leased; upstream restarts their "
                           "TTR, logging timeout-attempt at as-of+TTR", upstream="workq-server keeps the lease"))
    return out
