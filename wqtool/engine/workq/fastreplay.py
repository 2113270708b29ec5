"""The workq kernel: verify/replay of a whole log in one pass of C, through damage, equal to the reference path.

The reference path is ``RecordReader`` + ``WorkqReplay`` (reader.py, replay.py): readable, complete, and the
specification — the job state machine's rules live there once in Python, and once in C (``_kernel.scan``,
kernel/scan.c). The kernel frames, checks and replays each segment in C into the compact job state (jobtable.py:
a fixed-size row per live job, no payloads, no Python object per job). Every record the C loop does not take
whole — damage (a bad CRC, SIZE, time version, a truncation), a payload that does not decode, an impossible
history (a refused record), an unusual field, the first zone offset of a segment — comes back here at its offset,
untouched; the reference reader reads that one spot (the same finding, code, offset, "valid records resume at"),
the reference replay applies that one record to its job (taken from the table and put back), and the C loop goes
on where the reference stopped. So a damaged log costs one pass, like an intact one, and says exactly what the
reference says. ``tests/engine/workq/test_kernel_c.py`` and ``test_fastreplay.py`` hold kernel == reference on
random valid, invalid and damaged logs (bit flips, every truncation offset, hostile sizes).

``Bail`` is left for what the kernel cannot hold: no C kernel (built where a compiler was available; forced off
with ``WQTOOL_PURE_PYTHON=1``: ``KERNEL`` is then "python", the Bail is ``NoKernel`` and every caller runs the
reference path), a time outside int64 ns or an attempt count beyond uint32 in a live job, a ``stats`` pass over an
undecodable record, and — only when a caller asks for an intact log (``through=False``) — the first error finding.

One pass gives what a repair plans from (``FastResult``): the findings in file order, ``spans`` — the byte range
of every error (damage: ``[offset, resumes_at)`` or to the segment's end; a refused record: the record; a bad
header: the header or the file) — the records read per segment (``seg_records``), and with ``keep=True`` the
replayed state over the compact job table (``state.jobs.table``: a ``_kernel.JobTable``).

With ``nparts > 1`` each process handles the jobs whose id's last byte falls in its partition (a job's state
depends only on its own records, in log order): every process frames and checks every record (so all resynchronise
on the same damage; process 0 reports it), and replays only its own share; findings merge back into file order.
With ``stats=True`` the same pass also collects what ``wqtool stats`` needs of every record (``fr.stats``: records
and bytes per command, time span, distinct job ids); with ``series`` (the bins at most) the time series of ``report``
and ``stats --chart|--timeline`` (``fr.series``: a ``_kernel.SeriesAcc`` the C loop feeds for the records it takes,
and the methods here for the records and findings the reference handles: workq/series.py's ``fast_series``).
"""
from __future__ import annotations

import gc
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from collections.abc import Callable      # (not typing: serve imports this before its first reply)

from ...formats.workq import HEADER_SIZE, JOB_ID_SIZE, CmdType
from ..findings import ERROR, Finding, Fold, QuotaCap, Verdict, quota
from .jobtable import K_ATT, K_NAME, K_RES, K_STATE, PyJobTable, PyScanStats
from .model import Record
from ..fileio import Snapshot, pinned
from .reader import FileView, LogSet, RecordReader, header_finding
from .replay import CompactJobs, ReplayState, WorkqReplay, closing_notes, expired_finding, unknown_job_finding

__all__ = ["Bail", "Damaged", "FastReplay", "FastResult", "NoKernel", "Span", "fast_run", "finish_state",
           "merge_shares", "KERNEL"]

