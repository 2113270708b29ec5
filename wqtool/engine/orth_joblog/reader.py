"""Reading orth_job_log rows: discovery of the sources behind PATHs, one reader per source kind, and the one
conversion of raw values to typed rows (``Converter``) every source shares — so a row means the same whatever it
was read from, and the Spark tasks run this very code.

Sources (``Source.kind``): ``csv`` (a header row naming the columns; RFC 4180 quoting; an unquoted empty field or
``\\N`` is NULL, ``""`` the empty string), ``jsonl`` (one JSON object per line), ``parquet`` (needs pyarrow),
``sqldump`` (a ``mysqldump`` file: its INSERTs, scanned by ``sqldump.DumpScanner``), ``sqlite`` and ``mysql``
(a table in a database, read in id order). A log is one table: one file, several files of one export (a
directory: ``part-*`` files or ``orth_job_log*`` files), or one database table.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
from dataclasses import dataclass, field
from typing import Iterator

from ...errors import InputError, UsageError
from ...formats.orth_joblog import (BY_NAME, COLUMN_NAMES, COLUMNS, OPTIONAL_COLUMNS, REGISTRY_COLUMN_NAMES,
                                    REGISTRY_TABLE_NAMES, TABLE, TABLE_NAMES, rules_for_table)
from ..fileio import FileView, listdir, open_regular
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from . import dburl
from .model import RegistryRow, Row, from_datetime, parse_datetime
from .sqldump import (PG_HEADER, PG_TRAILER, Create, Damage, DumpScanner, Stmt, Tuple, dialect_of, has_header,
                      has_trailer, unsupported)

#: A CSV / JSON row is never longer than this (16 columns, two texts of 64 KiB, escaped): past it, damage.
ROW_CAP = 1 << 20
FILE_KINDS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet",
              ".sql": "sqldump", ".dump": "sqldump"}
_MISSING = object()
_INT_RE = re.compile(r"-?[0-9]+\Z")


@dataclass
class Source:
    kind: str           # csv | jsonl | parquet | sqldump | sqlite | mysql
    path: str           # a file path, or the URL as given
    table: str = TABLE  # database sources: the table read


@dataclass
class TableLog:
    """One orth_job_log table behind PATHs: its sources (files, in order, or one database table), where its
    registry comes from, discovery's findings."""

    root: str
    sources: list[Source]
    registry: Source | None = None
    registry_origin: str = ""
    findings: list[Finding] = field(default_factory=list)
    is_dir: bool = False
    timezone: str = "UTC"
    lost_message_lang: str = "auto"
    #: the job-log table the rows are of: ``orth_job_log`` or ``xxl_job_log`` (whose admin's rules apply), from the
    #: database table, the export's file names, or the table a dump's statements name (``table_of_dump``)
    table: str = TABLE

    @property
    def files(self) -> list[str]:
        return [s.path for s in self.sources]


# ---------------------------------------------------------------- discovery
def kind_of_file(path: str) -> str | None:
    return FILE_KINDS.get(os.path.splitext(path)[1].lower())


def discover(paths, *, timezone: str = "UTC", registry: str | None = None) -> list[TableLog]:
    """Each PATH is one table: a file, a directory of one export's files, or a database URL."""
    out = []
    for p in paths:
        if dburl.is_db_url(p):
            u = dburl.parse(p)
            src = Source(u.kind, p, u.table)
            reg = Source(u.kind, p, REGISTRY_TABLE_NAMES[0] if u.table == TABLE else
                         u.table.replace("job_log", "job_registry"))
            log = TableLog(dburl.redact(p), [src], reg, "the same database", timezone=timezone,
                           table=rules_for_table(u.table).table)
        elif os.path.isdir(p):
            files, reg = _dir_files(p)
            if not files:
                raise UsageError("not an orth_job_log export directory (no orth_job_log*.csv|jsonl|parquet|sql "
                                 "or part-* files)", path=p)
            log = TableLog(p, files, reg, "the export directory" if reg else "", is_dir=True, timezone=timezone,
                           table=_table_of_files(files))
        else:
            kind = kind_of_file(p)
            if kind is None:
                raise UsageError("an orth_job_log export needs a .csv, .jsonl, .parquet or .sql (mysqldump) name",
                                 path=p)
            reg, origin = _sibling_registry(p, kind)
            log = TableLog(p, [Source(kind, p)], reg, origin, timezone=timezone,
                           table=_table_of_files([Source(kind, p)]))
        if log.table != TABLE:
            rs = rules_for_table(log.table)
            log.findings.append(Finding(NOTE, "OJL-TABLE", f"rows of {rs.table} ({rs.admin}'s table): {rs.admin}'s "
                                        "list filters (Success, Fail, Running) and its separate trigger and handle "
                                        "results apply, not Orth's combined status", path=log.root))
        if registry is not None:
            if registry.lower() == "none":
                log.registry, log.registry_origin = None, ""
            elif dburl.is_db_url(registry):
                u = dburl.parse(registry)
                log.registry, log.registry_origin = Source(u.kind, registry, u.table), "-O registry"
            else:
                k = kind_of_file(registry)
                if k is None or not os.path.isfile(registry):
                    raise UsageError("-O registry: expected an orth_job_registry export (.csv, .jsonl, .parquet, "
                                     ".sql), a database URL or none", path=registry)
                log.registry, log.registry_origin = Source(k, registry), "-O registry"
        out.append(log)
    return out


