"""The hot kernel of verify/replay for intact logs, proven equal to the reference path.

The reference path is ``RecordReader`` + ``WorkqReplay`` (reader.py, replay.py): readable, complete, and
the specification. This kernel runs the same framing, CRC-32C and job state machine in one tight loop over
each segment with a compact per-job state (one int), and only for what an intact log contains: clean
records, records of jobs that are not live (WQ-UNKNOWN-JOB) and adds already expired at as-of
(WQ-ADD-EXPIRED). Anything else — damage, an undecodable payload, an impossible history, an unusual field —
raises ``Bail``, and the caller runs the reference path over the whole log, which reports it precisely.
``tests/engine/test_fastreplay.py`` checks with hypothesis that both paths give the same findings, exit
code, counts and state digest on random valid, invalid and damaged logs.

With ``nparts > 1`` each process handles the jobs whose id's last byte falls in its partition (a job's
state depends only on its own records, in log order): every process frames every record, but checks CRCs
and replays only its own share; findings merge back into file order.

The loop (``FastReplay._scan``) has two implementations doing exactly the same thing: ``_scan_py`` below and
the optional C extension ``_kernel.scan`` (_kernel.c, built by setup.py where a compiler exists).
``_scan`` uses the C one when it is importable, unless ``WQTOOL_PURE_PYTHON=1``; ``KERNEL`` says which
("c" or "python"). tests/engine/test_kernel_c.py compares the two directly, on random and hostile bytes.
"""
from __future__ import annotations

import gc
import os
import struct
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

from google_crc32c import value as _crc

from ...formats.workq import (RECORD_CRC_STRUCT, MAX_PAYLOAD_BYTES, MAX_RESULT_BYTES, MAX_TTL_MS, MAX_TTR_MS, NAME_RE, SIZE_CAP,
                             CmdType)
from ...formats._common import GO_TIME_STRUCT, UNIX_TO_INTERNAL
from ..findings import Finding
from .reader import LogSet, FileView, header_finding
from .replay import (Job, JobState, ReplayState, closing_notes, expired_finding,
                     unknown_job_finding)

_U32 = RECORD_CRC_STRUCT.unpack_from
_TIME = GO_TIME_STRUCT.unpack_from
_CMDS = {int(c): c for c in CmdType}
_NAME_MATCH = NAME_RE.match
_NS = 1_000_000_000
_UNIX_NS = UNIX_TO_INTERNAL * _NS
# packed job state: bits 0-2 state, bit 3 kind (0 add, 1 schedule), bits 4-11 max_attempts, 12+ attempts
_ST_MASK = 7
_NOT_ST = ~7
_ATTEMPT = 1 << 12
_STATES = list(JobState)


class CappedFindings(list):
    """The kernel's findings: the first ``limit`` (seg_no, Finding) pairs, and only a count (by code and
    severity) of the rest — an old log can hold a warning per record (expired adds, records of gone jobs), and
    memory must follow the live state, not the file. The C loop appends through this ``append`` too."""

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit
        self.overflow: Counter = Counter()

    def append(self, item) -> None:
        if self.limit is None or len(self) < self.limit:
            list.append(self, item)
        else:
            f = item[1]
            self.overflow[(f.code, f.severity)] += 1

    def full(self) -> bool:
        return self.limit is not None and len(self) >= self.limit

    def over(self, code: str) -> None:
        """Count a warning the kernel did not build (it is over the cap)."""
        self.overflow[(code, "warning")] += 1


class Bail(Exception):
    """The kernel met something only the reference path reports precisely."""


try:
    from . import _kernel
except ImportError:          # not built (no compiler at install time): the Python loop does the work
    _kernel = None
_C_SCAN = None if _kernel is None or os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0") else _kernel.scan
KERNEL = "c" if _C_SCAN is not None else "python"


