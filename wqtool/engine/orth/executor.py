"""Executor log folders (``orth-executor-logs``): ``{logPath}/{yyyy-MM-dd}/{logId}.log``.

Discovery walks a ``logPath`` (or one date directory, or log files named explicitly); the reader turns one log
file into entries — a prefixed line (``formats.orth.LINE_PREFIX``) with its continuation lines (stack traces,
multi-line messages, raw script output, possibly not UTF-8) — and classifies each by the markers; the replay
derives each log id's run and callback state, cross-referenced with the retry files of the same ``logPath``.
"""
from __future__ import annotations

import codecs
import datetime as dt
import functools
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field

from ...formats.orth import (JACKSON_CALLBACK_FILE, CALLBACK_DIR, CALLBACK_MARKERS, DATE_DIR, END_HANDLE_CODE, GLUE_DIR, KNOWN_DIRS,
                             LEGACY_CALLBACK_DIR, LINE_PREFIX, LOG_FILE, MARKERS, EXECUTOR_RELEASES, log_status)
from ..fileio import FileView, input_error, kind_of, listdir
from ..findings import NOTE, WARNING, Finding
from ..run import ReplayPass
from .model import LogEntry
from .readlog import viewer_lines
from .retention import lenient_date

#: Message text kept per entry (the entry's ``length`` stays exact); the markers are matched on the head and tail.
MESSAGE_CAP = 64 << 10
#: Above this size the viewer's line count (which needs the text up to the bad byte) is not computed.
VIEWER_CHECK_MAX = 64 << 20
_TAIL = 4 << 10
_EOL = re.compile(rb"\r\n|\r|\n")


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


_END_FINISH = dict(MARKERS)["end-finish"]
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


# ---------------------------------------------------------------- replay: each log id's run and callback
@dataclass(slots=True)
class Run:
    log_id: int
    date_dir: str
    path: str
    runs: int = 0
    start_offset: int | None = None
    start_time: str | None = None
    end_time: str | None = None
    executor: str = "no-start"        # running | finished | failed | timeout | killed | no-start
    handle_code: int | None = None
    handle_msg: str | None = None
    callback: str = "none"            # success | failed | error | none
    callback_offset: int | None = None
    open_runs: list = field(default_factory=list)   # offsets of starts without an end
    ended_by: str | None = None       # the marker that ended the latest run (xxl-job writes a second one after it)
    release: int | None = None        # index in formats.orth.EXECUTOR_RELEASES of its most specific marker


class ExecutorReplay:
    def __init__(self):
        self.runs: dict[tuple[str, int], Run] = {}
        self.findings: list[Finding] = []

    def apply(self, e: LogEntry) -> None:
        key = (e.path, e.log_id)
        r = self.runs.get(key)
        if r is None:
            r = self.runs[key] = Run(e.log_id, e.date_dir, e.path)
        k = e.kind
        if k != "log":                # the most specific marker wins
            rel = next((i for i, (_, rx) in enumerate(EXECUTOR_RELEASES) if rx.match(e.message)), None)
            if rel is not None and (r.release is None or rel < r.release):
                r.release = rel
        if k == "start":
            r.ended_by = None
            r.runs += 1
            r.executor = "running"
            r.start_offset = e.offset
            r.start_time = e.time
            r.end_time = None
            r.handle_code = None
            r.handle_msg = None
            r.open_runs.append(e.offset)
        elif k in END_HANDLE_CODE or k == "end-finish":
            if k == "end-finish":
                r.handle_code = e.handle_code if e.handle_code is not None else 500
                r.executor = "finished" if r.handle_code == 200 else "failed"
                m = _END_FINISH.match(e.message)
                msg = None if m is None else m.group("msg") if m.group("code") is not None else m.group("rmsg")
                r.handle_msg = None if msg == "null" else msg
                if r.executor == "failed" and r.ended_by == "timeout":    # xxl-job: timeout, then end(finish) 502
                    r.executor = "timeout"
            elif k == "stopped":
                if r.executor != "running":
                    return                    # a stop after the end (or of a queued trigger): nothing changes
                r.handle_code, r.executor = 500, "killed"
            elif k == "end-error" and r.ended_by == "stopped" and not r.open_runs:
                r.ended_by = k                # xxl-job: toStop, then the interrupted run's end(error): killed
                return
            else:
                r.handle_code = END_HANDLE_CODE[k]
                r.executor = "timeout" if k == "timeout" else "failed"
            r.end_time = e.time
            r.ended_by = None if not r.open_runs else k
            if r.open_runs:
                r.open_runs.pop()
        elif k in CALLBACK_MARKERS:
            r.callback = k.split("-", 1)[1]
            r.callback_offset = e.offset

    def finish(self, retry: dict[int, list[tuple[str, int]]]) -> "ExecutorState":
        fs = self.findings
        for r in self.runs.values():
            held = retry.get(r.log_id, [])
            names = ", ".join(f"{os.path.basename(p)} (handleCode {c})" for p, c in held)
            if r.runs == 0:
                fs.append(Finding(WARNING, "OE-ORPHAN", f"log id {r.log_id}: no 'execute start' line — only "
                                  f"{'callback lines' if r.callback != 'none' else 'other lines'}: its run's log was "
                                  "cleaned and Orth re-created the file writing callback lines, or the trigger was "
                                  "killed while queued", path=r.path, offset=0))
            for off in r.open_runs:
                fs.append(Finding(WARNING, "OE-NO-END", f"log id {r.log_id}: a run started at "
                                  f"{r.start_time or '?'} has no end marker: still running, or the executor died "
                                  "(the admin shows Pending until its lost-job monitor fails it: 10 min after the "
                                  "trigger, and only when the executor is offline)", path=r.path, offset=off))
            if r.callback in ("failed", "error"):
                tail = (f"a retry file still holds it: {names} (pending)" if held else
                        "no retry file holds it: unless a later retry delivered it (no success line follows), "
                        "the admin never learns this result")
                fs.append(Finding(WARNING, "OE-CALLBACK-FAILED", f"log id {r.log_id}: the last callback attempt "
                                  f"{r.callback}; {tail}", path=r.path, offset=r.callback_offset))
            if held:
                fs.append(Finding(NOTE, "OE-RETRY-PENDING", f"log id {r.log_id}: its callback waits in {names}",
                                  path=r.path, offset=0))
        return ExecutorState(self.runs, retry)


