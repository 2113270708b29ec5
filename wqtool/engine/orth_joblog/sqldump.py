"""A bounded, quote-aware scanner of ``mysqldump`` files: the rows of INSERT statements for chosen tables.

Works over a read-only mmap (``FileView``): nothing is copied but one value at a time, each capped
(``VALUE_CAP``); every regex is possessive (no backtracking) and anchored, so a hostile dump costs linear time
and bounded memory. Statements for other tables, comments (``--``, ``#``, ``/* */`` and MySQL's ``/*!...*/``)
and everything but INSERT / REPLACE are skipped quote-aware. Yields ``Stmt`` / ``Tuple`` / ``Damage`` events;
the reader turns them into rows and findings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: No value of the table is longer than 64 KiB of text; escaped, at most twice that. Past this: damage.
VALUE_CAP = 1 << 18
#: A CREATE TABLE statement we read for its column list.
CREATE_CAP = 1 << 16
HEADER_MARKERS = (b"-- MySQL dump", b"-- MariaDB dump")
TRAILER = b"-- Dump completed"

_WS = re.compile(rb"(?:\s++|--[^\n]*+(?:\n|\Z)|#[^\n]*+(?:\n|\Z)|/\*(?:[^*]++|\*(?!/))*+\*/)*+")
# one statement from its start to its ';' (quote- and comment-aware); no match: it runs to EOF unterminated
_STMT = re.compile(rb"(?:[^;'\"`/#-]++|'(?:[^'\\]++|\\.|'')*+'|\"(?:[^\"\\]++|\\.|\"\")*+\"|`[^`]*+`"
                   rb"|/\*(?:[^*]++|\*(?!/))*+\*/|--[^\n]*+|#[^\n]*+|[/#-])*+;", re.S)
_INSERT = re.compile(rb"(?:INSERT|REPLACE)\s++(?:(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE)\s++)*+(?:INTO\s++)?"
                     rb"(?:(?:`[^`]{1,64}+`|\"[^\"]{1,64}+\"|[A-Za-z0-9_$]{1,64}+)\.)?"     # a schema (PostgreSQL: public.)
                     rb"(?:`([^`]{1,64}+)`|\"?([A-Za-z0-9_$]{1,64}+)\"?)\s*+(?:\(([^)]{0,4096}+)\)\s*+)?VALUES\s*+", re.I)
#: pg_dump's plain format: ``COPY [schema.]table (columns) FROM stdin;`` then one row a line, tab-separated,
#: ``\N`` for NULL, backslash escapes, ended by a ``\.`` line (PostgreSQL docs, COPY: "Text Format").
_COPY = re.compile(rb"COPY\s++(?:(?:\"[^\"]{1,64}+\"|[A-Za-z0-9_$]{1,64}+)\.)?\"?([A-Za-z0-9_$]{1,64}+)\"?\s*+"
                   rb"(?:\(([^)]{0,4096}+)\)\s*+)?FROM\s++stdin\s*+;[^\n]*+\n", re.I)
_COPY_END = b"\\."
_PG_ESC = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.S)
_PG_SIMPLE = {b"b": b"\x08", b"f": b"\x0c", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\x0b"}
#: PostgreSQL string constants: standard_conforming_strings (pg_dump sets it on): '' is a quote, backslash is
#: literal; E'...' takes backslash escapes.
_VALUE_PG = re.compile(rb"\s*+(?:(NULL)|'((?:[^']++|'')*+)'|(-?[0-9]++(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?)"
                       rb"|(true|false)|[Ee]'((?:[^'\\]++|\\.|'')*+)')(?:::[A-Za-z_ ]{1,40}+)?\s*+([,)])",
                       re.S | re.I)
#: A psql meta-command line between statements: pg_dump 15.14 / 16.10 / 17.6 and later open a plain dump with
#: ``\restrict KEY`` and close it with ``\unrestrict KEY`` (CVE-2025-8714; PostgreSQL
#: src/bin/pg_dump/pg_backup_archiver.c, RestoreArchive: ``ahprintf(AH, "\\restrict %s\n\n", ...)``), and ``-C`` /
#: pg_dumpall write ``\connect DB`` between them: none is a statement (no ';'), each ends at its line's end.
_PSQL_META = re.compile(rb"\\[A-Za-z]++[^\n]*+(?:\n|\Z)")
PG_HEADER = b"-- PostgreSQL database dump"
PG_TRAILER = b"-- PostgreSQL database dump complete"
#: Dumps wqtool does not read (exit 2, "unsupported dump dialect"): what starts them, and what they are.
UNSUPPORTED_DUMPS = ((b"PGDMP", "a pg_dump custom-format archive (`pg_restore -f - FILE` writes it as SQL)"),
                     (b"SQLite format 3\x00", None))
_CREATE = re.compile(rb"CREATE\s++TABLE\s++(?:IF\s++NOT\s++EXISTS\s++)?(?:`([^`]{1,64}+)`|([A-Za-z0-9_$]{1,64}+))",
                     re.I)
_COLDEF = re.compile(rb"^\s*+`([^`]{1,64}+)`\s", re.M)
_VALUE = re.compile(rb"\s*+(?:(NULL)|'((?:[^'\\]++|\\.|'')*+)'|(-?[0-9]++(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?)"
                    rb"|0x([0-9A-Fa-f]*+)|_(?:binary|utf8mb4|utf8|latin1)\s*+'((?:[^'\\]++|\\.|'')*+)')\s*+([,)])",
                    re.S | re.I)
_OPEN = re.compile(rb"\s*+\(")
_AFTER = re.compile(rb"\s*+([,;])")
_ESC = re.compile(rb"\\(.)|''", re.S)
_ESCAPES = {b"0": b"\x00", b"b": b"\x08", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"Z": b"\x1a",
            b"%": b"\\%", b"_": b"\\_"}


def unescape(s: bytes) -> bytes:
    """A MySQL string literal's body -> its bytes (backslash escapes, doubled quotes)."""
    if b"\\" not in s and b"''" not in s:
        return s

    def sub(m: re.Match) -> bytes:
        c = m.group(1)
        if c is None:
            return b"'"
        return _ESCAPES.get(c, c)
    return _ESC.sub(sub, s)


