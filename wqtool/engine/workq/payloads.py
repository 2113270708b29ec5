"""Job bodies read back from the log by (segment, offset), for consumers of the compact job table that need the bytes.

The job table (jobtable.py) keeps no payload: a row holds the add/schedule record's segment number (an index into
the log's segment paths) and byte offset, and the payload's length and CRC-32C. ``PayloadReader`` reads the body of
such a record back with ``os.pread`` on one cached read-only descriptor per segment, and checks it against the row
(the record's job id, the length and the CRC), so a stale position is an error naming the file and offset, never
wrong bytes. ``wqtool serve`` reads a job's body this way each time a reply carries it.

Segments rewritten under the reader (the server's own cleaning cycle renames a ``.rw`` file over a segment, without
the records that have no effect) are followed with ``pin`` and ``rewritten``: ``pin(paths)`` opens the segments about
to change, so reads keep seeing the old files until ``rewritten(path, drops)`` gives the segment a new number and
says which byte ranges were dropped; a row still naming the old number is translated (offset minus the bytes dropped
before it) to the new file. A deleted segment holds no live job's record (``gone``).

``job_table(state)``: the replayed state's job table — the very table the kernel filled (``CompactJobs.table``),
or, when the reference path replayed the log (a dict of ``Job``), a new table with the same rows.
"""
from __future__ import annotations

import os
import _thread
from _bisect import bisect_right      # (bisect's C module: serve imports this before its first reply)
from _collections import OrderedDict    # (collections.OrderedDict, without the collections package: serve)

from ...errors import FormatError, InvalidPayload
try:                    # the kernel's CRC-32C, as the reader's (no google_crc32c import before serve's first reply)
    from . import _kernel
    _crc = _kernel.crc32c
except ImportError:     # not built: google-crc32c
    from google_crc32c import value as _crc

from ...formats._common import GO_TIME_SIZE, crc32c
from ...formats.workq import CMD_CODES, JOB_ID_SIZE, MAX_COMMAND_SIZE, MAX_PAYLOAD_BYTES
from .jobtable import PyJobTable

#: the record header before SIZE: the record time
_TIME_BYTES = GO_TIME_SIZE
#: an add/schedule payload's bytes besides the job body, at most (the schema's bound)
_ADD_OVERHEAD = MAX_COMMAND_SIZE - MAX_PAYLOAD_BYTES
#: a payload starts with the command byte and the job id; an add/schedule payload ends with two Go times
_ID_END = 1 + JOB_ID_SIZE
_TIMES = 2 * GO_TIME_SIZE
_ADD_KINDS = (CMD_CODES["ADD"], CMD_CODES["SCHEDULE"])
_pread = os.pread