ADMIN_STATES = ("Init", "Pending", "Success", "Timeout", "Trigger Failed", "Failed", "Unknown")


@dataclass
class ExecutorState:
    runs: dict
    retry: dict

    def rows(self) -> list[dict]:
        out = []
        for (path, lid) in sorted(self.runs, key=lambda k: (k[1], k[0])):
            r = self.runs[(path, lid)]
            code = r.handle_code
            held = self.retry.get(lid, [])
            if code is None and held:
                code = held[-1][1]          # an orphan whose retry file tells the result
            status = log_status(200, code) if code is not None else ("Pending" if r.runs else "Unknown")
            admin = status if r.callback == "success" else ("Pending" if r.runs or held else "Unknown")
            out.append({"log_id": lid, "date": r.date_dir, "executor": r.executor, "runs": r.runs,
                        "start_time": r.start_time, "end_time": r.end_time, "handle_code": code,
                        "status": status, "callback": r.callback, "admin_status": admin,
                        "retry_files": [os.path.basename(p) for p, _ in held], "file": path})
        return out

    def releases(self) -> list[str]:
        """The release lines whose markers the logs hold (``formats.orth.EXECUTOR_RELEASES``), in that order."""
        seen = {r.release for r in self.runs.values() if r.release is not None}
        if seen & {0, 1}:
            seen.discard(2)            # runs without end(finish) belong to the line the other runs name
        return [EXECUTOR_RELEASES[i][0] for i in sorted(seen)]

    def counts_by_state(self) -> dict[str, int]:
        c = {s: 0 for s in ADMIN_STATES}
        for row in self.rows():
            c[row["status"]] += 1
        return c

    def by_date(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for row in self.rows():
            d = out.setdefault(row["date"], {s: 0 for s in ADMIN_STATES})
            d[row["status"]] += 1
        return dict(sorted(out.items()))

    def digest(self) -> str:
        h = hashlib.sha256()
        for row in self.rows():
            row = dict(row, file=os.path.basename(row["file"]))
            h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
            h.update(b"\n")
        return h.hexdigest()


def retry_references(log_path: str | None) -> dict[int, list[tuple[str, int]]]:
    """log id -> [(retry file, handleCode)] of the retry files under ``log_path`` (read with the orth-callbacks
    reader; its findings are that format's business)."""
    from .callbacks import CallbackReader, discover as discover_callbacks
    from .model import Callback
    out: dict[int, list[tuple[str, int]]] = {}
    if not log_path or not _has_callbacks(log_path):
        return out
    for cs in discover_callbacks([log_path]):
        for ev in CallbackReader(cs, discovery=False).events():
            if ev.__class__ is Callback:
                out.setdefault(ev.log_id, []).append((ev.path, ev.handle_code))
    return out


class ExecutorRun(ReplayPass):
    record_cls = LogEntry

    def __init__(self, s: ExecutorLogSet, limit: int | None = None):
        super().__init__(s.root, ExecutorReader(s), ExecutorReplay(), limit)
        self.s = s

    def finish(self):
        state = self.replay.finish(retry_references(self.s.log_path))
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing

