"""Segment discovery and the streaming record reader — the one place bytes become records or findings.

Memory stays bounded whatever the file size: segments are mmapped read-only, SIZE is checked against the
sane cap and the bytes that remain before anything is sliced, and every varint read is bounded to 10 bytes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from collections.abc import Iterator, Sequence    # (not typing: serve imports this before its first reply)

try:                    # the kernel's CRC-32C (SSE4.2 where the CPU has it), loaded by the walks anyway
    from . import _kernel
    _crc = _kernel.crc32c
except ImportError:     # not built: google-crc32c
    from google_crc32c import value as _crc

from ...errors import InputError, InvalidPayload, UnknownOpcode, UsageError
from ..fileio import FileView, input_error, listdir
from .rules import has_siblings   # (there: serve checks it without importing this module)
from ...formats.workq import (RECORD_CRC_STRUCT, HEADER_BYTES, HEADER_STRUCT, HEADER_SIZE, JOB_ID_SIZE, LOCK_FILES, MAGIC,
                              SIZE_CAP, CmdType, segment_seq)
from .fastpath import decode_payload
from ..findings import ERROR, WARNING, Finding, Verdict
from .model import Record
from ...formats._common import GO_TIME_STRUCT, GoTime

_U32 = RECORD_CRC_STRUCT
_TIME = GO_TIME_STRUCT
_MAX_SEC = 315537897599  # 9999-12-31T23:59:59Z in seconds since year 1

UP_REFUSE = "workq-server would refuse to start: "


@dataclass(frozen=True, slots=True)
class Segment:
    path: str
    seq: int | None       # None: a file named explicitly that upstream would not take as a segment
    pinned_size: int | None = None  # --horizon: the size at start


@dataclass(slots=True)
class LogSet:
    """One log: the segments of one directory, in upstream's order, and what discovery noticed."""

    root: str
    segments: list[Segment]
    findings: list[Finding] = field(default_factory=list)
    is_dir: bool = True

    @property
    def newest(self) -> Segment | None:
        return self.segments[-1] if self.segments else None


def _stat_size(path: str) -> int:
    return os.stat(path).st_size


def discover(paths: Sequence[str], *, horizon: bool = False) -> list[LogSet]:
    """Resolve PATHs (directories, segment files, or several) into logs, one per directory.

    Directories are scanned with upstream's rules; files named explicitly are taken as segments of their
    directory's log (a name upstream would ignore gets a warning). Nothing is ever silently skipped.
    """
    if not paths:
        raise UsageError("no PATH given")
    logs: list[LogSet] = []
    by_dir: dict[str, LogSet] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError as exc:
            raise (interrupted_missing(p) or input_error(p, exc)) from None
        if os.path.isdir(p):
            logs.append(_discover_dir(p, horizon))
            continue
        parent = os.path.dirname(os.path.abspath(p))
        log = by_dir.get(parent)
        if log is None:
            log = LogSet(root=os.path.dirname(p) or ".", segments=[], is_dir=False)
            by_dir[parent] = log
            logs.append(log)
        seq = segment_seq(os.path.basename(p))
        if seq is None:
            log.findings.append(Finding(WARNING, "WQ-IGNORED-FILE", "named explicitly, but workq-server ignores "
                                        "this file name (not NNNNNNNNN.log)", path=p))
        if not os.access(p, os.R_OK):
            raise InputError("permission denied", path=p)
        log.segments.append(Segment(p, seq, st.st_size if horizon else None))
    for log in logs:
        if not log.is_dir and all(s.seq is not None for s in log.segments):
            log.segments.sort(key=lambda s: s.seq)
    return logs


def interrupted_missing(path: str) -> UsageError | None:
    """A missing log directory that an interrupted install's rename left missing: its one-line error (else None)."""
    if not has_siblings(path):
        return None
    from .interrupted import missing_error
    return missing_error(path)