class PayloadReader:
    """Reads job bodies back from a log's segments (see the module docstring). ``paths``: the segment paths, a row's
    ``seg`` indexing them; new segments get a number with ``index(path)``."""

    #: descriptors kept open (least recently read closed first; a log of hundreds of segments must not exhaust
    #: the process's descriptors, which the appender and the clients need too)
    MAX_OPEN = 32

    def __init__(self, paths: list[str] | None = None):
        self.paths: list[str] = list(paths or [])
        self._by_path: dict[str, int] = {}         # realpath -> the segment's current number
        self._raw: dict[str, int] = {}             # path as index() was given it -> its number then
        for i, p in enumerate(self.paths):
            self._by_path.setdefault(_norm(p), i)
        self._fds: OrderedDict[int, int] = OrderedDict()    # segment -> fd, least recently read first
        self._pinned: set[int] = set()
        # old seg -> (new seg, drop offsets, cumulative dropped bytes, generation): kept only until every row has
        # been translated past it (``settled``), so it holds the rewrites of the last cycles, not of the server's life
        self._moved: dict[int, tuple[int, array, array, int]] = {}
        self._gen = 0
        self._lock = _thread.allocate_lock()     # (threading.Lock: serve imports no threading before its first reply)

    def index(self, path: str) -> int:
        """The segment number of ``path`` (a new one is appended)."""
        i = self._raw.get(path)
        if i is not None:
            return i
        key = _norm(path)
        i = self._by_path.get(key)
        if i is None:
            i = self._by_path[key] = len(self.paths)
            self.paths.append(path)
        self._raw[path] = i
        return i

    def _fd(self, seg: int, *, pin: bool = False) -> int:
        """The open descriptor of segment ``seg``. At most ``MAX_OPEN`` stay open: reading (the loop's thread) closes
        the least recently read ones beyond it, never a pinned one (a cleaning cycle's, opened from its thread)."""
        with self._lock:
            fd = self._fds.get(seg)
            if fd is None:
                fd = self._fds[seg] = os.open(self.paths[seg], os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            else:
                self._fds.move_to_end(seg)
            if pin:
                self._pinned.add(seg)
                return fd
            evict = []
            if len(self._fds) > self.MAX_OPEN:
                for old in self._fds:
                    if len(self._fds) - len(evict) <= self.MAX_OPEN:
                        break
                    if old != seg and old not in self._pinned:
                        evict.append(old)
                for old in evict:
                    os.close(self._fds.pop(old))
        return fd

    def locate(self, seg: int, offset: int) -> tuple[int, int]:
        """(seg, offset) after the rewrites since the row was written."""
        while seg in self._moved:
            new, offs, cum, _gen = self._moved[seg]
            k = bisect_right(offs, offset)
            seg, offset = new, offset - (cum[k - 1] if k else 0)
        return seg, offset

    def read(self, seg: int, offset: int, job_id: bytes, length: int, crc: int) -> bytes:
        """The body of the add/schedule record of ``job_id`` at ``offset`` in segment ``seg`` (FormatError when the
        record there is not that job's, with that length and CRC)."""
        if seg in self._moved:
            seg, offset = self.locate(seg, offset)
        try:
            if seg >= len(self.paths):
                raise FormatError(f"no segment number {seg} to read a job body from", offset=offset)
            fd = self._fd(seg)
            buf = _pread(fd, _TIME_BYTES + 10 + _ADD_OVERHEAD + length, offset)
        except OSError as exc:
            raise FormatError(f"cannot read a job body back: {exc.strerror or exc}", path=self.paths[seg],
                              offset=offset) from None
        end = len(buf)
        # SIZE: one or two bytes for every record the server writes
        t = _TIME_BYTES
        if end > t + 2 and buf[t] < 0x80:
            pos, size = t + 1, buf[t]
        elif end > t + 2 and buf[t + 1] < 0x80:
            pos, size = t + 2, (buf[t] & 0x7F) | (buf[t + 1] << 7)
        else:
            pos, size = _size(buf, end)
        # the body ends the payload but for its two times (as the server writes them): taken from there when the
        # id, the kind and the CRC say it is this job's; anything else is decoded in full
        stop = pos + size - _TIMES
        if pos + size <= end and stop - length > pos + _ID_END and buf[pos + 1:pos + _ID_END] == job_id \
                and buf[pos] in _ADD_KINDS:
            body = buf[stop - length:stop]
            if _crc(body) == crc:
                return body
        return self._decode(buf, pos, size, seg, offset, job_id, length, crc)

    def _decode(self, buf: bytes, pos: int, size: int, seg: int, offset: int, job_id: bytes, length: int,
                crc: int) -> bytes:
        path = self.paths[seg]
        if pos > len(buf) or pos + size > len(buf):
            raise FormatError("the add/schedule record read back is cut short", path=path, offset=offset)
        from .fastpath import decode_payload      # (a body read back: not on serve's way to its first replies)
        try:
            cmd = decode_payload(buf, pos, pos + size)
        except FormatError as exc:
            raise FormatError(f"the add/schedule record read back does not decode: {exc.message}", path=path,
                              offset=offset) from None
        body = cmd.payload
        if cmd.job_id != job_id or body is None or len(body) != length or crc32c(body) != crc:
            raise FormatError("the add/schedule record read back does not match the job", path=path, offset=offset)
        return body

    # ---------------------------------------------------------------- segments rewritten or deleted under the reader
    def pin(self, paths) -> None:
        """Open ``paths`` (known segments about to be rewritten or deleted) so reads keep the files as they are."""
        for p in paths:
            i = self._by_path.get(_norm(p))
            if i is not None:
                self._fd(i, pin=True)

    def unpin(self, paths) -> None:
        """A cleaning cycle that did not rewrite ``paths`` after all: their descriptors may be closed again."""
        with self._lock:
            for p in paths:
                i = self._by_path.get(_norm(p))
                if i is not None:
                    self._pinned.discard(i)

    def replaced(self, path: str) -> bool:
        """Whether ``path`` no longer names the file the reader has open for it (renamed over, or deleted)."""
        i = self._by_path.get(_norm(path))
        with self._lock:                    # (the fd stays this segment's while it is looked at)
            fd = self._fds.get(i) if i is not None else None
            if fd is None:
                return False
            old = os.fstat(fd)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return True
        return (st.st_ino, st.st_dev) != (old.st_ino, old.st_dev)

    def rewritten(self, path: str, drops) -> None:
        """``path`` now holds its records minus the ``drops`` ((offset, length) pairs, flat): a new number for it;
        rows naming the old one are translated on read."""
        key = _norm(path)
        old = self._by_path.get(key)
        if old is None:
            return
        pairs = sorted((drops[i], drops[i + 1]) for i in range(0, len(drops), 2))
        from array import array
        offs, cum, total = array("Q"), array("Q"), 0
        for off, ln in pairs:
            total += ln
            offs.append(off)
            cum.append(total)
        new = len(self.paths)
        self.paths.append(path)
        self._by_path[key] = new
        self._raw = {p: i for p, i in self._raw.items() if i != old}
        self._gen += 1
        self._moved[old] = (new, offs, cum, self._gen)
        self._close(old)

    @property
    def generation(self) -> int:
        """How many rewrites the reader has been told of (``settled`` takes one)."""
        return self._gen

    def moved(self, seg: int) -> bool:
        """Whether rows naming segment ``seg`` need ``locate``."""
        return seg in self._moved

    def settled(self, generation: int) -> None:
        """Every row that named a segment rewritten up to ``generation`` has been translated (``locate``) and
        rewritten by its owner: those translations are forgotten."""
        self._moved = {k: v for k, v in self._moved.items() if v[3] > generation}

    @property
    def has_moves(self) -> bool:
        return bool(self._moved)

    @property
    def moved_offsets(self) -> int:
        """Drop offsets held to translate rows (bounded: see ``settled``)."""
        return sum(len(v[1]) for v in self._moved.values())

    def gone(self, path: str) -> None:
        """``path`` was deleted (none of its records is a live job's)."""
        i = self._by_path.get(_norm(path))
        if i is not None:
            self._close(i)

    def _close(self, seg: int) -> None:
        with self._lock:
            fd = self._fds.pop(seg, None)
            self._pinned.discard(seg)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        with self._lock:
            fds = list(self._fds.values())
            self._fds.clear()
            self._pinned.clear()
        for fd in fds:
            os.close(fd)

    @property
    def open_files(self) -> int:
        return len(self._fds)


def _size(buf: bytes, end: int) -> tuple[int, int]:
    """(payload start, SIZE) of the record in ``buf`` (its SIZE varint after the 15-byte time); a bad varint gives a
    position past the end."""
    from .fastpath import _uvarint
    try:
        size, pos = _uvarint(buf, _TIME_BYTES, end, "SIZE")
    except InvalidPayload:
        return end + 1, 0
    return pos, size


def _norm(path: str) -> str:
    """One spelling per segment file: its directory's real path (resolved once per directory string and kept) and
    its name. Segment files themselves are never symlinks (workq-server and wqtool create them); a server at
    ``-cmdlog-seg-size 15`` indexes a new segment per record, where a realpath() per file cost 5 lstat calls."""
    cut = path.rfind("/") + 1
    d = path[:cut]                      # the directory as spelled, with its slash ("" for the working directory)
    real = _REAL_DIRS.get(d)
    if real is None:
        if len(_REAL_DIRS) >= 256:
            _REAL_DIRS.clear()
        real = _REAL_DIRS[d] = os.path.join(os.path.realpath(d or "."), "")
    return real + path[cut:]


#: a directory's spelling (up to its last slash) -> its real path ending in one slash
_REAL_DIRS: dict[str, str] = {}


def job_table(state, reader: PayloadReader, table=None):
    """The job table of a replayed state: ``state.jobs.table`` itself when the kernel replayed it (its segment
    numbers index ``state.jobs.paths``, which ``reader`` must be made from); else ``table`` (default a
    ``PyJobTable``) filled with the rows of ``state.jobs``' Job objects, segment numbers from ``reader.index``."""
    jobs = state.jobs
    t = getattr(jobs, "table", None)
    if t is not None:
        return t
    if table is None:
        table = PyJobTable()
    for j in jobs.values():
        table.put(j.id, (int(j.kind), j.name, j.ttr, j.ttl, j.priority, j.max_attempts, j.max_fails, j.created_ns,
                         j.scheduled_ns, j.log_expires_ns, j.payload_len, j.payload_crc,
                         reader.index(j.src_path) if j.src_path else 0xFFFFFFFF, j.src_offset, int(j.state),
                         j.attempts, j.result))
    return table
