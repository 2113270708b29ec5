"""The Kestrel fast path: verify/replay of a file set in one pass of C, through damage, equal to the reference.

The reference is ``JournalReader`` + ``KestrelReplay`` (reader.py, replay.py): a ``Record`` object per record,
handed through generators to ``apply`` — the state machine's rules once in Python. The C loop
(``_kernel.KQueue.scan``, kestrel/_kernel.c: the same rules once in C; items as fixed-size C records, their data
left in the files until the end) decodes and replays each file into a queue, open transactions, the xid counter
and op counts, with ``Item`` objects only for the items still there at the end. Where it meets damage (a record cut
short, a byte that is no opcode, a negative or absurd size) it stops at that offset; the reference reader names
the damage there (the same finding, verdict and "valid records resume at") and the loop goes on where it resumes
— the damage classes read through in one pass, as the reference does. What stays the reference's alone raises
``Bail`` and the caller runs the reference path over the whole file set: no C kernel (``KERNEL`` "python": where it
was not built, or ``WQTOOL_PURE_PYTHON=1``), the legacy opcodes (ADD, opcode-3 REMOVE_TENTATIVE: their meaning
depends on --kestrel-version), a libkestrel file and a reused open xid (invalid history).
``tests/engine/kestrel/test_fastreplay.py`` checks with hypothesis that both paths give the same report and
state digest on random valid, odd and damaged journals.
"""
from __future__ import annotations

import mmap
import os
from collections import Counter, deque
from contextlib import ExitStack

from ...formats.kestrel import LIBKESTREL_READER_MAGIC, LIBKESTREL_WRITER_MAGIC
from ..fileio import FileView
from ..findings import Finding, Verdict, quota
from ..run import FindingSink, LogReport
from .fastpath import Damage, decode_fields
from .reader import ROLE_EXPLICIT, ROLE_LIVE, FileSet, JournalReader

_MAGICS = (LIBKESTREL_WRITER_MAGIC, LIBKESTREL_READER_MAGIC)


class Bail(Exception):
    """The journal needs the reference path."""


try:
    from . import _kernel
except ImportError:          # not built: the reference path does the work
    _kernel = None
#: "c" or "python" (none: fast_run raises Bail, the reference runs; tests switch it)
KERNEL = "c" if _kernel is not None and os.environ.get("WQTOOL_PURE_PYTHON", "") in ("", "0") else "python"


class _Findings(list):
    """The first ``limit`` findings of each quota (``findings.quota``: errors, warnings, notes); the rest only
    counted by (code, severity): memory follows the queue."""

    def __init__(self, limit: int | None):
        super().__init__()
        self.limit = limit
        self.kept: Counter = Counter()
        self.overflow: Counter = Counter()
        self.verdicts: set = set()          # what the report needs of the errors only counted
        self.last_good: tuple | None = None

    def append(self, f: Finding) -> None:
        q = quota(f)
        if self.limit is None or self.kept[q] < self.limit:
            self.kept[q] += 1
            list.append(self, f)
        else:
            self.overflow[(f.code, f.severity)] += 1
            if f.verdict:
                self.verdicts.add(f.verdict)
                if f.verdict == Verdict.TORN_TAIL:
                    self.last_good = (f.path, f.last_good_offset)


def fast_run(fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
             kestrel_version: str | None = None, no_checksum: Finding | None = None, resync: bool = True) -> LogReport:
    """verify + replay of a file set (``verify.run_log`` without ``on_record``), through damage (``resync``: as the
    reference reader, read on where records resume, else stop reading the file); raises Bail."""
    return fast_pass(fileset, as_of_ns, limit=limit, keep_open=keep_open, kestrel_version=kestrel_version,
                     no_checksum=no_checksum, resync=resync)[0]


