"""Executor log folders (``orth-executor-logs``): ``{logPath}/{yyyy-MM-dd}/{logId}.log``.

Discovery walks a ``logPath`` (or one date directory, or log files named explicitly); the reader turns one log
file into entries — a prefixed line (``formats.orth.LINE_PREFIX``) with its continuation lines (stack traces,
multi-line messages, raw script output, possibly not UTF-8) — and classifies each by the markers. The replay (each log id's run and callback state) is ``replay.py``, the
pass (cross-referenced with the retry files of the same ``logPath``) ``verify.py``.
"""
from __future__ import annotations

import codecs
import datetime as dt
import functools
import os
import re
import stat
from dataclasses import dataclass, field

from ...formats.orth import (JACKSON_CALLBACK_FILE, CALLBACK_DIR, DATE_DIR, GLUE_DIR, KNOWN_DIRS,
                             LEGACY_CALLBACK_DIR, LENIENT_DATE, LINE_PREFIX, LOG_FILE, MARKERS)
from ..fileio import FileView, input_error, kind_of, listdir
from ..findings import NOTE, WARNING, Finding
from .model import LogEntry
from .readlog import viewer_lines

#: Message text kept per entry (the entry's ``length`` stays exact); the markers are matched on the head and tail.
MESSAGE_CAP = 64 << 10
#: Above this size the viewer's line count (which needs the text up to the bad byte) is not computed.
VIEWER_CHECK_MAX = 64 << 20
_TAIL = 4 << 10
_EOL = re.compile(rb"\r\n|\r|\n")


def lenient_date(name: str) -> dt.date | None:
    """What lenient ``SimpleDateFormat("yyyy-MM-dd").parse(name)`` gives (None: ParseException). Out-of-range
    years are clamped to ``date.min`` / ``date.max`` (deleted / never deleted, as Java's far dates would be)."""
    m = LENIENT_DATE.match(name)
    if m is None:
        return None
    y, mo, d = int(m.group("y")), int(m.group("m")), int(m.group("d"))
    y += (mo - 1) // 12
    mo = (mo - 1) % 12 + 1
    if y < 1:
        return dt.date.min
    if y > 9999:
        return dt.date.max
    try:
        return dt.date(y, mo, 1) + dt.timedelta(days=d - 1)
    except OverflowError:
        return dt.date.min if d < 1 else dt.date.max


@dataclass(frozen=True, slots=True)
class ExecFile:
    path: str
    date_dir: str
    log_id: int
    pinned_size: int | None = None


@dataclass(slots=True)
class ExecutorLogSet:
    root: str
    files: list[ExecFile]
    findings: list[Finding] = field(default_factory=list)
    is_dir: bool = True
    log_path: str | None = None          # where callbacklogs/ would be (cross references), when known
    tz: str = "UTC"                      # the executor JVM's zone (times in lines, date directories)
    #: resolved from a logPath that also gave an orth-callbacks log (auto-detection): that log owns the retry files
    shared: bool = False


# ---------------------------------------------------------------- discovery
def is_log_path(p: str) -> bool:
    try:
        names = listdir(p)
    except OSError:
        return False
    return any(n in KNOWN_DIRS or DATE_DIR.match(n) for n in names)


def discover(paths, opts=None, tz: str = "UTC") -> list[ExecutorLogSet]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            name = os.path.basename(os.path.normpath(p))
            if is_log_path(p) and not DATE_DIR.match(name):
                out.append(_log_path(p))
            else:
                s = ExecutorLogSet(root=p, files=[])
                _date_dir(s, p, name)
                parent = os.path.dirname(os.path.abspath(p))
                s.log_path = parent if _has_callbacks(parent) else None
                out.append(s)
        else:
            name = os.path.basename(p)
            m = LOG_FILE.match(name)
            ddir = os.path.dirname(os.path.abspath(p))
            s = ExecutorLogSet(root=p, files=[], is_dir=False)
            if m is None:
                s.findings.append(Finding(WARNING, "OE-STRAY-FILE", f"'{name}' is not <logId>.log: Orth never reads "
                                          "or writes it", path=p))
            s.files.append(ExecFile(p, os.path.basename(ddir), int(m.group("id")) if m else 0))
            parent = os.path.dirname(ddir)
            s.log_path = parent if _has_callbacks(parent) else None
            out.append(s)
    for s in out:
        s.tz = tz
    return out


def _has_callbacks(d: str) -> bool:
    return any(os.path.isdir(os.path.join(d, n)) for n in (CALLBACK_DIR, LEGACY_CALLBACK_DIR)) or \
        os.path.isfile(os.path.join(d, JACKSON_CALLBACK_FILE))


def _listdir(d: str) -> list[str]:
    try:
        return sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None


