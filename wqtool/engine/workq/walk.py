"""Walks over a workq log without its replay, in the kernel (``_kernel.walk``, kernel/seek.c): the time span of the
records (``--as-of last|first`` and the metrics' newest record) and dump's seeks and selections.

The C walk frames and checks every record as the scan does (the same frame, the same CRC) and stops at whatever it
does not take whole; the reference reader (``RecordReader.segment_events`` from that offset) reads that one spot —
a record, or damage up to where valid records resume — and the walk goes on after it, as ``FastReplay`` does with
the scan. So a walk sees exactly the records the reference reader yields, numbered as it numbers them
(``tests/engine/workq/test_walk.py`` holds both equal on random and damaged logs).

dump's selection: ``WorkqWalker``, driven by ``engine.walk.Selection`` (its doc says what a seek reads and tells).
"""
from __future__ import annotations

import os
from typing import Iterator

from ...formats.workq import HEADER_SIZE, CmdType
from ..findings import ERROR, Finding
from . import fastreplay
from .model import Record
from .reader import FileView, LogSet, RecordReader, header_finding

#: every command's bit in walk's ``kinds`` mask
ALL_KINDS = sum(1 << int(c) for c in CmdType)
_BIT = {c.label: 1 << int(c) for c in CmdType}


def available() -> bool:
    """Whether the C walk runs (the kernel is built and not switched off)."""
    return fastreplay.KERNEL == "c" and fastreplay._kernel is not None


def _spot(reader: RecordReader, sd: FileView, pos: int, index: int, is_newest: bool) -> Iterator:
    """The reference reader's events at ``pos``, where the C walk stopped: warnings, then one record or one error
    finding (the damage, up to where valid records resume)."""
    for ev in reader.segment_events(sd, index, is_newest, start=pos, zone_warned=True):
        yield ev
        if ev.__class__ is Record or ev.severity == ERROR:
            return


def _after(ev, end: int) -> int:
    """Where reading goes on after a spot's last event."""
    if ev.__class__ is Record:
        return ev.offset + ev.length
    return end if ev.resumes_at is None else ev.resumes_at


# ---------------------------------------------------------------- the time span (--as-of last|first)
def segment_span(reader: RecordReader, seg, is_newest: bool) -> tuple[int, int] | None:
    """(earliest, latest) time of the records the reference reader yields in ``seg``, or None (no record)."""
    walk = fastreplay._kernel.walk
    with FileView(seg) as sd:
        _, scan = header_finding(sd, 0, is_newest)
        if not scan:
            return None
        data, end = sd.data, sd.size
        lo = hi = None
        pos = HEADER_SIZE
        while pos < end:
            _, pos, _, a, b = walk(data, pos, end, 0, None, 0, None, None, None, True, -1)
            if a is not None:
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
            if pos >= end:
                break
            for ev in _spot(reader, sd, pos, 0, is_newest):
                if ev.__class__ is Record:
                    t = ev.time.unix_ns
                    lo = t if lo is None or t < lo else lo
                    hi = t if hi is None or t > hi else hi
                pos = _after(ev, end)
    return None if lo is None else (lo, hi)


#: the ends walked in this process, by the log object (kept, so its id is not reused) and the files' sizes and
#: mtimes when walked: a command asks once for --as-of last and once more for the metrics' newest record, and walks
#: once; each end is walked only when asked for (``--as-of last`` never reads the first segment); a log that changed
#: since (an API caller's loop over a live log) is walked again
_SPANS: dict[int, tuple[LogSet, tuple, dict[str, int | None]]] = {}


def _stamp(log: LogSet) -> tuple:
    out = []
    for s in log.segments:
        try:
            st = os.stat(s.path)
        except OSError:
            return ()
        out.append((st.st_size if s.pinned_size is None else min(st.st_size, s.pinned_size), st.st_mtime_ns,
                    st.st_ino))
    return tuple(out)