def _dir_files(d: str) -> tuple[list[Source], Source | None]:
    files, reg = [], None
    for name in sorted(listdir(d)):
        p = os.path.join(d, name)
        kind = kind_of_file(name)
        if kind is None or not os.path.isfile(p):
            continue
        low = name.lower()
        if low.startswith(REGISTRY_TABLE_NAMES):
            reg = reg or Source(kind, p)
        elif low.startswith(TABLE_NAMES) or low.startswith("part-"):
            files.append(Source(kind, p))
    return files, reg


def _table_of_files(files: list[Source]) -> str:
    """Which table an export holds: the one a file name (``xxl_job_log*``, ``orth_job_log*``) or a dump's first
    job-log statement names; Orth's when none does (``part-*`` files)."""
    for s in files:
        low = os.path.basename(s.path).lower()
        if s.kind == "sqldump":
            t = table_of_dump(s.path)
            if t is not None:
                return t
        for t in TABLE_NAMES:
            if low.startswith(t):
                return t
    return TABLE


_DUMP_TABLE_RE = re.compile(rb"(?:CREATE\s+TABLE|INSERT\s+INTO|COPY|REPLACE\s+INTO)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                            rb"(?:[`\"]?\w+[`\"]?\.)?[`\"]?(" + b"|".join(t.encode() for t in TABLE_NAMES)
                            + rb")[`\"]?[\s(]", re.I)
_DUMP_SNIFF_CHUNK = 1 << 20


def table_of_dump(path: str) -> str | None:
    """The job-log table the first CREATE TABLE / INSERT / COPY of a dump names (read in 1 MiB chunks, so memory
    stays bounded; None if none does or the file cannot be read: the reader reports that)."""
    try:
        with open(path, "rb") as f:
            tail = b""
            while True:
                chunk = f.read(_DUMP_SNIFF_CHUNK)
                if not chunk:
                    return None
                m = _DUMP_TABLE_RE.search(tail + chunk)
                if m is not None:
                    return m.group(1).decode().lower()
                tail = chunk[-256:]
    except OSError:
        return None


def _sibling_registry(path: str, kind: str) -> tuple[Source | None, str]:
    """A single export file's registry: ``orth_job_registry.<ext>`` beside it; a dump holds its own."""
    if kind == "sqldump":
        return Source("sqldump", path, REGISTRY_TABLE_NAMES[0]), "the same dump"
    d = os.path.dirname(path) or "."
    for name in REGISTRY_TABLE_NAMES:
        for ext in (".csv", ".jsonl", ".parquet", ".json", ".ndjson"):
            p = os.path.join(d, name + ext)
            if os.path.isfile(p) and os.path.abspath(p) != os.path.abspath(path):
                return Source(kind_of_file(p), p), os.path.basename(p)
    return None, ""


# ---------------------------------------------------------------- raw values -> typed rows
class Converter:
    """Raw values (str from text exports, bytes from dumps, int, datetime, None) -> a typed ``Row``, or the
    findings that say why the values cannot be a row of the table."""

    def __init__(self, tz=None, table: str = TABLE):
        self.tz = tz
        self.table = table

    def row(self, vals: list, path: str, offset: int, length: int, index: int, file: int,
            verdict: Verdict) -> tuple[Row | None, list[Finding]]:
        """``vals`` in COLUMN_NAMES order (``_MISSING`` for a column the source lacks)."""
        out = []
        bad: list[Finding] = []
        for c, v in zip(COLUMNS, vals):
            if v is _MISSING or v is None:
                if c.nullable:
                    out.append(None)
                    continue
                bad.append(self._finding("OJL-NULL", f"{c.name} is {'missing' if v is _MISSING else 'NULL'}; the "
                                         f"column is {c.ddl}", path, offset, index, verdict))
                out.append(None)
                continue
            kind = c.kind
            if kind == "int":
                if v.__class__ is int:
                    iv = v
                elif isinstance(v, (str, bytes)):
                    s = v.decode("ascii", "replace") if isinstance(v, bytes) else v
                    if s.isdigit() and s.isascii() or _INT_RE.match(s):
                        iv = int(s)
                    else:
                        bad.append(self._type(c, f"not an integer: {_short(s)}", path, offset, index, verdict))
                        out.append(None)
                        continue
                elif isinstance(v, bool) or not isinstance(v, int):
                    bad.append(self._type(c, f"not an integer: {_short(v)}", path, offset, index, verdict))
                    out.append(None)
                    continue
                else:
                    iv = int(v)
                lo, hi = c.int_range
                if not lo <= iv <= hi:
                    bad.append(self._type(c, f"{iv} is out of range for {c.ddl.split()[0]}", path, offset, index,
                                          verdict))
                    out.append(None)
                    continue
                out.append(iv)
            elif kind == "str":
                if isinstance(v, bytes):
                    try:
                        v = v.decode("utf-8")
                    except UnicodeDecodeError as e:
                        bad.append(self._finding("OJL-ENCODING", f"{c.name}: invalid UTF-8 at byte {e.start} of the "
                                                 "value", path, offset, index, verdict))
                        out.append(None)
                        continue
                elif not isinstance(v, str):
                    v = str(v)
                if c.max_chars is not None and len(v) > c.max_chars:
                    bad.append(self._type(c, f"{len(v)} characters, longer than {c.ddl.split()[0]}", path, offset,
                                          index, verdict))
                    out.append(None)
                    continue
                if c.max_bytes is not None and len(v) * 4 > c.max_bytes and len(v.encode("utf-8", "surrogatepass")) \
                        > c.max_bytes:
                    bad.append(self._type(c, f"longer than text's {c.max_bytes} bytes", path, offset, index, verdict))
                    out.append(None)
                    continue
                out.append(v)
            else:
                t = self._datetime(v)
                if t is None:
                    bad.append(self._type(c, f"not a datetime (YYYY-MM-DD HH:MM:SS): {_short(v)}", path, offset,
                                          index, verdict))
                    out.append(None)
                    continue
                out.append(t)
        if bad:
            return None, bad
        return Row(path, offset, length, index, file, *out, table=self.table), bad

    def _datetime(self, v) -> int | None:
        if isinstance(v, bytes):
            v = v.decode("ascii", "replace")
        if isinstance(v, str):
            return parse_datetime(v)
        if isinstance(v, _dt.datetime):
            if v.tzinfo is not None and self.tz is not None:
                v = v.astimezone(self.tz).replace(tzinfo=None)
            return from_datetime(v)
        return None

    @staticmethod
    def _finding(code, msg, path, offset, index, verdict) -> Finding:
        return Finding(ERROR, code, msg, path=path, offset=offset, record_index=index, verdict=verdict)

    def _type(self, c, msg, path, offset, index, verdict) -> Finding:
        return self._finding("OJL-TYPE", f"{c.name}: {msg}", path, offset, index, verdict)


def _short(v, n: int = 40) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "…"


def order_columns(names: list[str]) -> tuple[list[int | None], list[str], list[str]]:
    """A source's column names -> for each declared column its position in the source (None: absent), the
    required columns it lacks, its extra columns."""
    pos = {}
    for i, n in enumerate(names):
        pos.setdefault(n.strip().lower(), i)
    where = [pos.get(c) for c in COLUMN_NAMES]
    missing = [c.name for c, w in zip(COLUMNS, where) if w is None and c.name not in OPTIONAL_COLUMNS]
    extra = [n for n in pos if n not in BY_NAME]
    return where, missing, extra


# ---------------------------------------------------------------- the reader of one log
class TableReader:
    """``events()``: the rows (``Row``) and findings of a log's sources, in order; counts records, bytes and
    files read. ``file_index``: read only that source (a Spark task); ``last``: whether that source is the log's
    last (damage at its end is a torn tail)."""

    def __init__(self, log: TableLog, *, tz=None, file_index: int | None = None, start_index: int = 0):
        self.log = log
        self.conv = Converter(tz, log.table)
        self.file_index = file_index
        self.records = start_index
        self.bytes = 0
        self.segments_read = 0

    def events(self, readers: dict | None = None) -> Iterator:
        """``readers``: a reader function per source kind standing in for the reference ones (the columnar
        fast path's, ``fastpath.FAST_READERS``: they also yield ``fastpath.Batch`` events)."""
        log = self.log
        if self.file_index is None:
            yield from log.findings
            items = list(enumerate(log.sources))
        else:
            items = [(self.file_index, log.sources[self.file_index])]
        for i, src in items:
            last = i == len(log.sources) - 1
            self.segments_read += 1
            fn = (readers or _READERS).get(src.kind) or _READERS[src.kind]
            yield from fn(self, src, i, last)

    # -- helpers shared by the text readers
    def _emit(self, vals, src, offset, length, file, torn_ok: bool, last_row: bool):
        """Convert and yield one row (or its findings)."""
        verdict = Verdict.TORN_TAIL if (torn_ok and last_row) else Verdict.CORRUPT
        row, bad = self.conv.row(vals, src.path, offset, length, self.records, file, verdict)
        if row is not None:
            self.records += 1
            return row, ()
        if torn_ok and last_row:
            for f in bad:
                f.code, f.message = "OJL-TRUNCATED", f"the file ends inside this row ({f.message}): torn tail"
                f.last_good_offset = offset
        return None, bad


def _header_findings(src: Source, names: list[str], offset: int = 0) -> tuple[list[int | None] | None, list]:
    where, missing, extra = order_columns(names)
    out = []
    if missing:
        out.append(Finding(ERROR, "OJL-HEADER", f"no column {', '.join(missing)} (found: {', '.join(names[:20])})",
                           path=src.path, offset=offset, verdict=Verdict.CORRUPT))
        return None, out
    if extra:
        out.append(Finding(WARNING, "OJL-EXTRA-COLUMN", f"columns the table does not declare, ignored: "
                           f"{', '.join(extra[:10])}", path=src.path, offset=offset))
    if where[COLUMN_NAMES.index("schedule_time")] is None:
        out.append(Finding(NOTE, "OJL-OLD-SCHEMA", "no schedule_time column (xxl-job's table): read as NULL",
                           path=src.path, offset=offset))
    return where, out


def _pick(where, fields) -> list:
    return [_MISSING if w is None else (fields[w] if w < len(fields) else _MISSING) for w in where]


# ---------------------------------------------------------------- CSV
_CSV_FIELD = re.compile(r'"((?:[^"]|"")*)"|([^,"]*)')


def split_csv(text: str) -> list | None:
    """One CSV record (no line terminator) -> fields: ``"..."`` a string (``""`` inside a quote), an unquoted
    empty field or ``\\N`` NULL (None), else the text. None: malformed quoting."""
    if '"' not in text:
        return [None if f == "" or f == "\\N" else f for f in text.split(",")]
    out = []
    pos, n = 0, len(text)
    while True:
        m = _CSV_FIELD.match(text, pos)
        if m.group(1) is not None:
            out.append(m.group(1).replace('""', '"'))
        else:
            f = m.group(2)
            out.append(None if f == "" or f == "\\N" else f)
        pos = m.end()
        if pos == n:
            return out
        if text[pos] != ",":
            return None
        pos += 1
        if pos == n:
            out.append(None)
            return out


def _lines(src: Source, start: int = 0, stop: int | None = None):
    """(offset, raw line bytes, end offset) per line from ``start`` (a line start) to ``stop`` (a line end; None:
    the end of the file); capped at ROW_CAP (then ``None`` bytes: too large, resumes at the next newline)."""
    fd = open_regular(src.path)
    with os.fdopen(fd, "rb", buffering=1 << 20) as f:
        pos = start
        if start:
            f.seek(start)
        while stop is None or pos < stop:
            line = f.readline(ROW_CAP + 1)
            if not line:
                return
            start = pos
            pos += len(line)
            if len(line) > ROW_CAP and not line.endswith(b"\n"):
                while True:  # skip the rest of an oversized line
                    more = f.readline(1 << 20)
                    pos += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield start, None, pos
                continue
            yield start, line, pos


def _csv_records(src: Source, start: int = 0, stop: int | None = None):
    """(offset, raw bytes, kind) per CSV record from ``start`` (a record start) to ``stop``: a record continues
    over newlines while its quotes are open; kind "rec", "too-large" (raw None; skipped to the next newline) or
    "open" (the file ends inside a quoted field)."""
    parts: list[bytes] = []
    quotes = 0
    rec_start = start
    for start, line, end in _lines(src, start, stop):
        if line is None:
            if parts:
                yield rec_start, None, "too-large"
                parts, quotes = [], 0
            yield start, None, "too-large"
            continue
        if not parts:
            rec_start = start
        parts.append(line)
        quotes += line.count(b'"')
        if quotes % 2:
            if end - rec_start > ROW_CAP:
                yield rec_start, None, "too-large"
                parts, quotes = [], 0
            continue
        yield rec_start, b"".join(parts), "rec"
        parts, quotes = [], 0
    if parts:
        yield rec_start, b"".join(parts), "open"


def _read_csv(reader: TableReader, src: Source, file: int, last: bool):
    header = where = None
    prev = None
    for item in _csv_records(src):
        if prev is not None:
            yield from _csv_item(reader, src, file, header, where, *prev, False, last)
        if header is None and item[2] == "rec":
            header, where, fs = _csv_header(src, item[1])
            yield from fs
            if where is None:
                return
            prev = None
            continue
        prev = item
    if prev is not None:
        yield from _csv_item(reader, src, file, header, where, *prev, True, last)
    if header is None:
        yield Finding(ERROR, "OJL-HEADER", "no CSV header row", path=src.path, offset=0, verdict=Verdict.CORRUPT)
    count_bytes(reader, src)


def count_bytes(reader: TableReader, src: Source) -> None:
    try:
        reader.bytes += os.path.getsize(src.path)
    except OSError:
        pass


def csv_range(reader: TableReader, src: Source, file: int, header, where, start: int, stop: int | None,
              last: bool):
    """The reference reader over the records from ``start`` (a record start after the header) to ``stop`` (a
    record end; None: the end of the file): what ``_read_csv`` yields for them (the fast path's fallback)."""
    prev = None
    for item in _csv_records(src, start, stop):
        if prev is not None:
            yield from _csv_item(reader, src, file, header, where, *prev, False, last)
        prev = item
    if prev is not None:
        yield from _csv_item(reader, src, file, header, where, *prev, stop is None, last)


def csv_header(src: Source):
    """The header of a CSV source as ``_read_csv`` takes it when the file starts with it: (names, where,
    findings, end offset), or None when the first record is not one (the fast path leaves such files to the
    reference)."""
    records = _csv_records(src)
    try:
        for start, raw, kind in records:
            if kind != "rec":
                return None
            header, where, fs = _csv_header(src, raw)
            return header, where, fs, start + len(raw)
        return None
    finally:
        records.close()


def _csv_item(reader, src, file, header, where, start, raw, kind, at_eof, last):
    if kind == "too-large":
        yield Finding(ERROR, "OJL-TOO-LARGE", f"a record longer than {ROW_CAP} bytes (an open quote?): skipped",
                      path=src.path, offset=start, record_index=reader.records, verdict=Verdict.CORRUPT)
    elif kind == "open":
        torn = at_eof and last
        yield Finding(ERROR, "OJL-TRUNCATED", "the file ends inside a quoted field" + (": torn tail" if torn else ""),
                      path=src.path, offset=start, record_index=reader.records, last_good_offset=start,
                      verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT)
    elif header is not None:
        yield from _csv_record(reader, src, file, header, where, start, raw, at_eof, last)


def _csv_header(src: Source, raw: bytes):
    text = raw.decode("utf-8", "replace").rstrip("\r\n").lstrip("\ufeff")
    names = split_csv(text) or []
    names = [n or "" for n in names]
    where, fs = _header_findings(src, names)
    return names, where, fs


def _csv_record(reader, src, file, header, where, start, raw, at_eof: bool, last: bool):
    terminated = raw.endswith(b"\n")
    torn = at_eof and last and not terminated
    body = raw[:-1] if terminated else raw
    if body.endswith(b"\r"):
        body = body[:-1]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        yield Finding(ERROR, "OJL-TRUNCATED" if torn else "OJL-ENCODING",
                      f"invalid UTF-8 at byte {e.start} of the row" + (": torn tail" if torn else ""), path=src.path,
                      offset=start, record_index=reader.records, last_good_offset=start if torn else None,
                      verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT)
        return
    if not text.strip():
        return
    fields = split_csv(text)
    if fields is None or len(fields) != len(header):
        what = "malformed quoting" if fields is None else f"{len(fields)} fields, the header has {len(header)}"
        yield Finding(ERROR, "OJL-TRUNCATED" if torn else "OJL-PARSE", what + (": the file ends inside this row "
                      "(torn tail)" if torn else ""), path=src.path, offset=start, record_index=reader.records,
                      last_good_offset=start if torn else None, verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT)
        return
    row, bad = reader._emit(_pick(where, fields), src, start, len(raw), file, torn, True)
    if row is not None:
        yield row
    else:
        yield from bad


# ---------------------------------------------------------------- JSON Lines
def _read_jsonl(reader: TableReader, src: Source, file: int, last: bool):
    lines = _lines(src)
    prev = None
    size = 0
    announced = False
    for item in lines:
        size = item[2]
        if prev is not None:
            yield from _json_line(reader, src, file, *prev, False, last, announced)
            announced = True
        prev = item
    if prev is not None:
        yield from _json_line(reader, src, file, *prev, True, last, announced)
    reader.bytes += size


_DEFAULT_WHERE = list(range(len(COLUMN_NAMES)))


def _json_line(reader, src, file, start, line, end, at_eof, last, announced):
    if line is None:
        yield Finding(ERROR, "OJL-TOO-LARGE", f"a line longer than {ROW_CAP} bytes: skipped", path=src.path,
                      offset=start, record_index=reader.records, verdict=Verdict.CORRUPT)
        return
    terminated = line.endswith(b"\n")
    torn = at_eof and last and not terminated
    if not line.strip():
        return
    try:
        obj = json.loads(line)
    except UnicodeDecodeError as e:
        obj, err, code = None, f"invalid UTF-8 ({e.reason})", "OJL-ENCODING"
    except ValueError as e:
        obj, err, code = None, f"not JSON: {e.msg} at column {e.colno}", "OJL-PARSE"
    else:
        err = None if isinstance(obj, dict) else "not a JSON object"
        code = "OJL-PARSE"
    if err is not None:
        yield Finding(ERROR, "OJL-TRUNCATED" if torn else code, err + (": the file ends inside this line (torn "
                      "tail)" if torn else ""), path=src.path, offset=start, record_index=reader.records,
                      last_good_offset=start if torn else None, verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT)
        return
    if not announced:
        names = list(obj)
        where, missing, extra = order_columns(names)
        if extra:
            yield Finding(WARNING, "OJL-EXTRA-COLUMN", f"keys the table does not declare, ignored: "
                          f"{', '.join(extra[:10])}", path=src.path, offset=start)
    vals = [obj.get(c, _MISSING) for c in COLUMN_NAMES]
    for i, v in enumerate(vals):
        if isinstance(v, float) and COLUMNS[i].kind == "int":
            vals[i] = repr(v)
    row, bad = reader._emit(vals, src, start, len(line), file, torn, True)
    if row is not None:
        yield row
    else:
        yield from bad


# ---------------------------------------------------------------- Parquet
def _read_parquet(reader: TableReader, src: Source, file: int, last: bool, *, batches=None,
                  batch_size: int = 8192):
    """``batches``: what turns each Arrow record batch into events (default ``parquet_rows``, the reference)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("reading Parquet needs pyarrow (pip install 'wqtool[spark]')", path=src.path) from None
    fd = open_regular(src.path)
    with os.fdopen(fd, "rb") as fh:
        try:
            pf = pq.ParquetFile(fh)
        except Exception as e:  # noqa: BLE001 — pyarrow's errors: a file that is not Parquet
            yield Finding(ERROR, "OJL-PARSE", f"not a readable Parquet file: {e}", path=src.path, offset=0,
                          verdict=Verdict.CORRUPT)
            return
        names = pf.schema_arrow.names
        where, fs = _header_findings(src, names)
        yield from fs
        if where is None:
            return
        reader.bytes += os.fstat(fd).st_size
        cols = [names[w] if w is not None else None for w in where]
        present = [c for c in cols if c is not None]
        n = 0
        for batch in pf.iter_batches(batch_size=batch_size, columns=present):
            yield from (batches or parquet_rows)(reader, src, file, batch, cols, n)
            n += batch.num_rows


def parquet_rows(reader: TableReader, src: Source, file: int, batch, cols: list, n: int):
    """The rows (or findings) of one Arrow record batch of a Parquet source, ``n`` its first row's ordinal;
    ``cols``: the batch's column name per declared column (None: absent)."""
    data = {c: batch.column(c).to_pylist() for c in cols if c is not None}
    for k in range(batch.num_rows):
        vals = [_MISSING if c is None else data[c][k] for c in cols]
        row, bad = reader._emit(vals, src, n + k, 0, file, False, False)
        if row is not None:
            yield row
        else:
            yield from bad


# ---------------------------------------------------------------- mysqldump
def _read_dump(reader: TableReader, src: Source, file: int, last: bool):
    with FileView(src) as fv:
        data = fv.data
        reader.bytes += fv.size
        head = bytes(data[:256])
        what = unsupported(head)
        if what is not None:
            raise UsageError(f"unsupported dump dialect: {what}", path=src.path)
        dialect = dialect_of(head, data)
        scanner = DumpScanner(data, frozenset(TABLE_NAMES), dialect)
        declared: dict[str, list[str]] = {}
        where = _DEFAULT_WHERE
        rows = 0
        stmt = None
        pending = None   # hold each row until we know whether the statement is cut at EOF
        for ev in scanner.events():
            cls = ev.__class__
            if cls is Tuple:
                if pending is not None:
                    yield from pending
                pending = None
                if where is None:
                    continue
                vals = _pick(where, ev.values)
                if len(ev.values) != (len(stmt.columns) if stmt.columns else len(declared.get(stmt.table,
                                                                                            COLUMN_NAMES))):
                    pending = [Finding(ERROR, "OJL-PARSE", f"{len(ev.values)} values, the column list has "
                                       f"{len(stmt.columns) if stmt.columns else len(declared.get(stmt.table, COLUMN_NAMES))}"
                                       " (MySQL: Column count doesn't match value count)", path=src.path,
                                       offset=ev.offset, record_index=reader.records, verdict=Verdict.CORRUPT)]
                    continue
                row, bad = reader._emit(vals, src, ev.offset, ev.length, file, False, False)
                rows += row is not None
                pending = [row] if row is not None else bad
            elif cls is Stmt:
                if pending is not None:
                    yield from pending
                    pending = None
                stmt = ev
                names = ev.columns or declared.get(ev.table) or list(COLUMN_NAMES)
                where, fs = _header_findings(src, names, ev.offset) if (ev.columns or ev.table in declared) else \
                    (_DEFAULT_WHERE, [])
                if ev.columns or ev.table in declared:
                    fs = [f for f in fs if f.code != "OJL-OLD-SCHEMA" or ev.table in declared]
                yield from fs
            elif cls is Create:
                declared[ev.table] = ev.columns
                where2, fs = _header_findings(src, ev.columns, ev.offset)
                yield from fs
            elif cls is Damage:
                if ev.kind == "truncated":
                    cut = pending or []
                    pending = None
                    torn = last
                    yield from cut
                    yield Finding(ERROR, "OJL-TRUNCATED", ev.message + (": torn tail; `mysql < dump` rejects the "
                                  "whole statement" if torn else ""), path=src.path, offset=ev.offset,
                                  record_index=reader.records, last_good_offset=ev.stmt_offset,
                                  verdict=Verdict.TORN_TAIL if torn else Verdict.CORRUPT)
                else:
                    if pending is not None:
                        yield from pending
                        pending = None
                    code = "OJL-TOO-LARGE" if ev.kind == "too-large" else "OJL-PARSE"
                    yield Finding(ERROR, code, ev.message + " (the rest of this INSERT is skipped)", path=src.path,
                                  offset=ev.offset, record_index=reader.records, verdict=Verdict.CORRUPT)
        if pending is not None:
            yield from pending
        if dialect == "postgresql":
            if PG_HEADER in head and PG_TRAILER not in bytes(data[max(0, len(data) - 4096):]):
                yield Finding(WARNING, "OJL-DUMP-INCOMPLETE", "no '-- PostgreSQL database dump complete' line at the "
                              "end: pg_dump did not finish (tables after the last one may be missing)",
                              path=src.path, offset=fv.size)
        elif has_header(head) and not has_trailer(data):
            yield Finding(WARNING, "OJL-DUMP-INCOMPLETE", "no '-- Dump completed' line at the end: mysqldump did "
                          "not finish (tables after the last one may be missing)", path=src.path, offset=fv.size)
        if rows == 0 and reader.records == 0:
            yield Finding(WARNING, "OJL-NO-ROWS", f"no rows of {' or '.join(TABLE_NAMES)} in this dump",
                          path=src.path)


# ---------------------------------------------------------------- databases
def _read_db(reader: TableReader, src: Source, file: int, last: bool):
    conn = dburl.connect(src.path)
    where_label = dburl.redact(src.path)
    try:
        names = dburl.columns(conn, src.table)
        if names is None:
            yield Finding(WARNING, "OJL-NO-ROWS", f"no table {src.table}", path=where_label)
            return
        where, fs = _header_findings(Source(src.kind, where_label), names, None)
        for f in fs:
            f.offset = None
        yield from fs
        if where is None:
            return
        yield from db_rows(reader, dburl.select_rows(conn, src.table, names), where, where_label, file)
    finally:
        conn.close()


def db_rows(reader: TableReader, rows, where, label: str, file: int):
    """Rows of a database table (value lists in the table's column order): no byte offset, no index — a table
    has no positions; rows come in id order (the Spark JDBC reader runs this too)."""
    src = Source("db", label)
    conv = reader.conv
    for fields in rows:
        row, bad = conv.row(_pick(where, fields), label, None, 0, None, file, Verdict.CORRUPT)
        reader.records += 1 if row is not None else 0
        if row is not None:
            yield row
        else:
            yield from bad
    del src


_READERS = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet, "sqldump": _read_dump,
            "sqlite": _read_db, "mysql": _read_db}


# ---------------------------------------------------------------- the registry
def read_registry(src: Source, tz=None) -> tuple[list[RegistryRow], list[Finding]]:
    """The rows of orth_job_registry from a source (bad rows are warnings)."""
    raw: list[tuple[int | None, list]] = []
    path = dburl.redact(src.path) if dburl.is_db_url(src.path) else src.path
    try:
        if src.kind == "csv":
            header = None
            for start, line, _ in _lines(src):
                if line is None:
                    continue
                text = line.decode("utf-8", "replace").rstrip("\r\n").lstrip("\ufeff")
                if not text.strip():
                    continue
                fields = split_csv(text)
                if header is None:
                    header = [(x or "").strip().lower() for x in (fields or [])]
                    continue
                raw.append((start, [None] * 5 if fields is None or len(fields) != len(header) else
                            [fields[header.index(c)] if c in header else None for c in REGISTRY_COLUMN_NAMES]))
        elif src.kind == "jsonl":
            for start, line, _ in _lines(src):
                if line is None or not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = {}
                raw.append((start, [obj.get(c) if isinstance(obj, dict) else None for c in REGISTRY_COLUMN_NAMES]))
        elif src.kind == "parquet":
            import pyarrow.parquet as pq
            t = pq.read_table(src.path)
            cols = {c: t.column(c).to_pylist() if c in t.column_names else [None] * t.num_rows
                    for c in REGISTRY_COLUMN_NAMES}
            raw = [(i, [cols[c][i] for c in REGISTRY_COLUMN_NAMES]) for i in range(t.num_rows)]
        elif src.kind == "sqldump":
            with FileView(src) as fv:
                cols = list(REGISTRY_COLUMN_NAMES)
                dialect = dialect_of(bytes(fv.data[:4096]), fv.data)      # a pg_dump's registry is COPY data
                for ev in DumpScanner(fv.data, frozenset(REGISTRY_TABLE_NAMES), dialect).events():
                    if ev.__class__ is Create:
                        cols = ev.columns
                    elif ev.__class__ is Stmt:
                        cols = ev.columns or cols
                    elif ev.__class__ is Tuple:
                        vals = [ev.values[cols.index(c)] if c in cols and cols.index(c) < len(ev.values) else None
                                for c in REGISTRY_COLUMN_NAMES]
                        raw.append((ev.offset, [v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                                                for v in vals]))
        else:
            conn = dburl.connect(src.path)
            try:
                names = dburl.columns(conn, src.table)
                if names is not None:
                    idx = [names.index(c) if c in names else None for c in REGISTRY_COLUMN_NAMES]
                    for k, fields in enumerate(dburl.select_rows(conn, src.table, names)):
                        raw.append((None, [None if i is None else fields[i] for i in idx]))
            finally:
                conn.close()
    except (OSError, InputError) as e:
        raise InputError(f"cannot read the registry: {e}", path=path) from None
    return registry_rows(raw, path, tz)


def registry_rows(raw, path: str, tz=None) -> tuple[list[RegistryRow], list[Finding]]:
    """(offset, [id, registry_group, registry_key, registry_value, update_time]) -> registry rows and the
    warnings of rows that cannot be read."""
    rows: list[RegistryRow] = []
    bad: list[Finding] = []
    conv = Converter(tz)
    for off, (rid, group, key, value, ut) in raw:
        t = None if ut is None else conv._datetime(ut)
        if not isinstance(value, str) or not value or (ut is not None and t is None):
            bad.append(Finding(WARNING, "OJL-REGISTRY-ROW", f"registry row without a registry_value or with a bad "
                               f"update_time: {_short([rid, group, key, value, ut], 80)}", path=path, offset=off))
            continue
        rows.append(RegistryRow(int(rid) if isinstance(rid, int) or (isinstance(rid, str) and rid.isdigit())
                                else None, group, key, value, t))
    return rows, bad