class CappedFindings(list):
    """The kernel's findings: the first ``limit`` (seg_no, Finding) pairs of each quota (``findings.quota``:
    errors, warnings, notes, as-of findings), and only a count (by code and severity) of the rest — an old log
    can hold a warning per record (expired adds, records of gone jobs), and memory must follow the live state,
    not the file; the as-of findings past the cap are still summed up (``folds``: count, first and last, times).
    The C loop appends through this ``append`` too, and calls ``over`` instead once the as-of quota is full
    (``full``: it builds only as-of findings)."""

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit
        self.cap = QuotaCap(limit)
        self.overflow: Counter = Counter()
        self.folds: dict = {}               # as-of findings only counted: code -> Fold
        self.verdicts: set = set()          # the verdicts of the findings only counted (errors past the cap)
        self.last_good: tuple | None = None  # a torn tail's (path, last good offset), when it is past the cap

    def append(self, item) -> None:
        if self.cap.take(item[1]):
            list.append(self, item)
        else:
            self.spill(item[1])

    def spill(self, f: Finding) -> None:
        """Count ``f`` without keeping it (what the report still needs of it: its verdict, a torn tail's offset,
        an as-of finding's place and time)."""
        self.overflow[(f.code, f.severity)] += 1
        if quota(f) == "as-of":
            self._fold(f.code, f.severity).take(f.path, f.offset, f.when)
        if f.verdict:
            self.verdicts.add(f.verdict)
            if f.verdict == Verdict.TORN_TAIL:
                self.last_good = (f.path, f.last_good_offset)

    def _fold(self, code: str, severity: str) -> Fold:
        fold = self.folds.get(code)
        if fold is None:
            fold = self.folds[code] = Fold(code, severity)
        return fold

    def full(self) -> bool:
        """Whether the as-of quota is full (the only findings the C loop builds itself)."""
        return self.cap.full("as-of")

    def over(self, code: str, path=None, offset=None, when=None) -> None:
        """Count a warning the kernel did not build (it is over the cap), with its place and as-of time."""
        self.overflow[(code, "warning")] += 1
        self._fold(code, "warning").take(path, offset, when)


class Bail(Exception):
    """The kernel cannot take this log (see the module docstring): the caller runs the reference path."""

    #: the kernel read (part of) the log and handed it back: the reference pass is a second read, a pass of its own
    handed_back = True


class NoKernel(Bail):
    """No kernel to run (not built, or ``WQTOOL_PURE_PYTHON=1``): nothing was read, so the reference path is the
    caller's only read, inside the pass it already announced (a "handed back" pass would name a read that never
    happened, after an empty one)."""

    handed_back = False


class Damaged(Exception):
    """A pass with a CRC range (``crc_range``: a chained share, which trusts the records other shares CRC-check)
    met a crc mismatch: the shares' framing may differ past it, so the caller reads the log whole (one pass that
    checks every CRC: the reference answer)."""


try:
    from . import _kernel
except ImportError:          # not built (no compiler at install time): the reference path does the work
    _kernel = None
_C_SCAN = None if _kernel is None or os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0") else _kernel.scan
#: "c" or "python": the kernel a new FastReplay runs ("python": none, FastReplay.run raises Bail; tests switch it)
KERNEL = "c" if _C_SCAN is not None else "python"

#: the C loop builds its findings with unknown_job_finding / expired_finding(path, pos, index, _CMDS[c], ...)
_CMDS = {int(c): c for c in CmdType}


def new_table(kernel: str | None = None):
    """An empty job table for ``kernel`` ("c" / "python"; default ``KERNEL``)."""
    return _kernel.JobTable() if (kernel or KERNEL) == "c" else PyJobTable()


def new_stats(kernel: str | None = None):
    """An empty ``ScanStats`` for ``kernel`` ("c" / "python"; default ``KERNEL``)."""
    return _kernel.ScanStats() if (kernel or KERNEL) == "c" else PyScanStats()


@dataclass(frozen=True, slots=True)
class Span:
    """The bytes behind one error finding: ``[start, stop)`` of segment ``seg_no`` (``path``).

    damage (WQ-CRC, WQ-TRUNCATED, WQ-SIZE-*, WQ-TIME-VERSION): from the damaged record to where valid records
    resume (``finding.resumes_at``), or to the segment's end; a refused record (an exit-4 or payload finding): the
    record; a bad header: its 8 bytes (WQ-HDR-MAGIC/-VERSION; the records after it are read) or the whole file
    (WQ-HDR-EMPTY/-SHORT)."""

    seg_no: int
    path: str
    start: int
    stop: int
    finding: Finding


