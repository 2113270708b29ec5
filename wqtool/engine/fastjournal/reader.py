"""Discovery and the streaming reader of wqtool's priority-FIFO journal (per the unimplemented libfastjournal
design).

Discovery: a directory's segments ``NNNNNNNNN.fjj`` in numeric order; the newest segment whose header has the
snapshot flag holds the whole state, so replay starts there and the older segments are superseded (an
interrupted pack left them: ``FJJ-SUPERSEDED``, clean removes them). Nothing is locked or changed while reading;
``journal.lock`` held by another process means a server is running (``FJJ-LIVE``).

The reader checks each segment's header, then each record's size (before anything is sliced: at most
``MAX_RECORD_SIZE``), its CRC-32C, and decodes its request with the wire codec; after damage it looks for the
next record whose CRC holds and goes on from there (the verdict says whether anything valid followed).
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats._common import crc32c
from ...formats.fastjournal import (FJ_HEADER_SIZE, FJJ_LOCK, FJJ_MAGIC, FJJ_SEGMENT, FJJ_TEMP_SUFFIX, FJJ_VERSION,
                             FLAG_KEY16, FLAG_OVERWRITE, FLAG_TIMEOUT, MAX_RECORD_SIZE, QUERY_MASK, RECORD_OVERHEAD,
                             RESERVED_FLAGS, SEGMENT_HEADER_SIZE, SEGMENT_SNAPSHOT, VALUE_SIZE_MASK,
                             VALUE_SIZE_SHIFT, Function)
from ..fileio import FileView, input_error, listdir, read_span
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from ..live import is_locked
from . import layout
from .model import OP_DELETE, OP_MARK, OP_OTHER, OP_SET, Change, FjjJournal, Segment
from .wire import BadRequest, WireError, decode_request, frame_request

_HDR, _REC, _CRC, _VALUE = layout.SEGMENT_HEAD_CRC, layout.RECORD_HEAD, layout.CRC, layout.FIFO_VALUE
MIN_RECORD = 8 + FJ_HEADER_SIZE + 1          # applied_at + the smallest request


def read_header(path: str) -> tuple[int, str | None]:
    """(flags, problem) of a segment's header; problem None when it is valid."""
    raw = read_span(path, 0, SEGMENT_HEADER_SIZE)
    return header_problem(raw, _seq_of(path))


def _seq_of(path: str) -> int | None:
    m = FJJ_SEGMENT.match(os.path.basename(path))
    return int(m.group(1)) if m else None


def header_problem(raw: bytes, seq: int | None) -> tuple[int, str | None]:
    if len(raw) < SEGMENT_HEADER_SIZE:
        return 0, f"only {len(raw)} byte(s), a segment header is {SEGMENT_HEADER_SIZE}"
    magic, version, flags, hseq, crc = _HDR.unpack_from(raw)
    if magic != FJJ_MAGIC:
        return 0, f"magic {magic!r}, expected {FJJ_MAGIC!r}"
    if crc32c(raw[:12]) != crc:
        return 0, "header CRC-32C mismatch"
    if version != FJJ_VERSION:
        return flags, f"version {version}, expected {FJJ_VERSION}"
    if seq is not None and hseq != seq:
        return flags, f"the header says segment {hseq}, the name {seq}"
    return flags, None


def discover(paths: Sequence[str]) -> list[FjjJournal]:
    if not paths:
        raise UsageError("no PATH given")
    out: list[FjjJournal] = []
    explicit: dict[str, FjjJournal] = {}
    for p in paths:
        try:
            os.stat(p)
        except OSError as exc:
            raise input_error(p, exc) from None
        if os.path.isdir(p):
            out.append(_discover_dir(p))
            continue
        seq = _seq_of(p)
        if seq is None:
            raise InputError("not a fastjournal segment (expected NNNNNNNNN.fjj)", path=p)
        d = os.path.dirname(p) or "."
        key = os.path.abspath(d)
        if key not in explicit:
            explicit[key] = FjjJournal(root=d, segments=[], is_dir=False)
            out.append(explicit[key])
        flags, _ = read_header(p)
        explicit[key].segments.append(Segment(p, seq, flags))
    for j in explicit.values():
        j.segments.sort(key=lambda s: s.seq)
    return out