def _discover_dir(d: str, horizon: bool) -> LogSet:
    try:
        names = sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None
    segs: list[Segment] = []
    log = LogSet(root=d, segments=segs)
    if has_siblings(d):
        from .interrupted import findings
        log.findings.extend(findings(d))
    for name in names:
        path = os.path.join(d, name)
        seq = segment_seq(name)
        if seq is not None and not os.path.isdir(path):
            segs.append(Segment(path, seq, _stat_size(path) if horizon else None))
        elif name in LOCK_FILES:
            continue
        else:
            why = "not a segment name (NNNNNNNNN.log)"
            if name.endswith(".log.rw"):
                why = "a cleaner rewrite left over from an interrupted cycle"
            elif os.path.isdir(path):
                why = "a subdirectory"
            log.findings.append(Finding(WARNING, "WQ-IGNORED-FILE", f"ignored by workq-server: {why}", path=path))
    segs.sort(key=lambda s: s.seq)
    if not segs:
        if not any(n in LOCK_FILES for n in names):
            raise UsageError("not a workq log directory: no segments (NNNNNNNNN.log) and no lock files", path=d)
        log.findings.append(Finding(WARNING, "WQ-NO-SEGMENTS", "no segment yet (workq creates the first one on "
                                    "the first mutating command)", path=d))
        return log
    if segs[0].seq != 1:
        log.findings.append(Finding(WARNING, "WQ-MISSING-FIRST", f"log starts at segment {segs[0].seq}, not 1 "
                                    "(earlier segments were removed by the cleaner, or lost)", path=segs[0].path))
    for a, b in zip(segs, segs[1:]):
        if b.seq != a.seq + 1:
            log.findings.append(Finding(WARNING, "WQ-SEGMENT-GAP", f"segments {a.seq + 1}..{b.seq - 1} are missing "
                                        "(legal: the cleaner deletes segments it emptied)", path=b.path))
    return log


# ---------------------------------------------------------------- scanning one segment
def _head_at(data, p: int, end: int, *, utc_only: bool = False) -> tuple[int, int] | None:
    """(SIZE, payload start) of a plausible record head at p: a Go TIME of version 1 with a sane second,
    nanosecond and zone (``utc_only``: FF FF, as workq writes it), then a SIZE varint within SIZE_CAP (which fits
    in 3 varint bytes; a 4th is read); None otherwise. Nothing about the payload or the CRC is checked."""
    if p + 15 > end:
        return None
    version, sec, nsec, zone = _TIME.unpack_from(data, p)
    if version != 1 or not (0 <= nsec <= 999_999_999) or not (0 <= sec <= _MAX_SEC):
        return None
    if zone != 0xFFFF and (utc_only or not (zone <= 1440 or zone >= 0x10000 - 1440)):
        return None
    q = p + 15
    size = 0
    shift = 0
    for _ in range(4):
        if q >= end:
            return None
        c = data[q]
        q += 1
        size |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            break
    else:
        return None
    return (size, q) if size <= SIZE_CAP else None


def _plausible_record_at(data, p: int, end: int) -> bool:
    """True when a whole, CRC-valid record with a plausible TIME starts at p (used to resync after damage)."""
    if p + 20 > end:
        return False
    head = _head_at(data, p, end)
    if head is None:
        return False
    size, q = head
    if q + size + 4 > end:
        return False
    return _crc(data[p:q + size]) == _U32.unpack_from(data, q + size)[0]


def find_resync(data, start: int, end: int) -> int | None:
    """The first offset after ``start`` where a valid record begins, or None."""
    p = start
    while True:
        p = data.find(b"\x01", p + 1, end - 19)
        if p < 0:
            return None
        if _plausible_record_at(data, p, end):
            return p


_UPSTREAM = {
    "WQ-TRUNCATED": "Replay error, unexpected EOF",
    "WQ-TIME-VERSION": "Replay error, Time.UnmarshalBinary: unsupported version",
    "WQ-SIZE-OVERFLOW": "Replay error, binary: varint overflows a 64-bit integer",
    "WQ-CRC": "Replay error, crc mismatch",
}


def header_finding(sd: FileView, index: int, is_newest: bool) -> tuple[Finding | None, bool]:
    """(finding, scan_records) for the segment header."""
    size, path = sd.size, sd.path
    base = "open segment cursor " + path + ": invalid segment header"
    if size == 0:
        return Finding(ERROR, "WQ-HDR-EMPTY", "0-byte segment: no header" + (
            "; torn tail (the server died right after creating it) — removing the file loses nothing"
            if is_newest else ""), path=path, offset=0, next_index=index, last_good_offset=0,
            cause="0-byte segment: no header",
            upstream=UP_REFUSE + "Replay error, " + base + ": EOF",
            verdict=Verdict.TORN_TAIL if is_newest else Verdict.CORRUPT), False
    if size < HEADER_SIZE:
        return Finding(ERROR, "WQ-HDR-SHORT", f"segment is {size} bytes, shorter than its 8-byte header" + (
            "; torn tail — removing the file loses nothing" if is_newest else ""), path=path, offset=0,
            cause=f"segment is {size} bytes, shorter than its 8-byte header",
            next_index=index, last_good_offset=0,
            upstream=UP_REFUSE + "Replay error, " + base + ": unexpected EOF",
            verdict=Verdict.TORN_TAIL if is_newest else Verdict.CORRUPT), False
    head = bytes(sd.data[:HEADER_SIZE])
    if head != HEADER_BYTES:
        magic, version = HEADER_STRUCT.unpack(head)
        code = "WQ-HDR-MAGIC" if magic != MAGIC else "WQ-HDR-VERSION"
        what = (f"bad magic {head[:4].hex()} (expected 77717771 'wqwq')" if magic != MAGIC
                else f"unsupported version {version} (expected 1)")
        return Finding(ERROR, code, "segment header: " + what, path=path, offset=0, next_index=index,
                       last_good_offset=0, upstream=UP_REFUSE + "Replay error, " + base,
                       verdict=Verdict.CORRUPT), True
    if size == HEADER_SIZE:
        return Finding(WARNING, "WQ-HEADER-ONLY", "header-only segment (no records)", path=path, offset=0,
                       record_index=index), False
    return None, True


class RecordReader:
    """Streams one log's records (and findings, in file order) — the engine's only reader.

    ``events()`` yields ``Record`` and ``Finding`` objects interleaved in file order. A damaged stretch gives
    one error finding at the offset where the damaged record starts (``last_good_offset`` = that offset), then
    the reader resyncs to the next valid record in the same segment, if any, so everything readable is read.
    Damage in the newest segment with nothing valid after it is a torn tail (exit 1); any other damage is
    corruption (exit 3).
    """

    def __init__(self, log: LogSet, *, decode: bool = True, keep_raw: bool = False):
        self.log = log
        self.keep_raw = keep_raw
        self.decode = decode
        self.records = 0
        self.bytes = 0
        self.segments_read = 0

    def events(self) -> Iterator[Record | Finding]:
        yield from self.log.findings
        index = 0
        newest = self.log.newest
        for seg in self.log.segments:
            with FileView(seg) as sd:
                self.segments_read += 1
                self.bytes += sd.size
                is_newest = seg is newest
                for ev in self.segment_events(sd, index, is_newest):
                    if ev.__class__ is Record:
                        index += 1
                    yield ev
        self.records = index

    # -- records
    def segment_events(self, sd: FileView, index: int, is_newest: bool, *, start: int | None = None,
                       zone_warned: bool = False) -> Iterator[Record | Finding]:
        """The segment's events; with ``start`` from that offset on (no header check; ``zone_warned``: a WQ-ZONE
        was given earlier in the segment) — how the kernel (fastreplay.py) hands one record or damage here."""
        if start is None:
            f, scan = header_finding(sd, index, is_newest)
            if f is not None:
                yield f
            if not scan:
                return
        data, end, path = sd.data, sd.size, sd.path
        decode = self.decode
        keep_raw = self.keep_raw
        pos = HEADER_SIZE if start is None else start
        while pos < end:
            rem = end - pos
            code = None
            if rem < 15:
                code, msg = "WQ-TRUNCATED", f"record cut short: {rem} bytes left, a record needs at least 20"
            elif data[pos] != 1:
                code, msg = "WQ-TIME-VERSION", (f"expected a record (Go time version 01) but found byte "
                                                f"{data[pos]:02x}")
            else:
                q = pos + 15
                size = 0
                shift = 0
                i = 0
                while True:
                    if q >= end:
                        code, msg = "WQ-TRUNCATED", "record cut short inside its SIZE varint"
                        break
                    c = data[q]
                    q += 1
                    if c < 0x80:
                        if i == 9 and c > 1:
                            code, msg = "WQ-SIZE-OVERFLOW", "SIZE varint overflows a 64-bit integer"
                        size |= c << shift
                        break
                    size |= (c & 0x7F) << shift
                    shift += 7
                    i += 1
                    if i == 10:
                        code, msg = "WQ-SIZE-OVERFLOW", "SIZE varint overflows a 64-bit integer (more than 10 bytes)"
                        break
                if code is None:
                    need = q - pos + size + 4
                    if size > SIZE_CAP:
                        code = "WQ-SIZE-TOO-LARGE"
                        msg = (f"SIZE {size} is beyond any valid command (max {SIZE_CAP}); "
                               f"{rem} bytes left in the segment; nothing allocated")
                    elif need > rem:
                        code, msg = "WQ-TRUNCATED", f"record cut short: needs {need} bytes, {rem} left"
                    else:
                        pend = q + size
                        body = data[pos:pend]
                        stored = _U32.unpack_from(data, pend)[0]
                        crc = _crc(body)
                        if crc != stored:
                            code, msg = "WQ-CRC", f"crc mismatch: stored {stored:08x}, computed {crc:08x}"
                        else:
                            length = need
                            nxt = pend + 4
                            version, sec, nsec, zone = _TIME.unpack_from(body, 0)
                            if zone != 0xFFFF and not zone_warned:
                                zone_warned = True
                                yield Finding(WARNING, "WQ-ZONE", f"record TIME has zone offset "
                                              f"{zone if zone < 0x8000 else zone - 0x10000} min, not FF FF (UTC); "
                                              "upstream accepts it (first such record in this segment)",
                                              path=path, offset=pos, record_index=index)
                            rec = Record(path, pos, length, index, GoTime(sec, nsec, zone - 0x10000 if
                                         zone >= 0x8000 else zone), size, stored)
                            if decode:
                                try:
                                    rec.command = decode_payload(body, q - pos, len(body))
                                except (InvalidPayload, UnknownOpcode) as exc:
                                    rec.payload_error = exc
                                    rec.raw_payload = bytes(body[q - pos:])
                            else:
                                rec.raw_payload = body
                            if keep_raw:
                                rec.raw = bytes(data[pos:nxt])
                            yield rec
                            index += 1
                            pos = nxt
                            continue
            # damage at pos
            if code == "WQ-SIZE-TOO-LARGE":
                up = (UP_REFUSE + "Go panic 'makeslice: len out of range' (exit 2)" if size >= 1 << 48 else
                      UP_REFUSE + "Replay error, unexpected EOF" if size > rem else UP_REFUSE + "Replay error, crc mismatch")
            else:
                up = UP_REFUSE + _UPSTREAM[code]
            resume = find_resync(data, pos, end)
            cause = msg
            if resume is None and is_newest:
                verdict = Verdict.TORN_TAIL
                msg += (f"; torn tail: the log is valid up to 0x{pos:x} and nothing valid follows "
                        f"({end - pos} bytes) — truncating there loses no valid record")
            else:
                verdict = Verdict.CORRUPT
                if resume is not None:
                    msg += f"; valid records resume at 0x{resume:x} ({resume - pos} bytes unreadable)"
                else:
                    msg += f"; nothing valid follows in this segment ({end - pos} bytes), but later segments exist"
            yield Finding(ERROR, code, msg, path=path, offset=pos, next_index=index, last_good_offset=pos,
                          upstream=up, verdict=verdict, resumes_at=resume, cause=cause)
            if resume is None:
                return
            pos = resume