class FastReplay:
    """One pass of the kernel over one log (or one partition of its jobs)."""

    def __init__(self, log: LogSet, as_of_ns: int, *, part: int = 0, nparts: int = 1, keep: bool = False,
                 limit: int | None = None, stats: bool = False, kernel: str | None = None, through: bool = False,
                 on_error: Callable[[Finding], None] | None = None, series: int | None = None,
                 id_range: tuple[int, int] | None = None, crc_range: tuple[int, int] | None = None):
        self.log = log
        self.on_error = on_error    # sees each error as the pass meets it (a repair plan refuses there)
        self.as_of_ns = as_of_ns
        self.part = part
        self.nparts = nparts
        # a share by id range: the jobs whose id's first two bytes (big-endian) are in [id_lo, id_hi), so the
        # shares' jobs follow each other in id order (their digest lines concatenate); else by last byte mod nparts
        self.id_lo, self.id_hi = (0, 0) if id_range is None or nparts <= 1 else id_range
        if self.id_hi and not 0 <= self.id_lo < self.id_hi <= 0x10000:
            raise ValueError(f"id_range {id_range}: not a range of [0, 65536)")
        # the records this pass CRC-checks: those starting at a byte of [lo, hi) of the log (its segments one after
        # another, by their pinned sizes); the others are trusted — another share of a chain checks them, and a
        # crc mismatch met anywhere raises Damaged (the caller then reads the log whole). None: every record.
        self.crc_range = crc_range
        self.crc_lo, self.crc_hi = 0, 1 << 62       # the current segment's (the C loop reads them)
        self.keep = keep            # keep the results (replay's state); verify needs only the states
        self.through = through      # read through errors (else: Bail at the first one)
        self.kernel = kernel or KERNEL
        self.jobs = new_table(self.kernel)
        self.stats = new_stats(self.kernel) if stats else None
        self.series = None          # with series (max bins): a _kernel.SeriesAcc (C kernel only; nparts 1)
        if series is not None and self.kernel == "c":
            from ..series import DURATION_EDGES, MAX_MARKS, WIDTHS_S
            self.series = _kernel.SeriesAcc(series, MAX_MARKS, WIDTHS_S, DURATION_EDGES)
        self.findings = CappedFindings(limit)
        self.records = 0
        self.applied = 0
        self.bytes = 0
        self.segments = 0
        self.sizes: list[int] = []      # bytes read of each segment (what a second pass may read: dump)
        self.spans: list[Span] = []     # the byte range of every error finding (this partition's)
        self.seg_records: list[int] = []  # records read in each segment
        self._reader = RecordReader(log)
        self._replay = WorkqReplay(as_of_ns)
        self._view = CompactJobs(self.jobs, [s.path for s in log.segments], as_of_ns)

    def run(self) -> None:
        """Raises Bail when the log needs the reference path."""
        if self.kernel != "c":
            raise NoKernel
        index = 0
        newest = self.log.newest
        for f in self.log.findings:          # discovery's findings come first (the series count them)
            self._told(f)
        base = 0                             # the log's bytes before this segment (crc_range's offsets)
        for seg_no, seg in enumerate(self.log.segments):
            with FileView(seg) as sd:
                if self.crc_range is not None:
                    lo, hi = self.crc_range
                    self.crc_lo, self.crc_hi = max(0, lo - base), max(0, min(1 << 62, hi - base))
                base += sd.size
                self.segments += 1
                self.bytes += sd.size
                self.sizes.append(sd.size)
                first = index
                is_newest = seg is newest
                f, scan = header_finding(sd, index, is_newest)
                if f is not None:
                    if f.severity == ERROR:
                        self._error(seg_no, f, 0, HEADER_SIZE if scan else sd.size, self.part == 0)
                    elif self.part == 0:
                        self._told(f)
                        self.findings.append((seg_no, f))
                if scan:
                    index = self._segment(sd, seg_no, index, is_newest)
                self.seg_records.append(index - first)
        self.records = index

    def _segment(self, sd: FileView, seg_no: int, index: int, is_newest: bool) -> int:
        """The C loop over one segment; what it hands back goes to the reference, one record or damage at a time."""
        data, end, path = sd.data, sd.size, sd.path
        scan = _kernel.scan
        pos, zone = HEADER_SIZE, False
        while True:
            index, pos = scan(self, data, pos, end, path, index, seg_no, zone)
            if pos >= end:
                return index
            for ev in self._reader.segment_events(sd, index, is_newest, start=pos, zone_warned=zone):
                if ev.__class__ is Record:
                    self._record(ev, data, seg_no)
                    index += 1
                    pos = ev.offset + ev.length
                    break
                if ev.code == "WQ-ZONE":           # the reader's warning, then the record itself
                    zone = True
                    if self.part == 0:
                        self._told(ev)
                        self.findings.append((seg_no, ev))
                    continue
                if self.crc_range is not None and ev.code == "WQ-CRC":
                    raise Damaged(f"{path}@0x{pos:x}")      # another share may have trusted this record
                stop = end if ev.resumes_at is None else ev.resumes_at
                self._error(seg_no, ev, pos, stop, self.part == 0)
                pos = stop
                break
            else:                                  # (the reader always yields at a spot the C loop hands back)
                raise AssertionError(f"no event at {path}@0x{pos:x}")

    def _error(self, seg_no: int, f: Finding, start: int, stop: int, mine: bool) -> None:
        if not self.through:
            raise Bail
        if mine:
            self._told(f)
            self.findings.append((seg_no, f))
            self.spans.append(Span(seg_no, f.path, start, stop, f))
            if self.on_error is not None:
                self.on_error(f)

    def _record(self, rec: Record, data, seg_no: int) -> None:
        """One whole record the C loop handed back, through the reference replay, on its job's row."""
        nparts = self.nparts
        if nparts > 1:
            size = rec.size
            at = rec.offset + rec.length - 4 - size      # the payload: the command, then the job id
            if self.id_hi:      # a record too short for an id belongs to the share whose range starts at 0
                mine = (self.id_lo <= (data[at + 1] << 8 | data[at + 2]) < self.id_hi if size > JOB_ID_SIZE
                        else self.id_lo == 0)
            else:
                mine = (data[at + JOB_ID_SIZE] % nparts if size > JOB_ID_SIZE else 0) == self.part
            if not mine:
                return
        c = rec.command
        if self.stats is not None:
            if c is None:      # "(undecodable)": a kind the kernel's stats do not count
                raise Bail
            self.stats.add(int(c.cmd), rec.length, rec.time.unix_ns, c.job_id)
        jid = c.job_id if c is not None else None
        table = self.jobs
        row = table.get_row(jid) if jid is not None else None
        rp = self._replay
        rp.jobs = {} if row is None else {jid: self._view._job(jid, row)}
        rp.applied = 0
        rp.apply(rec)
        self.applied += rp.applied
        if self.series is not None:
            self._step(rec, c, row, rp.jobs.get(jid) if jid is not None else None)
        for f in rp.findings:
            if f.severity == ERROR:
                self._error(seg_no, f, rec.offset, rec.offset + rec.length, True)
            else:
                self._told(f)
                self.findings.append((seg_no, f))
        rp.findings.clear()
        if jid is None:
            return
        j = rp.jobs.get(jid)
        if j is None:
            if row is not None:
                table.delete(jid)
            return
        keep = self.keep
        if row is None:
            new = (int(j.kind), j.name, j.ttr, j.ttl, j.priority, j.max_attempts, j.max_fails, j.created_ns,
                   j.scheduled_ns, j.log_expires_ns, j.payload_len, j.payload_crc if keep else 0, seg_no,
                   j.src_offset, int(j.state), j.attempts, j.result if keep else None)
        elif (j.state, j.attempts, j.result) == (row[K_STATE], row[K_ATT], row[K_RES]):
            return
        else:
            new = row[:K_STATE] + (int(j.state), j.attempts, j.result if keep else row[K_RES])
        try:
            table.put(jid, new)
        except (OverflowError, ValueError):    # beyond what a row holds (int64 ns times, uint32 attempts)
            raise Bail from None


    def _told(self, f: Finding) -> None:
        """A finding, in stream order, to the series (they count every error and warning, kept or not)."""
        if self.series is not None:
            self.series.finding(f.code, f.severity, f.path, f.offset)

    def _step(self, rec: Record, c, row, j) -> None:
        """A record the reference replayed, to the series: its job's state before (``row``) and after (``j``)."""
        t = rec.time.unix_ns
        if c is None:
            self.series.record(0, t, -1, -1, 0, None, None, None)
            return
        b = -1 if row is None else row[K_STATE]
        if j is None:
            self.series.record(int(c.cmd), t, b, -1, 0, None if row is None else row[K_NAME], None, c.job_id)
        else:
            self.series.record(int(c.cmd), t, b, int(j.state), j.attempts, j.name,
                               j.created_ns if j.scheduled_ns is None else j.scheduled_ns, c.job_id)


def finish_state(log: LogSet, fr: FastReplay, findings: list[Finding]) -> ReplayState:
    """The replayed state over the kernel's job table (no Job object is built: ``CompactJobs`` makes them on
    demand), closed as ``WorkqReplay.finish`` closes it (lease expiry at as-of + TTR, the closing notes)."""
    return _finish_state(log, fr, findings)


def _finish_state(log: LogSet, fr: FastReplay, findings: list[Finding]) -> ReplayState:
    findings.extend(closing_notes(*fr.jobs.note_counts()))
    paths = [s.path for s in log.segments] if log is not None else []
    return ReplayState(fr.as_of_ns, CompactJobs(fr.jobs, paths, fr.as_of_ns), fr.records, fr.applied, findings,
                       sealed_digest="")      # the pass is over: nothing applies another record to this table


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
    spans: list[Span] = field(default_factory=list)      # the bytes behind each error finding, in file order
    verdicts: set = field(default_factory=set)           # the verdicts of errors counted in overflow
    last_good: tuple | None = None                       # a torn tail counted in overflow: (path, offset)
    folds: dict = field(default_factory=dict)            # as-of findings counted in overflow: code -> Fold
    seg_records: list[int] = field(default_factory=list)  # the records read in each segment
    series: object | None = None   # with series: the pass's _kernel.SeriesAcc


