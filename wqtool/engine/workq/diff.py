"""workq's part of ``wqtool diff`` (engine/diff.py): the jobs whose replay rows differ, how two logs relate, and
the record that last changed each differing job.

- **The jobs.** Both replays end in the kernel's compact job table (jobtable.py); ``_kernel.diff_tables``
  (kernel/diff.c) merges the two tables in id order and compares every field of replay's row (the digest line's:
  ``Job.canonical``) — no Python object per job. A replay that took the reference path (a dict of ``Job``), or the
  pure-Python table, is compared row by row through ``Job.canonical`` (the same rows).
- **How the logs relate.** Segment by segment in upstream's order: same name and the same bytes (``diff_first``:
  memcmp) until the first byte that differs; the record holding that byte is where they diverge (both logs have
  the same bytes before it, so the same state there). A log whose bytes all begin the other is a prefix: "B = A +
  N records".
- **The record that last changed a job.** The job table keeps where a job was added, not where it last changed;
  so a second, targeted pass reads what follows the divergence on each side (nothing before it can explain a
  difference: the state there is the same): ``_kernel.diff_walk`` frames and checks records at memory speed and
  stops only at a record of a differing job or at anything doubtful, which the reference reader reads (the same
  records, the same resynchronisation after damage, the same record numbers as verify).
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from ...formats._common import format_uuid
from ..caps import Part
from ..diff import Change, JobSide, Place, Relation, divergence, drop_pages, relation
from ..fileio import FileView
from ..read import Result
from .model import Record
from .reader import LogSet, RecordReader, header_finding
from .replay import CompactJobs, WorkqReplay
from .verify import LogRun
from .serialize import job_to_jsonable
from ...formats.workq import HEADER_SIZE

try:
    from . import _kernel
except ImportError:          # not built: the same work in Python
    _kernel = None
_C = _kernel is not None and os.environ.get("WQTOOL_PURE_PYTHON", "") in ("", "0")


def _table(r: Result):
    jobs = r.report.state.jobs
    return jobs.table if isinstance(jobs, CompactJobs) else None


class WorkqDiffer(Part):
    """``Format.diff`` of workq logs."""

    def changed(self, a: Result, b: Result) -> list[bytes]:
        ta, tb = _table(a), _table(b)
        if _C and isinstance(ta, _kernel.JobTable) and isinstance(tb, _kernel.JobTable):
            packed = _kernel.diff_tables(ta, tb)
            return [packed[i:i + 16] for i in range(0, len(packed), 16)]
        ja, jb = a.report.state.jobs, b.report.state.jobs
        return sorted(k for k in set(ja) | set(jb)
                      if k not in ja or k not in jb or ja[k].canonical() != jb[k].canonical())

    def side(self, r: Result, key: bytes) -> JobSide | None:
        j = r.report.state.jobs.get(key)
        if j is None:
            return None
        return JobSide(j.name, j.state.label, j.attempts, j.result, job_to_jsonable(j))

    def job_id(self, key: bytes) -> str:
        return format_uuid(key)

    def between(self, log: LogSet, t1: int, t2: int, limit: int | None):
        """One log at two instants: the reference pass up to each (records whose TIME is at or before it, replayed
        at it), the records in (t1, t2] per job, and the jobs whose rows differ — replay's row without what the
        instant alone moves (an add-job's expires_ns, a leased job's lease_expires_ns)."""
        rep1, _ = _up_to(log, t1, None, limit)
        rep2, upto = _up_to(log, t2, t1, limit)
        j1, j2 = rep1.state.jobs, rep2.state.jobs
        keys = sorted(k for k in set(j1) | set(j2)
                      if k not in j1 or k not in j2 or _at_rest(j1[k]) != _at_rest(j2[k]))
        expired = {k for k in keys if k in j1 and k not in j2 and k not in upto.window}
        return rep1, rep2, keys, upto.window, expired, upto.in_window

    def relate(self, a: Result, b: Result, keys: Sequence[bytes]) -> tuple[Relation, dict, dict]:
        la, lb = a.log.data, b.log.data
        seg, d = _divergence(la, lb)
        want = set(keys)
        ca, pa = _after(la, seg, d, a.report.state.records, want)
        cb, pb = _after(lb, seg, d, b.report.state.records, want)
        na, nb = len(la.segments), len(lb.segments)
        end_a = pa is None or (pa.offset >= _size(la, seg) and seg >= na - 1)
        end_b = pb is None or (pb.offset >= _size(lb, seg) and seg >= nb - 1)
        rel = relation(end_a, end_b, seg == 0 and pa.offset <= HEADER_SIZE and pb.offset <= HEADER_SIZE, pa, pb,
                       a.report.state.records, b.report.state.records)
        return rel, ca, cb


def _size(log: LogSet, seg: int) -> int:
    if seg >= len(log.segments):
        return 0
    with FileView(log.segments[seg]) as v:
        return v.size


_WINDOW = 16 << 20


def _divergence(la: LogSet, lb: LogSet) -> tuple[int, int | None]:
    return divergence(la.segments, lb.segments, _kernel.diff_first if _C else None)


def _after(log: LogSet, seg: int, d: int | None, total: int, want: set[bytes]
           ) -> tuple[dict[bytes, Change], Place | None]:
    """On one side: {key: the last record of that job past the divergence} and where the divergence is on this
    side (the start of the record — or damaged range — holding byte ``d`` of segment ``seg``; the end of the log
    when it is shorter). Record numbers are the log's own (counted back from ``total``: its readable records)."""
    segs = log.segments
    if seg >= len(segs):
        last = segs[-1] if segs else None
        return {}, None if last is None else Place(last.path, _size(log, len(segs) - 1))
    reader = RecordReader(log)
    packed = b"".join(sorted(want))
    seen: dict[bytes, tuple[Record, int]] = {}
    n = 0
    place = None
    for i in range(seg, len(segs)):
        with FileView(segs[i]) as sd:
            limit = d if i == seg and d is not None else None
            n, at = _segment(sd, reader, segs[i] is log.newest, limit, packed, want, seen, n)
            if i == seg:
                place = Place(sd.path, at)
    base = total - n
    changes = {k: Change(rec.path, rec.offset, base + idx, rec.time.isoformat(),
                         rec.command.cmd.label if rec.command is not None else None)
               for k, (rec, idx) in seen.items()}
    return changes, place