def _log_path(p: str) -> ExecutorLogSet:
    s = ExecutorLogSet(root=p, files=[], log_path=p)
    for n in _listdir(p):
        c = os.path.join(p, n)
        if n == JACKSON_CALLBACK_FILE and os.path.isfile(c):
            continue              # xxl-job 2.0.0-2.0.1's retry file: the orth-callbacks format
        if n in KNOWN_DIRS:
            if n == GLUE_DIR and os.path.isdir(c):
                continue          # glue scripts: not logs, never cleaned (read by nothing here)
            continue              # retry files: the orth-callbacks format (cross-referenced by the replay)
        isdir = os.path.isdir(c)
        if isdir and DATE_DIR.match(n) and _valid_date(n):
            _date_dir(s, c, n)
        elif isdir and "-" in n:
            d = lenient_date(n)
            how = (f"Orth's retention reads it leniently as {d.isoformat()} and cleans it with that date"
                   if d is not None else "Orth's retention cannot parse it: it is never cleaned")
            s.findings.append(Finding(WARNING, "OE-BAD-DATE", f"'{n}' is not a yyyy-MM-dd date directory: {how}; "
                                      "Orth's log viewer never looks in it", path=c))
            _date_dir(s, c, n, report=False)
        elif isdir:
            s.findings.append(Finding(WARNING, "OE-STRAY-FILE", f"directory '{n}' is not a date directory (no '-': "
                                      "retention never cleans it)", path=c))
        else:
            s.findings.append(Finding(WARNING, "OE-STRAY-FILE", f"'{n}' in logPath is not something Orth writes "
                                      "(never cleaned)", path=c))
    return s


def _valid_date(n: str) -> bool:
    try:
        dt.date.fromisoformat(n)
        return True
    except ValueError:
        return False


def _date_dir(s: ExecutorLogSet, d: str, name: str, report: bool = True) -> None:
    if report and DATE_DIR.match(name) and not _valid_date(name):
        dd = lenient_date(name)
        s.findings.append(Finding(WARNING, "OE-BAD-DATE", f"'{name}' is not a real date: Orth's retention reads it "
                                  f"leniently as {dd.isoformat() if dd else '?'}", path=d))
    for n in _listdir(d):
        c = os.path.join(d, n)
        m = LOG_FILE.match(n)
        try:
            st = os.stat(c)
        except OSError:
            s.findings.append(Finding(WARNING, "OE-STRAY-FILE", f"'{n}': a dangling symbolic link", path=c))
            continue
        if m is not None and stat.S_ISREG(st.st_mode):
            s.files.append(ExecFile(c, name, int(m.group("id"))))
        else:
            what = kind_of(st.st_mode) if not stat.S_ISREG(st.st_mode) else "a file"
            s.findings.append(Finding(WARNING, "OE-STRAY-FILE", f"'{n}' ({what}) is not <logId>.log: Orth never "
                                      "reads it", path=c))


# ---------------------------------------------------------------- the reader: one log file
def first_bad_utf8(data, start: int, end: int, chunk: int = 1 << 20) -> int | None:
    """The offset of the first byte of ``data[start:end]`` that is not UTF-8, read 1 MiB at a time."""
    dec = codecs.getincrementaldecoder("utf-8")()
    pos = start
    while pos < end:
        piece = bytes(data[pos:min(end, pos + chunk)])
        held = len(dec.getstate()[0])          # bytes of a character begun in the previous piece
        try:
            dec.decode(piece, final=pos + len(piece) >= end)
        except UnicodeDecodeError as exc:
            return pos - held + exc.start
        pos += len(piece)
    return None