def fast_run(log: LogSet, as_of_ns: int, *, keep: bool = True, nparts: int = 1,
             limit: int | None = None, stats: bool = False, through: bool = False,
             on_error: Callable[[Finding], None] | None = None, series: int | None = None) -> FastResult:
    """Verify/replay one log with the kernel, over ``nparts`` processes (keep=False, stats=False only).

    ``through``: read through damage and refused records (the findings and ``spans`` say what and where); else
    the log must be free of errors (Bail at the first); ``series``: bin the time series too (at most that many
    bins; one process). Raises Bail when the log needs the reference path."""
    if KERNEL != "c":       # (before the processes: each would only find no kernel, and the Bail must say so)
        raise NoKernel
    if nparts > 1 and not keep and not stats and series is None:
        return _parallel(log, as_of_ns, nparts, limit, through)
    with gc_paused():
        fr = FastReplay(log, as_of_ns, keep=keep, limit=limit, stats=stats, through=through, on_error=on_error,
                        series=series)
        fr.run()
        findings = list(log.findings) + [f for _, f in fr.findings]
        if keep:
            state = finish_state(log, fr, findings)
        else:
            findings.extend(closing_notes(*note_counts(fr.jobs)))
            state = None
    return FastResult(findings, fr.records, fr.applied, fr.bytes, fr.segments, state, fr.findings.overflow,
                      fr.stats, fr.sizes, spans=fr.spans, seg_records=fr.seg_records, verdicts=fr.findings.verdicts,
                      last_good=fr.findings.last_good, folds=fr.findings.folds, series=fr.series)


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
    log, as_of_ns, part, nparts, limit, through, snap = args
    fr = FastReplay(log, as_of_ns, part=part, nparts=nparts, keep=False, limit=limit, through=through)
    try:
        with pinned(snap):
            fr.run()
    except Bail:
        return None
    return (list(fr.findings), fr.records, fr.applied, fr.bytes, fr.segments, note_counts(fr.jobs),
            fr.findings.overflow, fr.sizes, fr.spans, fr.seg_records, fr.findings.verdicts, fr.findings.last_good,
            fr.findings.folds)


def merge_shares(shares, limit: int | None) -> CappedFindings:
    """The findings of a log's shares (kernel passes over its jobs split by ``part``: processes here, Spark tasks in
    the fleet), each given as (its CappedFindings' (seg_no, Finding) pairs, overflow, verdicts, last_good, folds),
    as one pass would have kept them: in file order, the first ``limit`` of each quota overall (each share kept
    its own first ``limit``), the rest counted and folded."""
    merged = sorted((sf for sh in shares for sf in sh[0]), key=lambda sf: (sf[0], sf[1].offset or 0))
    spill = CappedFindings(limit)
    for _, overflow, verdicts, last_good, folds in shares:
        spill.overflow.update(overflow)
        spill.verdicts |= verdicts
        if last_good is not None:
            spill.last_good = last_good
        for code, fold in folds.items():
            spill._fold(code, fold.severity).merge(fold)
    for sf in merged:
        spill.append(sf)
    return spill


def _parallel(log: LogSet, as_of_ns: int, nparts: int, limit: int | None = None, through: bool = False
              ) -> FastResult:
    import multiprocessing as mp
    # one snapshot: every process reads the bytes pinned here (a writer appending meanwhile would give each share
    # another record count); a segment replaced or shrunk is an error naming it, in a process or here after
    snap = Snapshot.take([seg.path for seg in log.segments])
    with mp.get_context("fork").Pool(nparts) as pool:
        parts = pool.map(_worker, [(log, as_of_ns, k, nparts, limit, through, snap) for k in range(nparts)])
    snap.check()
    if any(p is None for p in parts):
        raise Bail
    spill = merge_shares([(p[0], p[6], p[10], p[11], p[12]) for p in parts], limit)
    overflow = spill.overflow
    findings = list(log.findings) + [f for _, f in spill]
    findings.extend(closing_notes(sum(p[5][0] for p in parts), sum(p[5][1] for p in parts)))
    first = parts[0]
    spans = sorted((sp for p in parts for sp in p[8]), key=lambda sp: (sp.seg_no, sp.start))
    return FastResult(findings, first[1], sum(p[2] for p in parts), first[3], first[4], None, overflow,
                      sizes=first[7], spans=spans, seg_records=first[9], verdicts=spill.verdicts,
                      last_good=spill.last_good, folds=spill.folds)
