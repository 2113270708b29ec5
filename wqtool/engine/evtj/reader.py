"""EVTJ discovery and the streaming reader: exactly the loader's view (``journal::load_event_locations``).

Discovery reads ``journal.conf`` (``maximum_number_of_files`` decides which ``journal-N.events`` the loader reads),
lists ``{id}.bin`` attachments and reports foreign names. The reader checks each file's 8-byte header (a bad one:
the loader skips the file), then walks the events back to back and stops where the loader stops, in its order:
fewer than 32 bytes left, a magic other than ``ev`` (``00 00``: the end of a compressed file), an unknown status,
``request_id_size == 0``, ``offset + size`` beyond the file, no inline data, a time more than 5 s after --as-of.
Whether damage is a torn tail or corruption is decided by looking for a valid event after it (the loader never
does: it appends over whatever follows).
"""
from __future__ import annotations

import os
import re
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.evtj import (ATTACHMENT_FILE, ATTACHMENT_OFFSET_SIZE, CONF_CHOICES, CONF_DEFAULTS, CONF_RANGES,
                             COUNTERS_FILE, END_MARKER, EVENT_HEADER_SIZE, EVENT_MAGIC, EVENTS_FILE, EVTJ_MAGIC,
                             EVTJ_MAJOR_VERSION, EVTJ_MINOR_VERSION, FILE_HEADER_SIZE, JOURNAL_CONF, TIME_EPSILON_NS,
                             Status, schemas)
from ..fileio import FileView, input_error, listdir, read_span
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .fastpath import attachments_layout, decode_header, decode_offsets, layouts
from .model import Event, EventsFile, EvtjJournal

VALID_STATUSES = frozenset(int(s) for s in Status if s != Status.UNKNOWN)
_CONF_LINE = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=\s*(.*?)\s*$")


def parse_conf(path: str) -> tuple[dict, list[Finding]]:
    """journal.conf: ``name=value`` lines (``#`` comments); unknown names and out-of-range values are findings."""
    conf: dict = {}
    out: list[Finding] = []
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as exc:
        raise input_error(path, exc) from None
    offset = 0
    for line in raw.split(b"\n"):
        at = offset
        offset += len(line) + 1
        text = line.decode("utf-8", "replace").strip()
        if not text or text.startswith("#"):
            continue
        m = _CONF_LINE.match(text)
        if not m:
            out.append(Finding(WARNING, "EVTJ-BAD-CONF", f"not a name=value line: {text[:60]!r}", path=path,
                               offset=at))
            continue
        key, value = m.group(1).replace("-", "_"), m.group(2)
        if key in CONF_CHOICES:
            if value not in CONF_CHOICES[key]:
                out.append(Finding(WARNING, "EVTJ-BAD-CONF", f"{key}={value!r}: expected one of "
                                   f"{', '.join(CONF_CHOICES[key])}", path=path, offset=at))
                continue
            conf[key] = value
        elif key in CONF_RANGES:
            lo, hi = CONF_RANGES[key]
            try:
                v = int(value)
            except ValueError:
                v = None
            if v is None or not lo <= v <= hi:
                out.append(Finding(WARNING, "EVTJ-BAD-CONF", f"{key}={value!r}: expected an integer {lo}..{hi}",
                                   path=path, offset=at))
                continue
            conf[key] = v
        else:
            out.append(Finding(WARNING, "EVTJ-BAD-CONF", f"unknown setting {key!r}", path=path, offset=at))
    return conf, out


def _number(name: str) -> int | None:
    m = EVENTS_FILE.match(name)
    return int(m.group(1)) if m else None


def discover(paths: Sequence[str], as_of_ns: int, byteorder: str) -> list[EvtjJournal]:
    if not paths:
        raise UsageError("no PATH given")
    out: list[EvtjJournal] = []
    explicit: dict[str, EvtjJournal] = {}
    for p in paths:
        try:
            os.stat(p)
        except OSError as exc:
            raise input_error(p, exc) from None
        if os.path.isdir(p):
            out.append(_discover_dir(p, as_of_ns, byteorder))
            continue
        d = os.path.dirname(p) or "."
        key = os.path.abspath(d)
        if key not in explicit:
            j = _discover_dir(d, as_of_ns, byteorder, keep_files=False)
            j.is_dir = False
            explicit[key] = j
            out.append(j)
        n = _number(os.path.basename(p))
        explicit[key].files.append(EventsFile(p, n if n is not None else -1))
    for j in explicit.values():
        j.files.sort(key=lambda f: f.number)
    return out


