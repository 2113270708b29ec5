"""The hot kernel of verify/replay for intact logs, proven equal to the reference path.

The reference path is ``RecordReader`` + ``WorkqReplay`` (reader.py, replay.py): readable, complete, and
the specification. This kernel runs the same framing, CRC-32C and job state machine in one tight loop over
each segment into the compact job state (jobtable.py: a fixed-size row per live job, no payloads; no Python
object per job with the C kernel), and only for what an intact log contains: clean
records, records of jobs that are not live (WQ-UNKNOWN-JOB) and adds already expired at as-of
(WQ-ADD-EXPIRED). Anything else — damage, an undecodable payload, an impossible history, an unusual field —
raises ``Bail``, and the caller runs the reference path over the whole log, which reports it precisely.
``tests/engine/test_fastreplay.py`` checks with hypothesis that both paths give the same findings, exit
code, counts and state digest on random valid, invalid and damaged logs.

With ``nparts > 1`` each process handles the jobs whose id's last byte falls in its partition (a job's
state depends only on its own records, in log order): every process frames every record, but checks CRCs
and replays only its own share; findings merge back into file order.

The loop (``FastReplay._scan``) has two implementations doing exactly the same thing: ``_scan_py`` below, over a
``PyJobTable``, and the optional C extension ``_kernel.scan`` over a ``_kernel.JobTable`` (_kernel.c, built by
setup.py where a compiler exists). A FastReplay takes the C one when it is importable, unless
``WQTOOL_PURE_PYTHON=1``; ``KERNEL`` says which ("c" or "python"). tests/engine/test_kernel_c.py compares the two
directly, on random and hostile bytes. With ``stats=True`` the same pass also collects what ``wqtool stats`` needs
of every record (``fr.stats``: records and bytes per command, time span, distinct job ids).
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
from .jobtable import INT64_MAX, INT64_MIN, UINT32_MAX, PyJobTable, PyScanStats
from .reader import LogSet, FileView, header_finding
from .replay import CompactJobs, ReplayState, closing_notes, expired_finding, unknown_job_finding

_U32 = RECORD_CRC_STRUCT.unpack_from
_TIME = GO_TIME_STRUCT.unpack_from
_CMDS = {int(c): c for c in CmdType}
_NAME_MATCH = NAME_RE.match
_NS = 1_000_000_000
_UNIX_NS = UNIX_TO_INTERNAL * _NS


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
#: "c" or "python": the kernel a new FastReplay runs (tests switch it)
KERNEL = "c" if _C_SCAN is not None else "python"


def new_table(kernel: str | None = None):
    """An empty job table for ``kernel`` ("c" / "python"; default ``KERNEL``)."""
    return _kernel.JobTable() if (kernel or KERNEL) == "c" else PyJobTable()


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
                 limit: int | None = None, stats: bool = False, kernel: str | None = None):
        self.log = log
        self.as_of_ns = as_of_ns
        self.part = part
        self.nparts = nparts
        self.keep = keep            # keep the results (replay's state); verify needs only the states
        self.kernel = kernel or KERNEL
        if self.kernel == "c":
            self.jobs = _kernel.JobTable()
            self.stats = _kernel.ScanStats() if stats else None
        else:
            self.jobs = PyJobTable()
            self.stats = PyScanStats() if stats else None
        self.findings = CappedFindings(limit)
        self.records = 0
        self.applied = 0
        self.bytes = 0
        self.segments = 0
        self.sizes: list[int] = []      # bytes read of each segment (what a second pass may read: dump)
        self.seg_records: list[int] = []   # records framed in each segment (a one-pass repair plan's kept ranges)

    def run(self) -> None:
        """Raises Bail when the log needs the reference path."""
        index = 0
        newest = self.log.newest
        for seg_no, seg in enumerate(self.log.segments):
            with FileView(seg) as sd:
                self.segments += 1
                self.bytes += sd.size
                self.sizes.append(sd.size)
                f, scan = header_finding(sd, index, seg is newest)
                if f is not None:
                    if f.severity == "error":
                        raise Bail
                    if self.part == 0:
                        self.findings.append((seg_no, f))
                first = index
                if scan:
                    try:
                        index = self._scan(sd.data, sd.size, sd.path, index, seg_no)
                    except (IndexError, struct.error):
                        raise Bail from None
                self.seg_records.append(index - first)
        self.records = index

    def _scan(self, data, end: int, path: str, index: int, seg_no: int) -> int:
        """Frame, check and replay the records of ``data[8:end]``; returns the next record index."""
        if self.kernel == "c":
            if end > len(data):     # never from FileView; run() turns it into Bail, as the Python loop's IndexError
                raise IndexError("end is past the end of data")
            return _kernel.scan(self, data, end, path, index, seg_no)
        return self._scan_py(data, end, path, index, seg_no)

    def _scan_py(self, data, end: int, path: str, index: int, seg_no: int) -> int:  # noqa: C901 — the hot loop
        table = self.jobs
        jobs = table.d
        jobs_get = jobs.get
        names = table.names
        stats = self.stats
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
            if stats is not None and 1 <= c <= 8:
                _, tsec, tnsec, _ = tunp(data, pos)
                tr = tsec * _NS - _UNIX_NS + tnsec
                stats.n_records[c] += 1
                stats.n_bytes[c] += nxt - pos
                if stats.first is None or tr < stats.first:
                    stats.first = tr
                if stats.last is None or tr > stats.last:
                    stats.last = tr
                # the distinct job ids: added below for adds and for records of jobs not in the table (a job in
                # the table came from an add of this pass, whose id is in already)
            if c >= 5:
                if c > 8 or s != 17:
                    raise Bail
                jid = data[q + 1:q + 17]
                v = jobs_get(jid)
                if v is None:
                    if stats is not None:
                        stats.id_set.add(jid)
                    if full():
                        over("WQ-UNKNOWN-JOB")
                    else:
                        out((seg_no, unknown_job_finding(path, pos, index, _CMDS[c], jid)))
                elif c <= 6:                      # delete, expire
                    del jobs[jid]
                    applied += 1
                elif c == 7:                      # start-attempt
                    st = v[14]
                    if st == 4 or st == 1 or st == 2:
                        raise Bail
                    ma = v[5]
                    if ma and v[15] >= ma:
                        raise Bail
                    if v[15] >= UINT32_MAX:
                        raise Bail
                    v[14] = 4
                    v[15] += 1
                    applied += 1
                else:                             # timeout-attempt
                    applied += 1
                    st = v[14]
                    if st != 1 and st != 2:
                        ma = v[5]
                        if ma and v[15] >= ma:
                            v[14] = 2
                            if keep:
                                v[16] = b""
                        else:
                            v[14] = 3
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
                    if stats is not None:
                        stats.id_set.add(jid)
                    if full():
                        over("WQ-UNKNOWN-JOB")
                    else:
                        out((seg_no, unknown_job_finding(path, pos, index, _CMDS[c], jid)))
                else:
                    st = v[14]
                    if st == 1 or st == 2:
                        raise Bail
                    v[14] = 1 if c == 3 else 2
                    if keep:
                        v[16] = bytes(data[rs:pend])
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
                if stats is not None:
                    stats.id_set.add(data[q + 1:q + 17])
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
                    created = csec * _NS - _UNIX_NS + cnsec
                    sched = None if c == 1 else tsec * _NS - _UNIX_NS + tnsec
                    # the compact state keeps times as int64 ns (years 1678..2262): others go the reference way
                    if (not INT64_MIN <= created <= INT64_MAX or not INT64_MIN <= log_exp <= INT64_MAX
                            or (sched is not None and not INT64_MIN <= sched <= INT64_MAX)):
                        raise Bail
                    nm = names.get(name)
                    if nm is None:
                        nm = names[name] = name.decode("ascii")
                    pl0 = pend - 30 - plen
                    jobs[jid] = [c, nm, ttr, ttl, prio, ma, mf & 0xFF, created, sched, log_exp, plen,
                                 crc(data[pl0:pl0 + plen]) if keep else 0, seg_no, pos, 0, 0, None]
                    applied += 1
            else:
                raise Bail
            index += 1
            pos = nxt
        self.applied += applied
        return index


def finish_state(log: LogSet, fr: FastReplay, findings: list[Finding]) -> ReplayState:
    """The replayed state over the kernel's job table (no Job object is built: ``CompactJobs`` makes them on
    demand), closed as ``WorkqReplay.finish`` closes it (lease expiry at as-of + TTR, the closing notes)."""
    return _finish_state(log, fr, findings)


def _finish_state(log: LogSet, fr: FastReplay, findings: list[Finding]) -> ReplayState:
    findings.extend(closing_notes(*fr.jobs.note_counts()))
    paths = [s.path for s in log.segments] if log is not None else []
    return ReplayState(fr.as_of_ns, CompactJobs(fr.jobs, paths, fr.as_of_ns), fr.records, fr.applied, findings)


@dataclass(slots=True)
class FastResult:
    findings: list[Finding]        # discovery findings, then file order, then the closing notes
    records: int
    applied: int
    bytes: int
    segments: int
    state: ReplayState | None      # only with keep=True
    overflow: Counter = field(default_factory=Counter)   # (code, severity) -> findings counted, not kept
    stats: object | None = None    # with stats=True: the ScanStats / PyScanStats of the pass
    sizes: list[int] = field(default_factory=list)       # the bytes read of each segment
    seg_records: list[int] = field(default_factory=list)  # the records framed in each segment


def fast_run(log: LogSet, as_of_ns: int, *, keep: bool = True, nparts: int = 1,
             limit: int | None = None, stats: bool = False) -> FastResult:
    """Verify/replay one intact log with the kernel, over ``nparts`` processes (keep=False, stats=False only).

    Raises Bail when the log needs the reference path."""
    if nparts > 1 and not keep and not stats:
        return _parallel(log, as_of_ns, nparts, limit)
    with gc_paused():
        fr = FastReplay(log, as_of_ns, keep=keep, limit=limit, stats=stats)
        fr.run()
        findings = list(log.findings) + [f for _, f in fr.findings]
        if keep:
            state = finish_state(log, fr, findings)
        else:
            findings.extend(closing_notes(*note_counts(fr.jobs)))
            state = None
    return FastResult(findings, fr.records, fr.applied, fr.bytes, fr.segments, state, fr.findings.overflow,
                      fr.stats, fr.sizes, fr.seg_records)


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


def note_counts(jobs) -> tuple[int, int]:
    """(live add-jobs, leased jobs) of a job table: what the closing notes count."""
    return jobs.note_counts()


def _worker(args):
    log, as_of_ns, part, nparts, limit = args
    fr = FastReplay(log, as_of_ns, part=part, nparts=nparts, keep=False, limit=limit)
    try:
        fr.run()
    except Bail:
        return None
    return (list(fr.findings), fr.records, fr.applied, fr.bytes, fr.segments, note_counts(fr.jobs),
            fr.findings.overflow, fr.sizes)


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
    return FastResult(findings, first[1], sum(p[2] for p in parts), first[3], first[4], None, overflow,
                      sizes=first[7])