def _discover_dir(d: str) -> FjjJournal:
    try:
        names = sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None
    j = FjjJournal(root=d, segments=[])
    segs: list[Segment] = []
    for name in names:
        path = os.path.join(d, name)
        m = FJJ_SEGMENT.match(name)
        if m and os.path.isfile(path):
            flags, _ = read_header(path)
            segs.append(Segment(path, int(m.group(1)), flags))
        elif name == FJJ_LOCK:
            j.live = is_locked(path)
        elif name.startswith(".") and name.endswith(FJJ_TEMP_SUFFIX):
            j.temps.append(path)
            j.findings.append(Finding(WARNING, "FJJ-TEMP-FILE", "temp file of an interrupted pack (not replayed); "
                                      "wqtool clean removes it", path=path))
        else:
            j.findings.append(Finding(WARNING, "FJJ-FOREIGN-FILE", f"'{name}' is no part of a fastjournal journal "
                                      "directory", path=path))
    segs.sort(key=lambda s: s.seq)
    snap = max((i for i, s in enumerate(segs) if s.flags & SEGMENT_SNAPSHOT), default=0)
    if snap:
        j.superseded = [s.path for s in segs[:snap]]
        j.findings.append(Finding(WARNING, "FJJ-SUPERSEDED", f"{snap} segment(s) before snapshot "
                                  f"{os.path.basename(segs[snap].path)} are superseded (an interrupted pack): not "
                                  "replayed; wqtool clean removes them", path=segs[snap].path))
    j.segments = segs[snap:]
    for a, b in zip(j.segments, j.segments[1:]):
        if b.seq != a.seq + 1:
            j.findings.append(Finding(WARNING, "FJJ-SEGMENT-GAP", f"segments {a.seq + 1}..{b.seq - 1} are missing: "
                                      "their changes are lost", path=b.path))
    if j.live:
        j.findings.append(Finding(NOTE, "FJJ-LIVE", "journal.lock is held: a server is running; the journal may "
                                  "grow while it is read", path=os.path.join(d, FJJ_LOCK)))
    if not segs:
        j.findings.append(Finding(NOTE, "FJJ-EMPTY", "no segment: an empty FIFO", path=d))
    return j


_SET_HEAD = layout.SET_SHORT_HEAD
_SET_FAST_MASK = FLAG_KEY16 | FLAG_TIMEOUT | QUERY_MASK | RESERVED_FLAGS | VALUE_SIZE_MASK
_SET_FAST_FLAGS = 1 << VALUE_SIZE_SHIFT          # u8 value size, u8 key size, no timeout, a key query


def decode_change(path: str, offset: int, length: int, index: int, applied_at: int, request: bytes) -> Change:
    """A record's request as a change; ``op`` is ``other`` when it is not one the server journals (the replay
    reports it). Raises BadRequest / WireError when the request does not decode exactly.

    The SET the server writes (u8 key size, a 9-byte BUFFER value) is decoded by one ``struct`` call; anything
    else by the wire codec (the tests prove both give the same change)."""
    n = len(request)
    if n >= 30 and request[:2] == b"FJ":
        _m, _v, fn, _i, flags, ts, klen = _SET_HEAD.unpack_from(request)
        if fn == 2 and flags & _SET_FAST_MASK == _SET_FAST_FLAGS and n == 30 + klen \
                and request[19 + klen] == 10 and request[20 + klen] == 1:
            prio, ksd = _VALUE.unpack_from(request, 21 + klen)
            return Change(path, offset, length, index, applied_at, OP_SET, 2, flags, request[19:19 + klen], ts, prio,
                          ksd, None, request)
    return _decode_change(path, offset, length, index, applied_at, request)


def _decode_change(path: str, offset: int, length: int, index: int, applied_at: int, request: bytes) -> Change:
    n = frame_request(request, 0)
    if n is None or n != len(request):
        raise WireError(b"", f"the request is {len(request)} bytes, its fields say {n}")
    r = decode_request(request, 0, n)
    op = OP_OTHER
    prio = ksd = None
    if r.function == Function.SET and r.value is not None and len(r.value) == 9 and r.timeout is None:
        op = OP_SET
        prio, ksd = _VALUE.unpack(r.value)
    elif r.function == Function.DELETE and r.value is None:
        op = OP_DELETE
    elif r.function == Function.GET and r.timeout is not None and r.key:
        op = OP_MARK
    return Change(path, offset, length, index, applied_at, op, r.function, r.flags, r.key, r.timestamp, prio, ksd,
                  r.timeout, request)


class FjjReader:
    def __init__(self, journal: FjjJournal, *, first_index: int = 0, with_discovery: bool = True):
        self.journal = journal
        self.records = self.bytes = self.segments_read = 0
        self._index = first_index
        self._with_discovery = with_discovery

    def events(self) -> Iterator:
        if self._with_discovery:
            yield from self.journal.findings
        segs = self.journal.segments
        for i, s in enumerate(segs):
            yield from self.file_events(s, newest=i == len(segs) - 1)

    def file_events(self, seg: Segment, *, newest: bool = True) -> Iterator:
        with FileView(seg) as view:
            self.segments_read += 1
            self.bytes += view.size
            yield from self._walk(seg, view.data, view.size, newest)

    def _valid_at(self, data, n: int, pos: int) -> bool:
        if n - pos < RECORD_OVERHEAD:
            return False
        size, _ = _REC.unpack_from(data, pos)
        if size < MIN_RECORD - 0 or size > MAX_RECORD_SIZE or pos + 4 + size + 4 > n:
            return False
        return crc32c(bytes(data[pos:pos + 4 + size])) == _CRC.unpack_from(data, pos + 4 + size)[0]

    def _resync(self, data, n: int, start: int) -> int | None:
        for pos in range(start, n - RECORD_OVERHEAD + 1):
            if self._valid_at(data, n, pos):
                return pos
        return None

    def _damage(self, seg, data, n, pos, newest, code, msg, *, scan_from: int | None = None) -> tuple[Finding, int | None]:
        resume = self._resync(data, n, pos + 1 if scan_from is None else scan_from)
        torn = resume is None and newest
        if torn:
            tail = (f"; torn tail: the newest segment is valid up to 0x{pos:x} and nothing valid follows "
                    f"({n - pos} byte(s)); the server truncates it at start-up (never acknowledged)")
        elif resume is None:
            tail = "; nothing valid follows in this segment, and it is not the newest: corrupt"
        else:
            tail = f"; valid records resume at 0x{resume:x} ({resume - pos} byte(s) unreadable)"
        f = Finding(ERROR, code, msg + tail, path=seg.path, offset=pos, record_index=self._index,
                    last_good_offset=pos, verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT, resumes_at=resume,
                    upstream=("wqtool's fastjournal server refuses to start on it" if not torn else
                              "wqtool's fastjournal server truncates it at start-up"))
        return f, resume

    def _walk(self, seg: Segment, data, n: int, newest: bool) -> Iterator:
        _flags, problem = header_problem(bytes(data[:SEGMENT_HEADER_SIZE]), seg.seq)
        if problem is not None:
            f, resume = self._damage(seg, data, n, 0, newest, "FJJ-HEADER", f"bad segment header: {problem}",
                                     scan_from=SEGMENT_HEADER_SIZE if n >= SEGMENT_HEADER_SIZE else n)
            yield f
            if resume is None:
                return
            pos = resume
        else:
            pos = SEGMENT_HEADER_SIZE
        crc = crc32c
        rec_unpack = _REC.unpack_from
        crc_unpack = _CRC.unpack_from
        while pos < n:
            if n - pos < RECORD_OVERHEAD:
                f, resume = self._damage(seg, data, n, pos, newest, "FJJ-TRUNCATED",
                                         f"record cut short: {n - pos} byte(s) left, a record needs at least "
                                         f"{RECORD_OVERHEAD}")
                yield f
                return
            size, applied_at = rec_unpack(data, pos)
            if size < MIN_RECORD or size > MAX_RECORD_SIZE:
                f, resume = self._damage(seg, data, n, pos, newest, "FJJ-SIZE",
                                         f"record size {size} outside {MIN_RECORD}..{MAX_RECORD_SIZE}")
                yield f
                if resume is None:
                    return
                pos = resume
                continue
            end = pos + 4 + size + 4
            if end > n:
                f, resume = self._damage(seg, data, n, pos, newest, "FJJ-TRUNCATED",
                                         f"record cut short: needs {size + 8} bytes, {n - pos} left")
                yield f
                if resume is None:
                    return
                pos = resume
                continue
            body = bytes(data[pos:pos + 4 + size])
            if crc(body) != crc_unpack(data, pos + 4 + size)[0]:
                f, resume = self._damage(seg, data, n, pos, newest, "FJJ-CRC",
                                         f"CRC-32C mismatch: stored {crc_unpack(data, pos + 4 + size)[0]:08x}, "
                                         f"computed {crc(body):08x}")
                yield f
                if resume is None:
                    return
                pos = resume
                continue
            try:
                rec = decode_change(seg.path, pos, end - pos, self._index, applied_at, body[12:])
            except (WireError, BadRequest) as exc:
                yield Finding(ERROR, "FJJ-BAD-REQUEST", f"the record's request does not decode: {exc}",
                              path=seg.path, offset=pos, record_index=self._index, verdict=Verdict.INVALID_HISTORY)
                self._index += 1
                pos = end
                continue
            self._index += 1
            self.records += 1
            yield rec
            pos = end


def overwrite(flags: int) -> bool:
    return bool(flags & FLAG_OVERWRITE)
