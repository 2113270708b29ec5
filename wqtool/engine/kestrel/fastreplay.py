"""The hot path of Kestrel verify/replay for intact journals, proven equal to the reference path.

The reference is ``JournalReader`` + ``KestrelReplay`` (reader.py, replay.py): a ``Record`` object per record,
handed through generators to ``apply``. This path decodes and replays in one loop over each file's bytes into the
same ``KestrelReplay`` (its queue, open transactions, xid counter, op counts, findings), with items kept as
tuples until the end (``Item`` objects only for the items still there) — and only for what an intact 2.x journal
holds: the modern opcodes, removes on an empty queue and unknown xids (warnings). Damage, the legacy opcodes
(ADD, opcode-3 REMOVE_TENTATIVE: their meaning depends on --kestrel-version), a libkestrel file and a reused
open xid raise ``Bail`` and the caller runs the reference path over the whole file set.
``tests/engine/kestrel/test_fastreplay.py`` checks with hypothesis that both paths give the same report and
state digest on random valid, odd and damaged journals.

The loop has two implementations doing exactly the same thing: ``_scan`` below and the optional C extension
``_kernel.KQueue.scan`` (kestrel/_kernel.c: items as fixed-size C records, the data left in the files until the
end), used when it is built unless ``WQTOOL_PURE_PYTHON=1``; ``KERNEL`` says which.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections import Counter, deque
from contextlib import ExitStack

from ...formats.kestrel import LIBKESTREL_READER_MAGIC, LIBKESTREL_WRITER_MAGIC
from ..fileio import FileView
from ..findings import Finding
from ..run import FindingSink, LogReport
from . import fastpath
from .reader import FileSet
from .replay import (_CONTINUE_UNKNOWN, Item, KestrelReplay, KestrelState, continue_xid0_finding, empty_finding,
                     unknown_xid_finding)

_I32, _IQQ, _IIQQ = (s.unpack_from for s in (fastpath._I32, fastpath._IQQ, fastpath._IIQQ))   # one set of layouts
_MAGICS = (LIBKESTREL_WRITER_MAGIC, LIBKESTREL_READER_MAGIC)


class Bail(Exception):
    """The journal needs the reference path."""


try:
    from . import _kernel
except ImportError:          # not built: the Python loop does the work
    _kernel = None
#: "c" or "python": the loop fast_run uses (tests switch it)
KERNEL = "c" if _kernel is not None and os.environ.get("WQTOOL_PURE_PYTHON", "") in ("", "0") else "python"


class _Findings(list):
    """The first ``limit`` findings; the rest only counted by (code, severity): memory follows the queue."""

    def __init__(self, limit: int | None):
        super().__init__()
        self.limit = limit
        self.overflow: Counter = Counter()

    def append(self, f: Finding) -> None:
        if self.limit is None or len(self) < self.limit:
            list.append(self, f)
        else:
            self.overflow[(f.code, f.severity)] += 1


def fast_run(fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
             kestrel_version: str | None = None, no_checksum: Finding | None = None) -> LogReport:
    """verify + replay of an intact file set (``verify.run_log`` without ``on_record``); raises Bail."""
    rp = KestrelReplay(as_of_ns, version=kestrel_version or fileset.kestrel_version)
    found = _Findings(limit)
    for f in fileset.findings:
        found.append(f)
    index = nbytes = segments = 0
    paths: list[str] = []
    if KERNEL == "c":
        with ExitStack() as stack:      # the items' data stays in the files until the end
            kq = _kernel.KQueue()
            views = []
            for jf in fileset.files:
                sd = stack.enter_context(FileView(jf))
                views.append(sd.data)
                segments += 1
                nbytes += sd.size
                paths.append(sd.path)
                if sd.size >= 4 and bytes(sd.data[:4]) in _MAGICS:
                    raise Bail
                index = kq.scan(sd.data, sd.size, sd.path, len(paths) - 1, index, found)
                if isinstance(sd.data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                    sd.data.madvise(mmap.MADV_DONTNEED)   # out of our RSS (still cached): the live items' pages
                                                          # come back when their data is read at the end
            q, o, rp.counter, rp.op_counts, rp.applied = kq.export(views, paths, Item)
            rp.queue = deque(q)
            rp.open = dict(o)
    else:
        queue: deque = deque()
        opened: dict[int, tuple] = {}
        for jf in fileset.files:
            with FileView(jf) as sd:
                segments += 1
                nbytes += sd.size
                paths.append(sd.path)
                index = _scan(rp, queue, opened, sd.data, sd.size, sd.path, len(paths) - 1, index, found)
        # the items still there, as Item objects (xid: the one they were opened with, else what ADD_XID stored)
        rp.queue = deque(Item(a, e, d, x, paths[f], o) for a, e, d, x, o, f in queue)
        rp.open = {k: Item(a, e, d, x, paths[f], o) for k, (a, e, d, x, o, f) in opened.items()}
    rp.records = index
    rp.findings = []
    state = rp.finish(keep_open=keep_open)
    closing = [*rp.findings]
    if no_checksum is not None:
        closing.append(no_checksum)
    report = LogReport(root=fileset.live_path if fileset.is_dir else fileset.root, segments=segments, records=index,
                       bytes=nbytes, state=state)
    sink = FindingSink(report, limit)
    for f in found:
        sink.add(f)
    for f in closing:
        sink.add(f)
    for (code, severity), n in found.overflow.items():
        report.counts[code] += n
        report.severities[severity] += n
    sink.close()
    return report


def _scan(rp: KestrelReplay, queue: deque, opened: dict, data, end: int, path: str, fno: int, index: int,
          out: _Findings) -> int:  # noqa: C901 — the hot loop
    """Decode and apply ``data[0:end]``; returns the next record index. Items are (add_time, expiry, data, xid,
    offset, file number)."""
    if end >= 4 and bytes(data[:4]) in _MAGICS:
        raise Bail
    counts = rp.op_counts
    applied = 0
    append, popleft, appendleft = queue.append, queue.popleft, queue.appendleft
    pop = opened.pop
    i32, iqq, iiqq = _I32, _IQQ, _IIQQ
    pos = 0
    try:
        while pos < end:
            c = data[pos]
            rem = end - pos
            if c == 2:                                   # ADDX
                if rem < 5:
                    raise Bail
                size, add_time, expiry = iqq(data, pos + 1)
                if size < 16 or size > rem - 5:
                    raise Bail
                nxt = pos + 5 + size
                append((add_time, expiry, bytes(data[pos + 21:nxt]), 0, pos, fno))
                applied += 1
            elif c == 1:                                 # REMOVE
                nxt = pos + 1
                if queue:
                    popleft()
                    applied += 1
                else:
                    out.append(empty_finding(path, pos, index, "REMOVE"))
            elif c == 9:                                 # REMOVE_TENTATIVE_XID
                if rem < 5:
                    raise Bail
                xid = i32(data, pos + 1)[0]
                nxt = pos + 5
                if queue:
                    if xid in opened:
                        raise Bail                       # KQ-XID-REUSED: an error, the reference reports it
                    a, e, d, _, o, f = popleft()
                    opened[xid] = (a, e, d, xid, o, f)
                    rp.counter = xid
                    applied += 1
                else:
                    rp.counter = xid
                    out.append(empty_finding(path, pos, index, f"REMOVE_TENTATIVE_XID {xid}"))
            elif c == 6:                                 # CONFIRM_REMOVE
                if rem < 5:
                    raise Bail
                xid = i32(data, pos + 1)[0]
                nxt = pos + 5
                if pop(xid, None) is None:
                    out.append(unknown_xid_finding(path, pos, index, "CONFIRM_REMOVE", xid))
                else:
                    applied += 1
            elif c == 5:                                 # UNREMOVE
                if rem < 5:
                    raise Bail
                xid = i32(data, pos + 1)[0]
                nxt = pos + 5
                item = pop(xid, None)
                if item is None:
                    out.append(unknown_xid_finding(path, pos, index, "UNREMOVE", xid))
                else:
                    appendleft(item)
                    applied += 1
            elif c == 8 or c == 7:                       # CONTINUE, ADD_XID
                if rem < 25:                             # too short for any valid item
                    raise Bail
                xid, size, add_time, expiry = iiqq(data, pos + 1)
                if size < 16 or size > rem - 9:
                    raise Bail
                nxt = pos + 9 + size
                if c == 8:
                    if xid == 0:
                        out.append(continue_xid0_finding(path, pos, index))
                    if pop(xid, None) is None:
                        out.append(unknown_xid_finding(path, pos, index, "CONTINUE", xid, *_CONTINUE_UNKNOWN))
                    append((add_time, expiry, bytes(data[pos + 25:nxt]), 0, pos, fno))
                else:
                    append((add_time, expiry, bytes(data[pos + 25:nxt]), xid, pos, fno))
                applied += 1
            elif c == 4:                                 # SAVE_XID
                if rem < 5:
                    raise Bail
                rp.counter = i32(data, pos + 1)[0]
                nxt = pos + 5
                applied += 1
            else:                                        # legacy ADD / REMOVE_TENTATIVE, or not an opcode
                raise Bail
            counts[c] += 1
            index += 1
            pos = nxt
    except (IndexError, struct.error):
        raise Bail from None
    rp.applied += applied
    return index


__all__ = ["Bail", "KestrelState", "fast_run"]