def _segment(sd: FileView, reader: RecordReader, is_newest: bool, limit: int | None, packed: bytes,
             want: set[bytes], seen: dict, n: int) -> tuple[int, int]:
    """Walk one segment from its first record: up to the record holding byte ``limit`` nothing is noted (the
    logs agree there); from it on, the records of the ``want``ed jobs go to ``seen`` (key -> (record, number
    within the walk)). Returns (records walked in all, the offset where noting began)."""
    f, scan = header_finding(sd, 0, is_newest)
    end, data = sd.size, sd.data
    if limit is not None and limit < HEADER_SIZE:
        limit = None
    start = HEADER_SIZE if limit is None else None
    if not scan:                  # no records to read (an empty or short file)
        return n, min(HEADER_SIZE if limit is None else limit, end)
    walk: Callable | None = _kernel.diff_walk if _C else None
    pos = dropped = HEADER_SIZE
    while pos < end:
        if walk is not None:
            noting = start is not None
            stop = min(end, pos + _WINDOW)  # a window at a time, its pages dropped after it: memory stays flat
            pos, k, why = walk(data, pos, stop, end if noting else limit, packed if noting else b"")
            n += k
            if pos - dropped >= _WINDOW:
                drop_pages(data, dropped, pos)
                dropped = pos
            if why == 0:
                if pos >= end:
                    break
                continue
            if why == 1:          # the record holding byte `limit`: noting starts here
                start = pos
                continue
        ev = next(iter(reader.segment_events(sd, n, is_newest, start=pos, zone_warned=True)), None)
        if ev is None:
            break
        nxt = ev.offset + ev.length if ev.__class__ is Record else (ev.resumes_at or end)
        if start is None and nxt > limit:
            start = pos
        if ev.__class__ is Record:
            c = ev.command
            if start is not None and c is not None and c.job_id in want:
                seen[c.job_id] = (ev, n)
            n += 1
        pos = nxt
    return n, end if start is None else start


def _at_rest(job) -> dict:
    row = job.canonical()
    row.pop("expires_ns")
    row.pop("lease_expires_ns")
    return row


class _UpTo(WorkqReplay):
    """The replay of the records up to an instant (record TIME at or before ``as_of_ns``, replayed at it): the log
    as it stood then. With ``since``: the records in (since, as_of] noted per job (``window``) and counted."""

    def __init__(self, as_of_ns: int, since: int | None):
        super().__init__(as_of_ns)
        self.since = since
        self.window: dict[bytes, list[Change]] = {}
        self.in_window = 0

    def apply(self, rec: Record) -> None:
        t = rec.time.unix_ns
        if t > self.as_of_ns:
            return
        if self.since is not None and t > self.since:
            self.in_window += 1
            c = rec.command
            if c is not None:
                self.window.setdefault(c.job_id, []).append(
                    Change(rec.path, rec.offset, rec.index, rec.time.isoformat(), c.cmd.label))
        super().apply(rec)


def _up_to(log: LogSet, t: int, since: int | None, limit: int | None):
    run = LogRun(log, t, limit=limit)
    run.replay = upto = _UpTo(t, since)
    for _ in run.events():
        pass
    return run.report, upto