NULL = None


@dataclass(slots=True)
class Stmt:
    """An INSERT statement for a wanted table starts: its table and column list (None: the table's order)."""

    offset: int
    table: str
    columns: list[str] | None


@dataclass(slots=True)
class Tuple:
    """One row of an INSERT: its values (bytes of a string literal, int / str of a number, None for NULL)."""

    offset: int
    length: int
    values: list


@dataclass(slots=True)
class Damage:
    """``kind``: parse | too-large | truncated (the file ends inside the statement)."""

    kind: str
    offset: int
    stmt_offset: int
    message: str


@dataclass(slots=True)
class Create:
    """A CREATE TABLE of a wanted table: its column names in order."""

    offset: int
    table: str
    columns: list[str]


class DumpScanner:
    """``events()`` over ``data`` (bytes or mmap) for the tables in ``tables`` (lower-cased names)."""

    def __init__(self, data, tables: frozenset[str], dialect: str = "mysql"):
        self.data = data
        self.n = len(data)
        self.tables = tables
        self.pg = dialect == "postgresql"

    def events(self):
        data, n = self.data, self.n
        pos = 0
        while True:
            pos = _WS.match(data, pos).end()
            if pos >= n:
                return
            if self.pg:
                meta = _PSQL_META.match(data, pos, min(n, pos + 4096))
                if meta is not None:
                    pos = meta.end()
                    continue
                c = _COPY.match(data, pos, min(n, pos + 8192))
                if c is not None:
                    table = c.group(1).decode("utf-8", "replace").lower()
                    cols = None if c.group(2) is None else [x.strip().strip(b'"').decode("utf-8", "replace").lower()
                                                            for x in c.group(2).split(b",")]
                    if table in self.tables:
                        yield Stmt(pos, table, cols)
                    pos = yield from self._copy_rows(pos, c.end(), table in self.tables)
                    continue
            m = _INSERT.match(data, pos, min(n, pos + 8192))
            if m is not None:
                table = (m.group(1) or m.group(2)).decode("utf-8", "replace").lower()
                if table in self.tables:
                    cols = None
                    if m.group(3) is not None:
                        cols = [c.strip().strip(b"`").strip(b'"').decode("utf-8", "replace").lower()
                                for c in m.group(3).split(b",")]
                    yield Stmt(pos, table, cols)
                    pos = yield from self._tuples(pos, m.end())
                    continue
            else:
                c = _CREATE.match(data, pos, min(n, pos + 512))
                if c is not None:
                    table = (c.group(1) or c.group(2)).decode("utf-8", "replace").lower()
                    end = self._skip(pos)
                    if table in self.tables and end is not None and end - pos <= CREATE_CAP:
                        body = bytes(data[pos:end])
                        yield Create(pos, table, [x.decode("utf-8", "replace").lower()
                                                  for x in _COLDEF.findall(body)])
                    if end is None:
                        yield Damage("truncated", pos, pos, "the file ends inside a CREATE TABLE statement")
                        return
                    pos = end
                    continue
            end = self._skip(pos)
            if end is None:
                yield Damage("truncated", pos, pos, "the file ends inside a statement (no ';')")
                return
            pos = end

    def _skip(self, pos: int) -> int | None:
        """The end of the statement starting at ``pos`` (after its ';'), or None: it runs to EOF."""
        m = _STMT.match(self.data, pos)
        return None if m is None else m.end()

    def _copy_rows(self, stmt: int, pos: int, wanted: bool):
        """The data lines of one COPY ... FROM stdin up to its ``\\.`` line; returns where scanning resumes."""
        data, n = self.data, self.n
        while True:
            if pos >= n:
                yield Damage("truncated", pos, stmt, "the file ends inside COPY data (no '\\.' line)")
                return n
            nl = data.find(b"\n", pos, min(n, pos + VALUE_CAP * 8))
            if nl < 0:
                if n - pos > VALUE_CAP * 8:
                    yield Damage("too-large", pos, stmt, f"a COPY line longer than {VALUE_CAP * 8} bytes")
                    nl = data.find(b"\n", pos)
                    if nl < 0:
                        return n
                    pos = nl + 1
                    continue
                yield Damage("truncated", pos, stmt, "the file ends inside a COPY line (no '\\.' line)")
                return n
            line = bytes(data[pos:nl])
            if line.endswith(b"\r"):
                line = line[:-1]
            if line == _COPY_END:
                return nl + 1
            if wanted:
                fields = line.split(b"\t")
                if len(fields) > 4096:
                    yield Damage("too-large", pos, stmt, "more than 4096 values in a row")
                else:
                    yield Tuple(pos, nl + 1 - pos, [None if f == b"\\N" else _pg_unescape(f) for f in fields])
            pos = nl + 1

    def _tuples(self, stmt: int, pos: int):
        """The row tuples of one INSERT from ``pos``; returns where scanning resumes."""
        data, n = self.data, self.n
        while True:
            start = pos
            m = _OPEN.match(data, pos, min(n, pos + 4096))
            if m is None:
                return (yield from self._damage(stmt, pos, "expected '(' starting a row"))
            pos = m.end()
            values: list = []
            while True:
                window = min(n, pos + VALUE_CAP)
                if self.pg:
                    v = _VALUE_PG.match(data, pos, window)
                    if v is not None:
                        if v.group(1) is not None:
                            values.append(NULL)
                        elif v.group(2) is not None:
                            values.append(v.group(2).replace(b"''", b"'"))
                        elif v.group(3) is not None:
                            t = v.group(3)
                            values.append(int(t) if t.lstrip(b"-").isdigit() else t.decode("ascii"))
                        elif v.group(4) is not None:
                            values.append(int(v.group(4).lower() == b"true"))
                        else:
                            values.append(_pg_unescape(v.group(5).replace(b"''", b"'")))
                        pos = v.end()
                        if v.group(6) == b")":
                            break
                        continue
                v = _VALUE.match(data, pos, window)
                if v is None:
                    if window < n and _VALUE.match(data, pos) is not None:
                        return (yield from self._damage(stmt, pos, f"a value longer than {VALUE_CAP} bytes",
                                                        kind="too-large"))
                    return (yield from self._damage(stmt, pos, "expected a value (NULL, a number or a quoted "
                                                    "string) then ',' or ')'"))
                if v.group(1) is not None:
                    values.append(NULL)
                elif v.group(2) is not None:
                    values.append(unescape(v.group(2)))
                elif v.group(3) is not None:
                    t = v.group(3)
                    values.append(int(t) if t.lstrip(b"-").isdigit() else t.decode("ascii"))
                elif v.group(4) is not None:
                    values.append(bytes.fromhex(v.group(4).decode("ascii")) if len(v.group(4)) % 2 == 0
                                  else b"\x00")
                else:
                    values.append(unescape(v.group(5)))
                pos = v.end()
                if v.group(6) == b")":
                    break
                if len(values) > 4096:
                    return (yield from self._damage(stmt, pos, "more than 4096 values in a row", kind="too-large"))
            yield Tuple(start, pos - start, values)
            a = _AFTER.match(data, pos, min(n, pos + 4096))
            if a is None:
                return (yield from self._damage(stmt, pos, "expected ',' or ';' after a row"))
            pos = a.end()
            if a.group(1) == b";":
                return pos

    def _damage(self, stmt: int, at: int, message: str, kind: str = "parse"):
        """Report damage inside the statement at ``stmt``; resume after its end (quote-aware), or at EOF."""
        end = self._skip(stmt)
        if end is None or end <= at:
            # the statement (or what follows the damage) runs to the end of the file unterminated
            tail = _STMT.match(self.data, at)
            if tail is None:
                yield Damage("truncated", at, stmt, "the file ends inside an INSERT statement")
                return self.n
            end = tail.end()
        yield Damage(kind, at, stmt, message)
        return end


