"""Walks over a workq log without its replay, in the kernel (``_kernel.walk``, kernel/seek.c): the time span of the
records (``--as-of last|first`` and the metrics' newest record) and dump's seeks and selections.

The C walk frames and checks every record as the scan does (the same frame, the same CRC) and stops at whatever it
does not take whole; the reference reader (``RecordReader.segment_events`` from that offset) reads that one spot —
a record, or damage up to where valid records resume — and the walk goes on after it, as ``FastReplay`` does with
the scan. So a walk sees exactly the records the reference reader yields, numbered as it numbers them
(``tests/engine/workq/test_walk.py`` holds both equal on random and damaged logs).

dump's selection (``select``):

- ``--from-offset FILE@0x…`` starts at the first record at or after that offset of that file: the files before it
  and the bytes before the offset are only walked (framed, checked and counted: the records keep their numbers),
  never decoded nor replayed. A read that starts there judges the bytes it reads, not the history before them: its
  findings are what a reader of those bytes reports (damage, a payload that does not decode), and ``verify``
  judges the history (``REPLAY_CODES``).
- a read from the start replays the log in the kernel (``FastReplay``, through damage) for its error findings —
  damage and refused records, as verify reports them — and walks it for the records the filter may keep
  (``--type``, ``--job``, ``--since``, ``--until`` tested in C); only those are decoded.
- ``--to-offset`` and the record limit stop the reading; the findings told are those inside what was read.
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


#: the spans of the logs walked in this process, by the log object (kept, so its id is not reused): a command
#: asks once for --as-of last and once more for the metrics' newest record, and walks once
_SPANS: dict[int, tuple[LogSet, tuple[int | None, int | None]]] = {}


def time_span(log: LogSet) -> tuple[int | None, int | None]:
    """``Format.time_span`` of a workq log in the kernel: the earliest record time of the first segment that has
    records and the latest of the last such segment (each end walked until a segment has one), once per log."""
    got = _SPANS.get(id(log))
    if got is not None and got[0] is log:
        return got[1]
    span = _time_span(log)
    if len(_SPANS) > 4096:
        _SPANS.clear()
    _SPANS[id(log)] = (log, span)
    return span


def _time_span(log: LogSet) -> tuple[int | None, int | None]:
    reader = RecordReader(log)
    segs, newest = log.segments, log.newest
    first = last = None
    for seg in segs:
        sp = segment_span(reader, seg, seg is newest)
        if sp is not None:
            first = sp[0]
            break
    for seg in reversed(segs):
        sp = segment_span(reader, seg, seg is newest)
        if sp is not None:
            last = sp[1]
            break
    return first, last


# ---------------------------------------------------------------- dump's selection
def _mask(flt) -> int:
    return ALL_KINDS if flt.kinds is None else sum(_BIT.get(k, 0) for k in flt.kinds)


def _ids(flt) -> bytes | None:
    return None if flt.jobs is None else b"".join(sorted(flt.jobs))


def _bounds(flt, order: dict[str, int], k: int) -> tuple[int, int | None] | str:
    """(start, stop) offsets of file number ``k`` under the filter's offset range (stop None: the file's end), or
    "before" / "after" when the file lies before / after the range."""
    start, stop = 0, None
    lo, hi = flt.from_offset, flt.to_offset
    if lo is not None:
        if lo.file is None or order[lo.file] == k:
            start = lo.offset
        elif order[lo.file] > k:
            return "before"
    if hi is not None:
        if hi.file is None or order[hi.file] == k:
            stop = hi.offset
        elif order[hi.file] < k:
            return "after"
    return start, stop


def _payload_findings(rec: Record) -> list[Finding]:
    """The finding of a record whose payload does not decode (the replay makes it, from this record alone)."""
    from .replay import WorkqReplay
    r = WorkqReplay(0)
    r.apply(rec)
    return r.findings


def _before(told: list[Finding], offset: int) -> Iterator[Finding]:
    """The findings of ``told`` (file order) before ``offset``, taken off it."""
    while told and (told[0].offset or 0) < offset:
        yield told.pop(0)


class Selection:
    """dump's read of one workq log in the kernel (see the module's doc). ``prepare()`` first (it raises Bail where
    the kernel cannot take the log, before anything is told); then ``events(limit)`` yields, in file order, the
    records the filter keeps (at most ``limit``) and the error findings inside what was read; ``stopped`` is
    (path, offset) where the read stopped before the log's end (None: it read to the end)."""

    def __init__(self, log: LogSet, as_of_ns: int, flt):
        self.log, self.as_of_ns, self.flt = log, as_of_ns, flt
        self.stopped: tuple[str, int] | None = None
        self._errors: dict[int, list[Finding]] | None = None

    def prepare(self) -> "Selection":
        """A read from the start: the error findings of the kernel's replay (damage and refused records, as verify
        gives them), by segment; a read from an offset replays nothing (the history before it is unknown)."""
        if self.flt.from_offset is None:
            fr = fastreplay.FastReplay(self.log, self.as_of_ns, limit=0, through=True)
            with fastreplay.gc_paused():
                fr.run()
            self._errors = {}
            for sp in fr.spans:
                self._errors.setdefault(sp.seg_no, []).append(sp.finding)
        return self

    def events(self, limit: int | None = None) -> Iterator:
        log, flt, errors = self.log, self.flt, self._errors
        if flt.from_offset is None:
            yield from (f for f in log.findings if f.severity == ERROR)
        walk = fastreplay._kernel.walk
        reader = RecordReader(log)
        kinds, ids, since, until = _mask(flt), _ids(flt), flt.since_ns, flt.until_ns
        order = {os.path.basename(s.path): k for k, s in enumerate(log.segments)}
        newest = log.newest
        kept = index = 0
        for k, seg in enumerate(log.segments):
            is_newest = seg is newest
            b = _bounds(flt, order, k)
            if b == "after":             # past the range: the read stops at this file's first event
                if self.stopped is None:
                    lo = flt.from_offset
                    start = lo.offset if lo is not None and lo.file is None else 0
                    with FileView(seg) as sd:
                        f, scan = header_finding(sd, index, is_newest)
                        if f is not None and start <= 0:
                            self.stopped = (seg.path, 0)
                        elif scan:
                            pos = self._advance(reader, sd, index, is_newest, max(start, HEADER_SIZE))[1]
                            if pos < sd.size:
                                self.stopped = (seg.path, pos)
                return
            told = None if errors is None else errors.pop(k, [])
            with FileView(seg) as sd:
                data, end, path = sd.data, sd.size, sd.path
                f, scan = header_finding(sd, index, is_newest)
                if b == "before":                 # only counted: the records after it keep their numbers
                    if scan:
                        index = self._advance(reader, sd, index, is_newest, end)[0]
                    continue
                start, stop = b
                stop_at = end if stop is None else min(stop, end)
                if told is None and f is not None and f.severity == ERROR and start == 0:
                    yield f
                if scan:
                    pos = HEADER_SIZE
                    if start > pos:
                        index, pos = self._advance(reader, sd, index, is_newest, start)
                    while pos < stop_at:
                        want = -1 if limit is None else limit - kept + 1
                        index, pos, picked, _, _ = walk(data, pos, end, index, stop_at, kinds, ids, since, until,
                                                        False, want)
                        spot = not (pos >= stop_at or len(picked) == want)
                        evs = [next(reader.segment_events(sd, ix, is_newest, start=off, zone_warned=True))
                               for off, ix in picked]
                        if spot:         # the reference reads the spot: one record, or damage (seek: told here)
                            for ev in _spot(reader, sd, pos, index, is_newest):
                                if ev.__class__ is Record:
                                    index += 1
                                    evs.append(ev)
                                    if told is None and ev.command is None:
                                        evs.extend(_payload_findings(ev))
                                elif told is None and ev.severity == ERROR:
                                    evs.append(ev)
                                pos = _after(ev, end)
                        for ev in evs:
                            if told:
                                yield from _before(told, ev.offset)
                            if ev.__class__ is not Record:
                                yield ev
                            elif flt.match(ev):
                                if limit is not None and kept >= limit:
                                    self.stopped = (path, ev.offset)
                                    return
                                kept += 1
                                yield ev
                    if pos < end and stop is not None:        # the first record past the range
                        self.stopped = (path, pos)
                if told:     # the rest of the file's findings (all, when the range runs to its end)
                    yield from _before(told, stop_at if stop_at < end else 1 << 62)
                if f is not None and stop is not None and stop <= 0:   # the header's finding lies past it
                    self.stopped = (path, 0)

    @staticmethod
    def _advance(reader: RecordReader, sd: FileView, index: int, is_newest: bool, start: int) -> tuple[int, int]:
        """Walk (count) the records of ``sd`` that start before ``start``: (the number of the first record at or
        after it, its offset, or the file's end)."""
        walk = fastreplay._kernel.walk
        data, end = sd.data, sd.size
        pos = HEADER_SIZE
        while pos < start and pos < end:
            index, pos, _, _, _ = walk(data, pos, end, index, start, 0, None, None, None, False, -1)
            if pos >= start or pos >= end:
                break
            for ev in _spot(reader, sd, pos, index, is_newest):
                if ev.__class__ is Record:
                    if ev.offset >= start:
                        return index, ev.offset
                    index += 1
                pos = _after(ev, end)
        return index, pos