def time_span(log: LogSet, end: str | None = None) -> tuple[int | None, int | None]:
    """``Passes.time_span`` of a workq log in the kernel: the earliest record time of the first segment that has
    records and the latest of the last such segment (each end walked until a segment has one; with ``end``, only
    that end: the other is None), once per log and state of its files."""
    stamp = _stamp(log)
    got = _SPANS.get(id(log))
    if got is None or got[0] is not log or got[1] != stamp or not stamp:
        if len(_SPANS) > 4096:
            _SPANS.clear()
        got = _SPANS[id(log)] = (log, stamp, {})
    ends = got[2]
    for e in ("first", "last") if end is None else (end,):
        if e not in ends:
            _walk_end(log, e, ends)
    return ends.get("first"), ends.get("last")


def _walk_end(log: LogSet, end: str, ends: dict) -> None:
    """Walk from ``end`` of ``log`` to the first segment with records, and note that end's time."""
    reader = RecordReader(log)
    segs, newest = log.segments, log.newest
    order = segs if end == "first" else list(reversed(segs))
    for seg in order:
        sp = segment_span(reader, seg, seg is newest)
        if sp is not None:
            ends[end] = sp[0] if end == "first" else sp[1]
            return
    ends["first"] = ends["last"] = None     # no segment has records


# ---------------------------------------------------------------- dump's selection (engine.walk.Selection)
class WorkqWalker:
    """``engine.walk.Walker`` of a workq log: the C walk (kernel/seek.c) with the filter's kinds, jobs and times,
    the reference reader at its spots, the kernel's replay (``FastReplay``, through damage) for a read from the
    start."""

    def __init__(self, log: LogSet, as_of_ns: int, flt):
        self.log, self.as_of_ns = log, as_of_ns
        self.files, self.findings = log.segments, log.findings
        self.reader = RecordReader(log)
        self.kinds = ALL_KINDS if flt.kinds is None else sum(_BIT.get(k, 0) for k in flt.kinds)
        self.ids = None if flt.jobs is None else b"".join(sorted(flt.jobs))
        self.since, self.until = flt.since_ns, flt.until_ns

    def head(self, sd: FileView, index: int, is_newest: bool):
        f, scan = header_finding(sd, index, is_newest)
        return f, scan, HEADER_SIZE

    def walk(self, sd: FileView, pos: int, index: int, stop, want: int, pick: bool):
        if pick:
            index, pos, picked, _, _ = fastreplay._kernel.walk(sd.data, pos, sd.size, index, stop, self.kinds | 1,
                                                               self.ids, self.since, self.until, False, want)
            return index, pos, picked
        index, pos, _, _, _ = fastreplay._kernel.walk(sd.data, pos, sd.size, index, stop, 0, None, None, None,
                                                      False, -1)
        return index, pos, []

    def record_at(self, sd: FileView, offset: int, index: int, is_newest: bool):
        return next(self.reader.segment_events(sd, index, is_newest, start=offset, zone_warned=True))

    def spot(self, sd: FileView, pos: int, index: int, is_newest: bool) -> tuple[list, int]:
        found = list(_spot(self.reader, sd, pos, index, is_newest))
        last = found[-1]
        if last.__class__ is Record and last.command is None:
            found.extend(_payload_findings(last))
        return found, _after(last, sd.size)

    def errors(self) -> dict[int, list[Finding]]:
        fr = fastreplay.FastReplay(self.log, self.as_of_ns, limit=0, through=True)
        with fastreplay.gc_paused():
            fr.run()
        out: dict[int, list[Finding]] = {}
        for sp in fr.spans:
            out.setdefault(sp.seg_no, []).append(sp.finding)
        return out


def _payload_findings(rec: Record) -> list[Finding]:
    """The finding of a record whose payload does not decode (the replay makes it, from this record alone)."""
    from .replay import WorkqReplay
    r = WorkqReplay(0)
    r.apply(rec)
    return r.findings