def _pg_unescape(s: bytes) -> bytes:
    """COPY text format / E'' escapes: \\b \\f \\n \\r \\t \\v, octal, \\xHH, any other char itself."""
    if b"\\" not in s:
        return s

    def sub(m: re.Match) -> bytes:
        if m.group(1) is not None:
            return bytes((int(m.group(1), 8) & 0xFF,))
        if m.group(2) is not None:
            return bytes((int(m.group(2), 16),))
        return _PG_SIMPLE.get(m.group(3), m.group(3))
    return _PG_ESC.sub(sub, s)


def dialect_of(head: bytes, data) -> str:
    """``postgresql`` (pg_dump's header, or a COPY ... FROM stdin near the start) or ``mysql``."""
    if PG_HEADER in head or re.search(rb"(?m)^COPY\s[^\n]{0,4096}FROM\s+stdin\s*;", bytes(data[:1 << 20]), re.I):
        return "postgresql"
    return "mysql"


def unsupported(head: bytes) -> str | None:
    """What a dump wqtool does not read is (None: it reads it)."""
    for magic, what in UNSUPPORTED_DUMPS:
        if head.startswith(magic) and what is not None:
            return what
    return None


def has_header(head: bytes) -> bool:
    return any(head.lstrip().startswith(mk) for mk in HEADER_MARKERS)


def has_trailer(data) -> bool:
    """The dump's last 4 KiB hold mysqldump's ``-- Dump completed`` line."""
    n = len(data)
    return bytes(data[max(0, n - 4096):n]).find(TRAILER) >= 0