def segment_events(seg: Segment, start_index: int, is_newest: bool, *, decode: bool = True
                   ) -> Iterator[Record | Finding]:
    """The records and findings of one segment, in file order, exactly as ``RecordReader.events()`` yields
    them for this segment inside its log (``is_newest`` decides torn tail vs corruption)."""
    reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]), decode=decode)
    with FileView(seg) as sd:
        yield from reader.segment_events(sd, start_index, is_newest)


# ---------------------------------------------------------------- what a damaged range held
_ID_CMDS = frozenset(int(c) for c in CmdType)
_JOB_CMDS = frozenset((int(CmdType.ADD), int(CmdType.SCHEDULE)))


def _frame_at(data, p: int, end: int) -> tuple[int, int, int] | None:
    """(command byte, payload start, frame end) of a record whose TIME (UTC) and SIZE are plausible at p and whose
    command byte lies before ``end`` — the CRC ignored (the record is damaged); None otherwise."""
    if p + 17 > end:
        return None
    head = _head_at(data, p, end, utc_only=True)
    if head is None:
        return None
    size, q = head
    if size == 0 or q >= end or data[q] not in _ID_CMDS:
        return None
    return data[q], q, q + size + 4


def damaged_jobs(data, start: int, end: int) -> tuple[list[tuple[int, CmdType, bytes]], int]:
    """What the unreadable range ``data[start:end]`` held, as far as it can be read: the (offset, command, job
    id) of every add or schedule whose frame parses there with its CRC ignored (records back to back from
    ``start``; after a frame that does not parse, the next plausible one — a UTC Go TIME, a sane SIZE and a known
    command byte), and the bytes in which no frame could be read. A repair that cuts the range loses these
    jobs; the id is read from the damaged bytes, so it is a best effort (the damage may be in the id)."""
    out: list[tuple[int, CmdType, bytes]] = []
    unread = 0
    p = start
    while p < end:
        fr = _frame_at(data, p, end)
        if fr is None:
            nxt = p + 1
            while True:
                nxt = data.find(b"\x01", nxt, end)
                if nxt < 0 or _frame_at(data, nxt, end) is not None:
                    break
                nxt += 1
            nxt = end if nxt < 0 else nxt
            unread += nxt - p
            p = nxt
            continue
        cmd, q, fend = fr
        if cmd in _JOB_CMDS and q + 1 + JOB_ID_SIZE <= end:
            out.append((p, CmdType(cmd), bytes(data[q + 1:q + 1 + JOB_ID_SIZE])))
        elif fend > end:        # a record cut before its job id (or its end) is read: its bytes are unread too
            unread += end - p   # (issue 34, D5: a torn add cut 20 bytes in was counted nowhere)
        p = min(fend, end) if fend > p else end
    return out, unread


def read_damaged_jobs(path: str, start: int, end: int) -> tuple[list[tuple[int, CmdType, bytes]], int]:
    """``damaged_jobs`` over the bytes [start, end) of the segment file ``path``."""
    with FileView(Segment(path, None)) as sd:
        return damaged_jobs(sd.data, start, min(end, sd.size))


def record_length(path: str, offset: int) -> int:
    """The length of the record framed at ``offset`` of ``path`` (TIME, SIZE varint, PAYLOAD, CRC), as the reader
    framed it (a refused record is whole: its CRC matched)."""
    with open(path, "rb") as f:
        head = os.pread(f.fileno(), 15 + 3, offset)
    size, shift, q = 0, 0, 15
    while q < len(head):
        c = head[q]
        q += 1
        size |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return q + size + 4
    raise InputError(f"no record SIZE at 0x{offset:x}", path=path, offset=offset)