def fast_pass(fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
              kestrel_version: str | None = None, no_checksum: Finding | None = None, resync: bool = True,
              series=None) -> tuple[LogReport, list[int], list[int]]:
    """``fast_run``'s pass: (its report, the records by opcode, their bytes by opcode). ``series``: a
    ``_kernel.SeriesAcc`` fed every record and every finding in stream order (kestrel/series.py); raises Bail."""
    if KERNEL != "c":
        raise Bail
    # imported here: dump's seeks and walks (walk.py) import this module and never replay
    from .replay import Item, KestrelReplay
    rp = KestrelReplay(as_of_ns, version=kestrel_version or fileset.kestrel_version)
    found = _Findings(limit)
    if series is not None:
        def add(f: Finding, _append=found.append, _mark=series.finding) -> None:
            _mark(f.code, f.severity, f.path, f.offset)
            _append(f)
    else:
        add = found.append
    for f in fileset.findings:
        add(f)
    index = nbytes = segments = 0
    paths: list[str] = []
    reader = JournalReader(fileset, resync=resync)    # names the damage the C loop stops at
    newest = fileset.files[-1] if fileset.files else None
    with ExitStack() as stack:      # the items' data stays in the files until the end
        kq = _kernel.KQueue()
        views = []
        for jf in fileset.files:
            sd = stack.enter_context(FileView(jf))
            views.append(sd.data)
            segments += 1
            nbytes += sd.size
            paths.append(sd.path)
            data, end = sd.data, sd.size
            if end >= 4 and bytes(data[:4]) in _MAGICS:
                raise Bail
            is_live = jf is newest and jf.role in (ROLE_LIVE, ROLE_EXPLICIT)
            pos = 0
            while True:
                index, pos = kq.scan(data, pos, end, sd.path, len(paths) - 1, index, found, series)
                if pos >= end:
                    break
                try:
                    decode_fields(data, pos, end)
                except Damage as d:
                    f = reader._damage(d, data, pos, end, sd.path, index, is_live, newest)
                    add(f)
                    if f.resumes_at is None:
                        break
                    pos = f.resumes_at
                    continue
                raise Bail                    # a whole record the loop does not take (legacy opcode, reused xid)
            if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                data.madvise(mmap.MADV_DONTNEED)   # out of our RSS (still cached): the live items' pages
                                                   # come back when their data is read at the end
        q, o, rp.counter, rp.op_counts, rp.applied = kq.export(views, paths, Item)
        op_bytes = kq.op_bytes()
        rp.queue = deque(q)
        rp.open = dict(o)
    rp.records = index
    rp.findings = []
    state = rp.finish(keep_open=keep_open)
    closing = [*rp.findings]
    if no_checksum is not None:
        closing.append(no_checksum)
    if series is not None:
        for f in closing:
            series.finding(f.code, f.severity, f.path, f.offset)
    report = LogReport(root=fileset.label, segments=segments, records=index,
                       bytes=nbytes, state=state)
    sink = FindingSink(report, limit)
    for f in found:
        sink.add(f)
    for f in closing:
        sink.add(f)
    for (code, severity), n in found.overflow.items():
        report.counts[code] += n
        report.severities[severity] += n
    sink.verdicts |= found.verdicts
    if found.last_good is not None:
        report.last_good = found.last_good
    sink.close()
    return report, list(rp.op_counts), op_bytes


def _file_span(fileset: FileSet, i: int) -> tuple[int, int] | None:
    """(earliest, latest) add time (ns) of the records the reference reader yields in file ``i`` (as
    ``Passes.file_events`` reads it: on its own), or None; the C loop frames (``_kernel.walk``), the reference
    reader reads each spot it stops at (damage: where records resume; a legacy record: its fields)."""
    jf = fileset.files[i]
    reader = JournalReader(fileset)
    lo = hi = None
    with FileView(jf) as sd:
        data, end = sd.data, sd.size
        if end >= 4 and bytes(data[:4]) in _MAGICS:
            raise Bail
        pos = 0
        while pos < end:
            _, pos, _, a, b = _kernel.walk(data, pos, end, 0, None, 0, -1)
            if a is not None:
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
            if pos >= end:
                break
            try:
                fields = decode_fields(data, pos, end)
            except Damage as d:
                f = reader._damage(d, data, pos, end, sd.path, 0, False, None)
                if f.resumes_at is None:
                    break
                pos = f.resumes_at
                continue
            t = fields[2]
            if t:
                lo = t if lo is None or t < lo else lo
                hi = t if hi is None or t > hi else hi
            pos = fields[-1]
    return None if lo is None else (lo * 1_000_000, hi * 1_000_000)


def time_span(fileset: FileSet) -> tuple[int | None, int | None]:
    """``Passes.time_span`` in the C loop (--as-of first|last: the first file with timed records read from its
    start, the last from the end); raises Bail (no kernel, a libkestrel file): the reference does it."""
    if KERNEL != "c":
        raise Bail
    n = len(fileset.files)
    first = next((sp[0] for sp in (_file_span(fileset, i) for i in range(n)) if sp is not None), None)
    last = next((sp[1] for sp in (_file_span(fileset, i) for i in reversed(range(n))) if sp is not None), None)
    return first, last


__all__ = ["Bail", "fast_pass", "fast_run", "time_span"]
