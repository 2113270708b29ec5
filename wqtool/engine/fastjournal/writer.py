"""Writing wqtool's priority-FIFO journal (per the unimplemented libfastjournal design): segments ``NNNNNNNNN.fjj``
with a 16-byte header, records ``size u32 | applied_at u64 | FJ request | CRC-32C u32`` (big-endian; layouts in
``wqtool.formats.fastjournal``: ``fjj_segment_header``, ``fjj_record``, ``fj_request``).

``JournalAppender`` is the server's: it holds ``journal.lock`` for its life, appends to the newest segment (a new
one past ``segment_size``), and makes records durable in batches (``take`` on the server's loop, ``write`` in one
worker thread at a time: ``write()``, then ``fsync`` with ``sync="full"``) — a reply is sent only once the batch
holding its change is written. ``SegmentWriter`` writes a whole new segment (packs, fixtures, the benchmark).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from ...formats._common import crc32c
from ...formats.fastjournal import (FIFO_VALUE_SIZE, FJ_MAGIC, FJ_VERSION, FJJ_LOCK, FJJ_MAGIC, FJJ_SEGMENT, FJJ_VERSION,
                             FLAG_OVERWRITE, FLAG_UPDATE_TIMEOUT, SEGMENT_HEADER_SIZE, VALUE_SIZE_SHIFT, Function,
                             ValueType, fjj_segment_name)
from ...errors import InputError
from ..fsops import LockSet, fsync_dir
from . import layout
from .wire import Request, encode_request

_HDR, _REC, _CRC = layout.SEGMENT_HEAD, layout.RECORD_HEAD, layout.CRC
SYNC_MODES = ("full", "write")


def segment_header(seq: int, flags: int = 0) -> bytes:
    h = _HDR.pack(FJJ_MAGIC, FJJ_VERSION, flags, seq)
    return h + _CRC.pack(crc32c(h))


def encode_record(applied_at: int, request: bytes) -> bytes:
    head = _REC.pack(8 + len(request), applied_at)
    return head + request + _CRC.pack(crc32c(head + request))


fifo_value = layout.fifo_value


_SET_SHORT, _SET_VALUE = layout.SET_SHORT_HEAD, layout.SET_FIFO_VALUE


def set_request(uri: bytes, priority: int, key_start_date: int, timestamp: int, *, overwrite: bool = True,
                identifier: int = 0, flags: int = 0) -> bytes:
    """The SET the server journals (and the forwarder sends): key = uri, a 9-byte BUFFER value. Built directly
    for the common short uri (the tests prove it equal to ``encode_request``)."""
    f = flags | (FLAG_OVERWRITE if overwrite else 0)
    if len(uri) <= 0xFF and not f & 0xFFFF & ~0x1FE0:      # no size / timeout / reserved bits given
        return (_SET_SHORT.pack(FJ_MAGIC, FJ_VERSION, Function.SET, identifier, f | 1 << VALUE_SIZE_SHIFT, timestamp,
                                len(uri)) + uri
                + _SET_VALUE.pack(1 + FIFO_VALUE_SIZE, ValueType.BUFFER, priority, key_start_date))
    return encode_request(Request(Function.SET, identifier, f, timestamp, uri, value_type=ValueType.BUFFER,
                                  value=fifo_value(priority, key_start_date)))


def delete_request(uri: bytes, timestamp: int, *, complete: bool = False, identifier: int = 0) -> bytes:
    return encode_request(Request(Function.DELETE, identifier, FLAG_OVERWRITE if complete else 0, timestamp, uri))


def mark_request(uri: bytes, entry_timestamp: int, duration: int) -> bytes:
    """The record of an entry marked worked on: a GET of the uri with the update-timeout flag and the duration
    (applied_at + duration is the deadline); its timestamp is the entry's (the version that was handed out)."""
    return encode_request(Request(Function.GET, 0, FLAG_UPDATE_TIMEOUT, entry_timestamp, uri, timeout=duration))


assert len(fifo_value(0, 0)) == FIFO_VALUE_SIZE


def take_lock(directory: str, timeout: float = 0.5) -> LockSet:
    """``journal.lock`` (LOCK_EX): one server per journal; pack --apply and clean take it too."""
    return LockSet(directory, [FJJ_LOCK], timeout, busy=lambda n: "a fastjournal server runs on this journal?")


def segments_in(directory: str) -> list[tuple[int, str]]:
    out = []
    for n in os.listdir(directory):
        m = FJJ_SEGMENT.match(n)
        if m and os.path.isfile(os.path.join(directory, n)):
            out.append((int(m.group(1)), os.path.join(directory, n)))
    return sorted(out)


class SegmentWriter:
    """A new segment file (never an existing one): header, then records."""

    def __init__(self, path: str, seq: int, *, flags: int = 0):
        self.path = path
        self._f = open(path, "xb", buffering=1 << 20)
        self._f.write(segment_header(seq, flags))
        self.size = SEGMENT_HEADER_SIZE
        self.records = 0

    def append(self, applied_at: int, request: bytes) -> int:
        at = self.size
        rec = encode_record(applied_at, request)
        self._f.write(rec)
        self.size += len(rec)
        self.records += 1
        return at

    def raw(self, data: bytes) -> int:
        at = self.size
        self._f.write(data)
        self.size += len(data)
        return at

    def close(self, *, fsync: bool = True) -> None:
        if not self._f.closed:
            self._f.flush()
            if fsync:
                os.fsync(self._f.fileno())
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass(frozen=True)
class TailCut:
    """A torn tail cut at start-up: ``nbytes`` bytes of ``path`` from ``offset``, kept in ``quarantine``."""

    path: str
    offset: int
    nbytes: int
    quarantine: str


def quarantine_dir(directory: str, now_ns: int) -> str:
    """Where the bytes a start-up cuts go: ``<journal dir>.quarantine-<UTC stamp>`` beside the journal, named as
    ``wqtool repair`` names its quarantine."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ns // 1_000_000_000))
    return f"{os.path.abspath(directory)}.quarantine-{stamp}"


def cut_tail(path: str, offset: int, qdir: str) -> TailCut:
    """Cut ``path`` at ``offset`` keeping every cut byte: the bytes from ``offset`` to the end are copied to
    ``qdir/<segment>@<offset hex>-<end hex>.bin`` (repair's quarantine names), that file and its directories are
    fsynced, then the segment is truncated and fsynced. A quarantine file of that name already holding exactly
    those bytes (a start-up that crashed after copying) is kept as it is."""
    with open(path, "rb") as f:
        f.seek(offset)
        cut = f.read()
    if not cut:
        return TailCut(path, offset, 0, "")
    dst = os.path.join(qdir, f"{os.path.basename(path)}@{offset:x}-{offset + len(cut):x}.bin")
    new_dir = not os.path.isdir(qdir)
    os.makedirs(qdir, exist_ok=True)
    try:
        with open(dst, "xb") as q:
            q.write(cut)
            q.flush()
            os.fsync(q.fileno())
    except FileExistsError:
        with open(dst, "rb") as q:
            if q.read() != cut:
                raise InputError("a quarantine file of that name holds other bytes; move it away and start again",
                                 path=dst) from None
    fsync_dir(qdir)
    if new_dir:
        fsync_dir(os.path.dirname(qdir) or ".")
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.ftruncate(fd, offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return TailCut(path, offset, len(cut), dst)


class JournalAppender:
    """The running server's writer (see the module docstring). ``truncate_at``: (segment path, offset) of a torn
    tail to cut before appending (nothing there was ever acknowledged); the cut bytes are kept in a quarantine
    beside the journal (``cut_tail``; ``self.cuts`` says what was cut and where it went)."""

    def __init__(self, directory: str, *, segment_size: int, sync: str = "full", lock_timeout: float = 0.5,
                 truncate_at: tuple[str, int] | None = None, lock: LockSet | None = None,
                 now_ns: int | None = None):
        if sync not in SYNC_MODES:
            raise ValueError(f"sync must be one of {SYNC_MODES}")
        self.dir = directory
        self.segment_size = segment_size
        self.sync = sync
        self.lock = lock if lock is not None else take_lock(directory, lock_timeout)
        self._buf: list[bytes] = []
        self._io = threading.Lock()
        self.appended = 0          # records handed to append()
        self.durable = 0           # records written (and fsynced with sync="full")
        self.cuts: list[TailCut] = []
        self._qdir = quarantine_dir(directory, time.time_ns() if now_ns is None else now_ns)
        try:
            self._open(truncate_at)
        except BaseException:
            self.lock.release()
            raise

    def _open(self, truncate_at) -> None:
        segs = segments_in(self.dir)
        if truncate_at is not None:
            path, off = truncate_at
            cut = cut_tail(path, off, self._qdir)
            if cut.nbytes:
                self.cuts.append(cut)
        if not segs:
            self._new_segment(1)
            return
        seq, path = segs[-1]
        self.seq = seq
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        self.size = os.fstat(self.fd).st_size
        if self.size < SEGMENT_HEADER_SIZE:          # a header cut short by a crash: nothing was ever in it
            if self.size:
                self.cuts.append(cut_tail(path, 0, self._qdir))
            os.write(self.fd, segment_header(seq))
            os.fsync(self.fd)
            self.size = SEGMENT_HEADER_SIZE

    def _new_segment(self, seq: int) -> None:
        path = os.path.join(self.dir, fjj_segment_name(seq))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        os.write(fd, segment_header(seq))
        os.fsync(fd)
        fsync_dir(self.dir)
        self.seq, self.fd, self.size = seq, fd, SEGMENT_HEADER_SIZE

    # -- on the server's loop
    def append(self, record: bytes) -> int:
        """Queue one encoded record; returns its sequence number (durable once ``durable`` reaches it)."""
        self._buf.append(record)
        self.appended += 1
        return self.appended

    def take(self) -> tuple[bytes, int] | None:
        """The queued records as one batch, and the sequence number it makes durable (None: nothing queued)."""
        if not self._buf:
            return None
        data = b"".join(self._buf)
        self._buf = []
        return data, self.appended

    # -- in one worker thread at a time
    def write(self, data: bytes, upto: int) -> None:
        with self._io:
            if self.size >= self.segment_size:
                old = self.fd
                self._new_segment(self.seq + 1)
                os.close(old)
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
            self.size += len(data)
            if self.sync == "full":
                os.fsync(self.fd)
            self.durable = upto

    def flush(self) -> None:
        """Write everything queued now (start-up, shutdown, tests)."""
        b = self.take()
        if b is not None:
            self.write(*b)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.lock.release()