def _discover_dir(d: str, as_of_ns: int, byteorder: str, *, keep_files: bool = True) -> EvtjJournal:
    try:
        names = sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None
    j = EvtjJournal(root=d, files=[], as_of_ns=as_of_ns, byteorder=byteorder)
    if JOURNAL_CONF in names:
        j.conf, found = parse_conf(os.path.join(d, JOURNAL_CONF))
        j.findings += found
    j.max_files = int(j.conf.get("maximum_number_of_files", CONF_DEFAULTS["maximum_number_of_files"]))
    events = []
    for name in names:
        path = os.path.join(d, name)
        if not os.path.isfile(path):
            continue
        n = _number(name)
        if n is not None:
            events.append(EventsFile(path, n))
        elif ATTACHMENT_FILE.match(name):
            j.attachments.add(int(name[:-4]))
        elif name == COUNTERS_FILE:
            j.counter = _read_counter(path, byteorder)
        elif name != JOURNAL_CONF and keep_files:
            what = ("the temp file of an interrupted wqtool pack (the loader never reads it; remove it)"
                    if name.startswith(".") and name.endswith(".wqtool-pack") else
                    "no part of an event journal (journal.conf, journal-N.events, {id}.bin, counters.seq)")
            j.findings.append(Finding(WARNING, "EVTJ-FOREIGN-FILE", f"'{name}' is {what}", path=path))
    events.sort(key=lambda f: f.number)
    for f in events:
        if f.number >= j.max_files:
            if keep_files:
                j.findings.append(Finding(WARNING, "EVTJ-FILE-BEYOND-MAX", f"journal-{f.number}.events: "
                                          f"maximum_number_of_files is {j.max_files}, the loader never reads it (its "
                                          "events are not replayed)", path=f.path))
        elif keep_files:
            j.files.append(f)
    return j


def _read_counter(path: str, byteorder: str) -> int | None:
    raw = read_span(path, 0, 16)
    if len(raw) < 16:
        return None
    c = schemas(byteorder).counter.parse(raw)
    return (c.high << 64) | c.low


def render_id(request_id: bytes) -> str:
    """The request id as text when it is printable ASCII, else ``0x`` + hex (a big-endian integer)."""
    if request_id and all(0x20 <= b < 0x7F for b in request_id):
        return request_id.decode("ascii")
    return "0x" + request_id.hex()


