"""dump's selection over a format's kernel walk, for every format that has one (``Dump.select_records``).

A format's ``Walker`` frames and checks its records in C without replaying them (workq: ``engine/workq/walk.py``,
kernel/seek.c; Kestrel: ``engine/kestrel/walk.py``, kestrel/_kernel.c) and hands every spot it does not take whole —
damage, an odd record — to its reference reader. ``Selection`` drives it for ``engine.dump.Records``:

- ``--from-offset FILE@0x…`` starts at the first record at or after that offset of that file: the files before it and
  the bytes before the offset are only walked (framed, checked and counted: the records keep their numbers), never
  decoded nor replayed. A read that starts there judges the bytes it reads, not the history before them: its
  findings are what a reader of those bytes reports (damage, a record that does not decode); ``verify`` judges the
  history.
- a read from the start takes its error findings from the format's kernel replay (``Walker.errors``: damage and
  refused records, as verify reports them) and walks the log for the records the filter may keep (``--type``,
  ``--job``, ``--since``, ``--until`` tested in C); only those are decoded, and the filter has the last word.
- ``--to-offset`` and the record limit stop the reading; the findings told are those inside what was read, and
  ``stopped`` says where the read ended before the log's end.
"""
from __future__ import annotations

import os
from typing import Any, Iterator, Protocol

from .fileio import FileView
from .findings import ERROR, Finding


class Walker(Protocol):
    """What a format gives ``Selection`` (one log, one filter)."""

    files: list            # the log's file sources (``FileView``), in order
    findings: list         # the log's own findings (discovery), told first on a read from the start

    def head(self, sd: FileView, index: int, is_newest: bool) -> tuple[Finding | None, bool, int]:
        """(the file's header finding or None, whether it has records to read, where the first one starts)."""

    def walk(self, sd: FileView, pos: int, index: int, stop: int | None, want: int, pick: bool
             ) -> tuple[int, int, list]:
        """The C walk from ``pos``: (index, pos, [(offset, index)] of the records the filter may keep — none unless
        ``pick`` — at most ``want``, -1: any number); it stops at ``stop``, at the file's end, after ``want`` picks,
        or at a spot it does not take (damage, an odd record) for ``spot``."""

    def record_at(self, sd: FileView, offset: int, index: int, is_newest: bool) -> Any:
        """The record the walk picked at ``offset``, decoded by the reference reader."""

    def spot(self, sd: FileView, pos: int, index: int, is_newest: bool) -> tuple[list, int]:
        """The reference reader's events where the walk stopped — findings, then one record (and its own findings:
        a payload that does not decode) or one error finding (damage) — and where reading goes on after them."""

    def errors(self) -> dict[int, list[Finding]]:
        """A read from the start: the kernel replay's error findings by file number, in file order. Raises the
        format's Bail where its kernel cannot take the log."""


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


def _before(told: list[Finding], offset: int) -> Iterator[Finding]:
    """The findings of ``told`` (file order) before ``offset``, taken off it."""
    while told and (told[0].offset or 0) < offset:
        yield told.pop(0)