def _uvarint(data, p: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for i in range(10):
        if p >= end:
            raise Bail
        c = data[p]
        p += 1
        if c < 0x80:
            if i == 9 and c > 1:
                raise Bail
            return result | (c << shift), p
        result |= (c & 0x7F) << shift
        shift += 7
    raise Bail


class FastReplay:
    """One pass of the kernel over one log (or one partition of its jobs)."""

    def __init__(self, log: LogSet, as_of_ns: int, *, part: int = 0, nparts: int = 1, keep: bool = False,
                 limit: int | None = None):
        self.log = log
        self.as_of_ns = as_of_ns
        self.part = part
        self.nparts = nparts
        self.keep = keep            # keep what replay needs to rebuild Job objects (results, add locations)
        self.jobs: dict[bytes, int] = {}
        self.results: dict[bytes, bytes] = {}
        self.locs: dict[bytes, tuple[int, int]] = {}
        self.findings = CappedFindings(limit)
        self.records = 0
        self.applied = 0
        self.bytes = 0
        self.segments = 0

    def run(self) -> None:
        """Raises Bail when the log needs the reference path."""
        index = 0
        newest = self.log.newest
        for seg_no, seg in enumerate(self.log.segments):
            with FileView(seg) as sd:
                self.segments += 1
                self.bytes += sd.size
                f, scan = header_finding(sd, index, seg is newest)
                if f is not None:
                    if f.severity == "error":
                        raise Bail
                    if self.part == 0:
                        self.findings.append((seg_no, f))
                if scan:
                    try:
                        index = self._scan(sd.data, sd.size, sd.path, index, seg_no)
                    except (IndexError, struct.error):
                        raise Bail from None
        self.records = index

    def _scan(self, data, end: int, path: str, index: int, seg_no: int) -> int:
        """Frame, check and replay the records of ``data[8:end]``; returns the next record index."""
        scan = _C_SCAN
        if scan is not None and end <= len(data):
            return scan(self, data, end, path, index, seg_no)
        return self._scan_py(data, end, path, index, seg_no)

    def _scan_py(self, data, end: int, path: str, index: int, seg_no: int) -> int:  # noqa: C901 — the hot loop
        jobs = self.jobs
        jobs_get = jobs.get
        results = self.results
        locs = self.locs
        keep = self.keep
        out = self.findings.append
        full = self.findings.full
        over = self.findings.over
        as_of = self.as_of_ns
        part, nparts = self.part, self.nparts
        crc, u32, tunp, uvar = _crc, _U32, _TIME, _uvarint
        applied = 0
        pos = 8
        while pos < end:
            if end - pos < 20 or data[pos] != 1:
                raise Bail
            s = data[pos + 15]
            if s < 0x80:
                q = pos + 16
            else:
                s, q = uvar(data, pos + 15, pos + 19)
                if s > SIZE_CAP:
                    raise Bail
            pend = q + s
            nxt = pend + 4
            if nxt > end or s < 17:
                raise Bail
            if nparts > 1 and data[q + 16] % nparts != part:
                index += 1
                pos = nxt
                continue
            if crc(data[pos:pend]) != u32(data, pend)[0] or data[pos + 13] != 255 or data[pos + 14] != 255:
                raise Bail
            c = data[q]
            if c >= 5:
                if c > 8 or s != 17:
                    raise Bail
                jid = data[q + 1:q + 17]
                v = jobs_get(jid)
                if v is None:
                    if full():
                        over("WQ-UNKNOWN-JOB")
                    else:
                        out((seg_no, unknown_job_finding(path, pos, index, _CMDS[c], jid)))
                elif c <= 6:                      # delete, expire
                    del jobs[jid]
                    applied += 1
                elif c == 7:                      # start-attempt
                    st = v & _ST_MASK
                    if st == 4 or st == 1 or st == 2:
                        raise Bail
                    ma = (v >> 4) & 255
                    if ma and (v >> 12) >= ma:
                        raise Bail
                    jobs[jid] = ((v & _NOT_ST) | 4) + _ATTEMPT
                    applied += 1
                else:                             # timeout-attempt
                    applied += 1
                    st = v & _ST_MASK
                    if st != 1 and st != 2:
                        ma = (v >> 4) & 255
                        if ma and (v >> 12) >= ma:
                            jobs[jid] = (v & _NOT_ST) | 2
                            if keep:
                                results[jid] = b""
                        else:
                            jobs[jid] = (v & _NOT_ST) | 3
            elif c >= 3:                          # complete, fail
                r = data[q + 17]
                if r < 0x80:
                    rs = q + 18
                else:
                    r, rs = uvar(data, q + 17, pend)
                if rs + r != pend or r > MAX_RESULT_BYTES:
                    raise Bail
                jid = data[q + 1:q + 17]
                if jid[6] >> 4 != 4 or jid[8] & 0xC0 != 0x80:
                    raise Bail
                v = jobs_get(jid)
                if v is None:
                    if full():
                        over("WQ-UNKNOWN-JOB")
                    else:
                        out((seg_no, unknown_job_finding(path, pos, index, _CMDS[c], jid)))
                else:
                    st = v & _ST_MASK
                    if st == 1 or st == 2:
                        raise Bail
                    jobs[jid] = (v & _NOT_ST) | (1 if c == 3 else 2)
                    if keep:
                        results[jid] = bytes(data[rs:pend])
                    applied += 1
            elif c >= 1:                          # add, schedule
                p = q + 17
                n = data[p]
                p += 1
                if n >= 0x80:
                    n &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        n |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                name = data[p:p + n]
                p += n
                ttr = data[p]
                p += 1
                if ttr >= 0x80:
                    ttr &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        ttr |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                ttl = data[p]
                p += 1
                if ttl >= 0x80:
                    ttl &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        ttl |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                zz = data[p]
                p += 1
                if zz >= 0x80:
                    zz &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        zz |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                ma = data[p]
                p += 1
                if ma >= 0x80:
                    ma &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        ma |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                mf = data[p]
                p += 1
                if mf >= 0x80:
                    mf &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        mf |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                plen = data[p]
                p += 1
                if plen >= 0x80:
                    plen &= 0x7F
                    sh = 7
                    while True:
                        b = data[p]
                        p += 1
                        plen |= (b & 0x7F) << sh
                        if b < 0x80:
                            break
                        sh += 7
                        if sh > 56:
                            raise Bail
                p += plen
                if p + 30 != pend:
                    raise Bail
                tver, tsec, tnsec, tzone = tunp(data, p)
                cver, csec, cnsec, czone = tunp(data, p + 15)
                if tver != 1 or cver != 1:
                    raise Bail
                if c == 1:
                    log_exp = csec * _NS - _UNIX_NS + cnsec + ttl * 1_000_000
                else:
                    log_exp = tsec * _NS - _UNIX_NS + tnsec + ttl * 1_000_000
                jid = data[q + 1:q + 17]
                if log_exp <= as_of:
                    if full():
                        over("WQ-ADD-EXPIRED")
                    else:
                        out((seg_no, expired_finding(path, pos, index, _CMDS[c], log_exp, jid)))
                else:
                    prio = (zz >> 1) ^ -(zz & 1)
                    if (jid[6] >> 4 != 4 or jid[8] & 0xC0 != 0x80 or not _NAME_MATCH(name)
                            or not 1 <= ttr <= MAX_TTR_MS or not 1 <= ttl <= MAX_TTL_MS or plen > MAX_PAYLOAD_BYTES
                            or not -2147483648 <= prio <= 2147483647 or ma > 255 or jid in jobs):
                        raise Bail
                    jobs[jid] = ((c - 1) << 3) | (ma << 4)
                    if keep:
                        if jid in results:       # an earlier job with this id had a result; the new one has none
                            del results[jid]
                        pl0 = pend - 30 - plen
                        locs[jid] = (path, pos, name, ttr, ttl, prio, ma, mf, plen, crc(data[pl0:pl0 + plen]),
                                     csec * _NS - _UNIX_NS + cnsec,
                                     None if c == 1 else tsec * _NS - _UNIX_NS + tnsec, log_exp)
                    applied += 1
            else:
                raise Bail
            index += 1
            pos = nxt
        self.applied += applied
        return index


def finish_state(log: LogSet, fr: FastReplay, findings: list[Finding]) -> ReplayState:
    """Build the reference Job objects of the live jobs from what the kernel kept, and close as
    ``WorkqReplay.finish`` does (lease expiry at as-of + TTR, the closing notes)."""
    with gc_paused():          # also for callers outside fast_run (the Spark executors)
        return _finish_state(fr, findings)


def _finish_state(fr: FastReplay, findings: list[Finding]) -> ReplayState:
    as_of = fr.as_of_ns
    jobs: dict[bytes, Job] = {}
    results_get = fr.results.get
    locs = fr.locs
    names: dict[bytes, str] = {}
    leased = resets = 0
    add, schedule, leased_state, states = CmdType.ADD, CmdType.SCHEDULE, JobState.LEASED, _STATES
    for jid, v in fr.jobs.items():
        path, off, name, ttr, ttl, prio, ma, mf, plen, pcrc, created_ns, sched, log_exp = locs[jid]
        nm = names.get(name)
        if nm is None:
            nm = names[name] = name.decode("ascii")
        if sched is None:
            kind, exp = add, as_of + ttl * 1_000_000
            resets += 1
        else:
            kind, exp = schedule, log_exp
        st = states[v & _ST_MASK]
        lease = None
        if st is leased_state:
            lease = as_of + ttr * 1_000_000
            leased += 1
        jobs[jid] = Job(jid, kind, nm, ttr, ttl, prio, ma, mf & 0xFF, created_ns, sched, exp, log_exp, plen, pcrc,
                        path, off, st, v >> 12, results_get(jid), lease)
    findings.extend(closing_notes(resets, leased))
    return ReplayState(as_of, jobs, fr.records, fr.applied, findings)


@dataclass(slots=True)
class FastResult:
    findings: list[Finding]        # discovery findings, then file order, then the closing notes
    records: int
    applied: int
    bytes: int
    segments: int
    state: ReplayState | None      # only with keep=True
    overflow: Counter = field(default_factory=Counter)   # (code, severity) -> findings counted, not kept


def fast_run(log: LogSet, as_of_ns: int, *, keep: bool = True, nparts: int = 1,
             limit: int | None = None) -> FastResult:
    """Verify/replay one intact log with the kernel, over ``nparts`` processes (keep=False only).

    Raises Bail when the log needs the reference path."""
    if nparts > 1 and not keep:
        return _parallel(log, as_of_ns, nparts, limit)
    with gc_paused():
        fr = FastReplay(log, as_of_ns, keep=keep, limit=limit)
        fr.run()
        findings = list(log.findings) + [f for _, f in fr.findings]
        if keep:
            state = finish_state(log, fr, findings)
        else:
            findings.extend(closing_notes(*note_counts(fr.jobs)))
            state = None
    return FastResult(findings, fr.records, fr.applied, fr.bytes, fr.segments, state, fr.findings.overflow)


@contextmanager
def gc_paused():
    """No cyclic GC while the kernel fills its dicts and finish_state builds the Jobs: hundreds of thousands of
    new container objects (none in a cycle) would otherwise trigger repeated full collections (~0.6 s on the
    1.2 M-record bench). The previous setting is restored, also on Bail."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def note_counts(jobs: dict[bytes, int]) -> tuple[int, int]:
    live_adds = leased = 0
    for v in jobs.values():
        if not v & 8:
            live_adds += 1
        if v & _ST_MASK == 4:
            leased += 1
    return live_adds, leased


def _worker(args):
    log, as_of_ns, part, nparts, limit = args
    fr = FastReplay(log, as_of_ns, part=part, nparts=nparts, keep=False, limit=limit)
    try:
        fr.run()
    except Bail:
        return None
    return list(fr.findings), fr.records, fr.applied, fr.bytes, fr.segments, note_counts(fr.jobs), fr.findings.overflow


def _parallel(log: LogSet, as_of_ns: int, nparts: int, limit: int | None = None) -> FastResult:
    import multiprocessing as mp
    with mp.get_context("fork").Pool(nparts) as pool:
        parts = pool.map(_worker, [(log, as_of_ns, k, nparts, limit) for k in range(nparts)])
    if any(p is None for p in parts):
        raise Bail
    merged = sorted((sf for p in parts for sf in p[0]), key=lambda sf: (sf[0], sf[1].offset or 0))
    overflow: Counter = Counter()
    for p in parts:
        overflow.update(p[6])
    if limit is not None and len(merged) > limit:  # each part kept its first `limit`: the first `limit` overall
        for _, f in merged[limit:]:
            overflow[(f.code, f.severity)] += 1
        merged = merged[:limit]
    findings = list(log.findings) + [f for _, f in merged]
    findings.extend(closing_notes(sum(p[5][0] for p in parts), sum(p[5][1] for p in parts)))
    first = parts[0]
    return FastResult(findings, first[1], sum(p[2] for p in parts), first[3], first[4], None, overflow)