class EvtjReader:
    """Streams the events of a journal's files (``events()``: ``Event`` and ``Finding``, in load order)."""

    def __init__(self, journal: EvtjJournal, *, first_index: int = 0, with_discovery: bool = True):
        self.journal = journal
        self.records = self.bytes = self.segments_read = 0
        self._index = first_index
        self._with_discovery = with_discovery

    def events(self) -> Iterator:
        if self._with_discovery:
            yield from self.journal.findings
        for f in self.journal.files:
            yield from self.file_events(f)

    def file_events(self, ef: EventsFile) -> Iterator:
        j = self.journal
        with FileView(ef) as view:
            data = view.data
            n = view.size
            self.segments_read += 1
            self.bytes += n
            yield from self._walk(ef, data, n, j)

    def _stop(self, ef, data, n, pos, code, message, *, intact: bool = False) -> Finding:
        resume = self._resync(data, n, pos + 1)
        lost = n - pos
        if intact:
            verdict = Verdict.INVALID_HISTORY
        else:
            verdict = Verdict.CORRUPT if resume is not None else Verdict.TORN_TAIL
        tail = (f"; the loader stops: the {lost} byte(s) from here are never loaded (a valid event resumes at "
                f"0x{resume:x})" if resume is not None else
                f"; the loader stops here and appends over the {lost} byte(s) left (nothing valid follows)")
        return Finding(ERROR, code, message + tail, path=ef.path, offset=pos, record_index=self._index,
                       last_good_offset=pos, verdict=verdict, resumes_at=resume,
                       upstream="load_event_locations() stops reading the file here")

    def _check(self, data, n, pos, hdr) -> tuple[str, str] | None:
        """The loader's refusal of the event whose header is ``hdr`` at ``pos``, in its order, or None."""
        magic, status, idsize, size, sec, nsec, count, _pad = hdr
        if status not in VALID_STATUSES:
            return "EVTJ-UNKNOWN-STATUS", f"unknown status {status}"
        data_size = size - EVENT_HEADER_SIZE - ATTACHMENT_OFFSET_SIZE * count - idsize
        if idsize == 0:
            return "EVTJ-EMPTY-ID", "request_id_size is 0"
        if pos + size > n:
            return "EVTJ-SIZE-BEYOND-FILE", f"event size {size} at 0x{pos:x} runs past the end of the file ({n})"
        if data_size <= 0:
            return ("EVTJ-NO-INLINE-DATA",
                    f"no inline data: size {size} - 32 - 4 x {count} attachment offset(s) - id {idsize} = {data_size}")
        if sec * 1_000_000_000 + nsec > self.journal.as_of_ns + TIME_EPSILON_NS:
            return "EVTJ-FUTURE-TIME", f"event time {sec}.{nsec:09d} is more than 5 s after --as-of"
        return None

    def _resync(self, data, n: int, start: int) -> int | None:
        """The next offset after ``start`` where an event the loader accepts begins (for the verdict only)."""
        order = self.journal.byteorder
        pos = start
        find = data.find
        while True:
            pos = find(EVENT_MAGIC, pos)
            if pos < 0 or pos + EVENT_HEADER_SIZE > n:
                return None
            if self._check(data, n, pos, decode_header(data, pos, order)) is None:
                return pos
            pos += 1

    def _walk(self, ef: EventsFile, data, n: int, j: EvtjJournal) -> Iterator:
        order = j.byteorder
        head = bytes(data[:FILE_HEADER_SIZE])
        if len(head) < FILE_HEADER_SIZE or head[:4] != EVTJ_MAGIC or head[4] != EVTJ_MAJOR_VERSION \
                or head[5] != EVTJ_MINOR_VERSION:
            what = (f"only {len(head)} byte(s)" if len(head) < FILE_HEADER_SIZE else
                    f"magic {head[:4]!r} version {head[4]}.{head[5]}")
            yield Finding(ERROR, "EVTJ-HEADER", f"not an EVTJ 1.0 file header ({what}): the loader skips the whole "
                          "file", path=ef.path, offset=0, record_index=self._index, verdict=Verdict.CORRUPT,
                          upstream="found event file with invalid magic and/or version: file skipped")
            return
        pos = FILE_HEADER_SIZE
        while pos < n:
            if n - pos < EVENT_HEADER_SIZE:
                if bytes(data[pos:pos + 2]) == END_MARKER:
                    yield self._end_marker(ef, pos, n)
                    return
                yield Finding(ERROR, "EVTJ-TRUNCATED", f"{n - pos} byte(s) left, an event header needs 32: the "
                              "loader's read fails and it stops; torn tail", path=ef.path, offset=pos,
                              record_index=self._index, last_good_offset=pos, verdict=Verdict.TORN_TAIL)
                return
            hdr = decode_header(data, pos, order)
            magic = hdr[0]
            if magic != EVENT_MAGIC:
                if magic == END_MARKER:
                    yield self._end_marker(ef, pos, n)
                    return
                yield self._stop(ef, data, n, pos, "EVTJ-EVENT-MAGIC", f"event magic {magic!r}, expected b'ev'")
                return
            bad = self._check(data, n, pos, hdr)
            if bad is not None:
                code, msg = bad
                intact = code == "EVTJ-FUTURE-TIME" or (code == "EVTJ-NO-INLINE-DATA" and hdr[3] ==
                                                       EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * hdr[6] + hdr[2])
                yield self._stop(ef, data, n, pos, code, msg, intact=intact)
                return
            _m, status, idsize, size, sec, nsec, count, _p = hdr
            offsets = decode_offsets(data, pos + EVENT_HEADER_SIZE, count, order)
            id_at = pos + EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * count
            request_id = bytes(data[id_at:id_at + idsize])
            sizes, external, problem = attachments_layout(offsets, size, EVENT_HEADER_SIZE
                                                          + ATTACHMENT_OFFSET_SIZE * count + idsize)
            ev = Event(ef.path, pos, size, self._index, ef.number, status, request_id, sec, nsec, offsets, sizes,
                       external)
            self._index += 1
            self.records += 1
            yield ev
            if problem is not None:
                yield Finding(ERROR, "EVTJ-BAD-ATTACHMENT-OFFSET", f"{render_id(request_id)}: {problem}",
                              path=ef.path, offset=pos, record_index=ev.index, verdict=Verdict.CORRUPT)
            if status in (1, 2, 3):
                missing = [i for i in external if i not in j.attachments]
                if missing:
                    yield Finding(ERROR, "EVTJ-MISSING-ATTACHMENT", f"{render_id(request_id)}: external "
                                  f"attachment(s) {', '.join(f'{i}.bin' for i in missing)} missing",
                                  path=ef.path, offset=pos, record_index=ev.index, verdict=Verdict.CORRUPT)
            pos += size

    def _end_marker(self, ef: EventsFile, pos: int, n: int) -> Finding:
        return Finding(NOTE, "EVTJ-END-MARKER", f"'00 00' end marker of a compressed file; the {n - pos - 2} byte(s) "
                       "after it are not events", path=ef.path, offset=pos, record_index=self._index)


__all__ = ["EvtjReader", "discover", "render_id", "parse_conf", "layouts", "InputError"]