class Selection:
    """dump's read of one log through its format's ``Walker`` (see the module's doc). ``prepare()`` first (it raises
    the format's Bail where the kernel cannot take the log, before anything is told); then ``events(limit)``
    yields, in file order, the records the filter keeps (at most ``limit``) and the error findings inside what was
    read; ``stopped`` is (path, offset) where the read stopped before the log's end (None: it read to the end)."""

    def __init__(self, walker: Walker, flt, record_cls):
        self.w, self.flt, self.record_cls = walker, flt, record_cls
        self.stopped: tuple[str, int] | None = None
        self._errors: dict[int, list[Finding]] | None = None

    def prepare(self) -> "Selection":
        if self.flt.from_offset is None:      # from an offset, the history before it is unknown: nothing replayed
            self._errors = self.w.errors()
        return self

    def events(self, limit: int | None = None) -> Iterator:
        w, flt, errors, cls = self.w, self.flt, self._errors, self.record_cls
        if flt.from_offset is None:
            yield from (f for f in w.findings if f.severity == ERROR)
        order = {os.path.basename(s.path): k for k, s in enumerate(w.files)}
        newest = w.files[-1] if w.files else None
        kept = index = 0
        for k, src in enumerate(w.files):
            is_newest = src is newest
            b = _bounds(flt, order, k)
            if b == "after":             # past the range: the read stops at this file's first event
                if self.stopped is None:
                    self._stop_in(src, index, is_newest)
                return
            told = None if errors is None else errors.pop(k, [])
            with FileView(src) as sd:
                end, path = sd.size, sd.path
                f, scan, pos = w.head(sd, index, is_newest)
                if b == "before":                 # only counted: the records after it keep their numbers
                    if scan:
                        index = self._advance(sd, index, is_newest, pos, end)[0]
                    continue
                start, stop = b
                stop_at = end if stop is None else min(stop, end)
                if told is None and f is not None and f.severity == ERROR and start == 0 and (stop is None or stop > 0):
                    yield f
                if scan:
                    if start > pos:
                        index, pos = self._advance(sd, index, is_newest, pos, start)
                    while pos < stop_at:
                        want = -1 if limit is None else limit - kept + 1
                        index, pos, picked = w.walk(sd, pos, index, stop_at, want, True)
                        evs = [w.record_at(sd, off, ix, is_newest) for off, ix in picked]
                        if not (pos >= stop_at or len(picked) == want):
                            found, pos = w.spot(sd, pos, index, is_newest)    # one record, or damage
                            for ev in found:
                                if ev.__class__ is cls:
                                    index += 1
                                    evs.append(ev)
                                elif told is None and ev.severity == ERROR:
                                    evs.append(ev)
                        for ev in evs:
                            if told:
                                yield from _before(told, ev.offset)
                            if ev.__class__ is not cls:
                                yield ev
                            elif flt.match(ev):
                                if limit is not None and kept >= limit:
                                    self.stopped = (path, ev.offset)
                                    return
                                kept += 1
                                yield ev
                    if pos < end and stop is not None:        # the first record past the range
                        self.stopped = (path, pos)
                        if flt.to_offset.file is None:          # later files are read: count the rest
                            index = self._advance(sd, index, is_newest, pos, end)[0]
                if told:     # the rest of the file's findings (all, when the range runs to its end)
                    yield from _before(told, 1 << 62 if stop is None or stop > end else stop_at)
                if f is not None and stop is not None and stop <= 0:   # the header's finding lies past it
                    self.stopped = (path, 0)

    def _stop_in(self, src, index: int, is_newest: bool) -> None:
        """``stopped`` at the first event of a file past the range (at or after the range's start in it)."""
        lo = self.flt.from_offset
        start = lo.offset if lo is not None and lo.file is None else 0
        with FileView(src) as sd:
            f, scan, first = self.w.head(sd, index, is_newest)
            if f is not None and start <= 0:
                self.stopped = (sd.path, 0)
            elif scan:
                pos = self._advance(sd, index, is_newest, first, max(start, first))[1]
                if pos < sd.size:
                    self.stopped = (sd.path, pos)

    def _advance(self, sd: FileView, index: int, is_newest: bool, pos: int, start: int) -> tuple[int, int]:
        """Walk (count) the records of ``sd`` from ``pos`` that start before ``start``: (the number of the first
        record at or after it, its offset, or the file's end)."""
        w, end, cls = self.w, sd.size, self.record_cls
        while pos < start and pos < end:
            index, pos, _ = w.walk(sd, pos, index, start, -1, False)
            if pos >= start or pos >= end:
                break
            found, nxt = w.spot(sd, pos, index, is_newest)
            for ev in found:
                if ev.__class__ is cls:
                    if ev.offset >= start:
                        return index, ev.offset
                    index += 1
            pos = nxt
        return index, pos