def zone(name: str):
    """The executor's zone (``-O tz=``): an IANA name or UTC."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    from ...errors import UsageError
    if name in ("UTC", "Z", "utc"):
        return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"-O tz: unknown time zone {name!r} (an IANA name such as Asia/Shanghai, or UTC)") from None


@functools.lru_cache(maxsize=8192)
def local_ns(text: str, tz) -> int | None:
    """A line's ``yyyy-MM-dd HH:mm:ss`` (``LINE_TIME_FORMAT``) in the executor's zone, as ns since the epoch."""
    try:
        d = dt.datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                        int(text[17:19]), tzinfo=tz)
    except ValueError:
        return None
    return int(d.timestamp()) * 1_000_000_000


_MARKER_STARTS = ("<br>-----------", "-----------", "orth script file")


def _classify(text: str) -> tuple[str, int | None]:
    if not text.startswith(_MARKER_STARTS):
        return "log", None
    for kind, rx in MARKERS:
        m = rx.match(text)
        if m is not None:
            if kind == "end-finish":
                try:
                    return kind, int(m.group("code") or m.group("rcode"))
                except (TypeError, ValueError):
                    return kind, None
            return kind, None
    return "log", None


class ExecutorReader:
    """Reads one ``ExecutorLogSet`` (or one of its files: ``only``): ``LogEntry`` records and findings."""

    def __init__(self, s: ExecutorLogSet, only: int | None = None, start_index: int = 0, discovery: bool = True):
        self.s = s
        self.only = only
        self.records = start_index
        self.bytes = 0
        self.segments_read = 0
        self.discovery = discovery
        self.zone = zone(s.tz)

    def events(self):
        if self.discovery:
            yield from self.s.findings
        files = self.s.files if self.only is None else [self.s.files[self.only]]
        for f in files:
            yield from self._file(f)

    def _file(self, f: ExecFile):
        try:
            v = FileView(f)
        except OSError as exc:
            raise input_error(f.path, exc) from None
        with v:
            data = v.data
            n = v.size
            self.segments_read += 1
            self.bytes += n
            pending: list = []           # the open entry: [start, end, first line no, lines, prefix match, parts]
            line_no = 0
            self._bad = None             # offset of the first byte that is not UTF-8
            pos = 0
            for m in _EOL.finditer(data) if n else ():
                line_no += 1
                yield from self._line(f, data, pos, m.start(), m.end(), line_no, pending)
                pos = m.end()
            partial = pos < n
            if partial:
                line_no += 1
                yield from self._line(f, data, pos, n, n, line_no, pending)
            if pending:
                yield from self._entry(f, pending)
            # findings of the whole file
            if self._bad is not None:
                bad_at = self._bad
                if n <= VIEWER_CHECK_MAX:
                    shown = viewer_lines(bytes(data[:bad_at]) + b"\xff")
                    view = f"shows lines 1..{shown} only (toLineNum={shown}) of {line_no}"
                else:
                    view = f"stops before it (line count not computed above {VIEWER_CHECK_MAX} bytes)"
                yield Finding(WARNING, "OE-INVALID-UTF8", f"byte 0x{data[bad_at]:02x} at {bad_at} is not UTF-8 (raw "
                              f"script output?): Orth's log viewer (readLog, strict UTF-8 in 8192-char chunks) "
                              f"{view}", path=f.path, offset=bad_at)
            if partial:
                yield Finding(NOTE, "OE-PARTIAL-LINE", f"the last line (line {line_no}) has no line separator: a write "
                              "in progress, or cut short", path=f.path, offset=pos)

    def _line(self, f, data, start, end, after, line_no, pending):
        raw = bytes(data[start:min(end, start + MESSAGE_CAP)])      # a line of gigabytes is not copied whole
        if self._bad is None and not (end - start <= MESSAGE_CAP and raw.isascii()):
            self._bad = first_bad_utf8(data, start, end)
        m = LINE_PREFIX.match(raw)
        out = ()
        if m is not None:
            if pending:
                out = self._entry(f, pending)
            pending[:] = [start, after, line_no, 1, m, [raw]]
        elif pending:
            pending[1] = after
            pending[3] += 1
            if sum(len(x) for x in pending[5]) < MESSAGE_CAP + _TAIL:
                pending[5].append(raw)
            else:
                pending[5][-1:] = [raw]    # keep the newest line as the tail
        else:
            pending[:] = [start, after, line_no, 1, None, [raw]]
        return out

    def _entry(self, f: ExecFile, pending: list) -> list:
        start, end, line_no, lines, m, parts = pending
        pending.clear()
        raw_msg = m.group(6) if m is not None else parts[0]
        chunks = [raw_msg] + parts[1:]
        utf8 = True
        texts = []
        for c in chunks:
            try:
                texts.append(c.decode("utf-8"))
            except UnicodeDecodeError:
                utf8 = False
                texts.append(c.decode("utf-8", "replace"))
        text = "\n".join(texts)
        if len(text) > MESSAGE_CAP:
            text = text[:MESSAGE_CAP] + f"\n… ({lines} lines, {end - start} bytes in all)\n" + texts[-1][-_TAIL:]
        if m is None:
            rec = LogEntry(f.path, start, end - start, self.records, f.log_id, f.date_dir, line_no, lines, None, None,
                           None, None, None, "text", text, None, utf8)
            self.records += 1
            return [rec, Finding(WARNING, "OE-UNPREFIXED", f"{lines} line(s) before the first prefixed line (not "
                                 "written by Orth's logger)", path=f.path, offset=start, record_index=rec.index)]
        kind, code = _classify(text)
        g = [x.decode("utf-8", "replace") for x in m.groups()[:5]]
        rec = LogEntry(f.path, start, end - start, self.records, f.log_id, f.date_dir, line_no, lines, g[0], g[1],
                       g[2], int(g[3]), g[4], kind, text, code, utf8, local_ns(g[0], self.zone))
        self.records += 1
        return [rec]
