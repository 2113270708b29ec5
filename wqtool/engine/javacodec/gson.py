"""Gson as Orth uses it on retry files: the exact bytes ``GsonTool.toJson(List<CallbackRequest>)`` writes, and what
``GsonTool.fromJsonList(data, CallbackRequest.class)`` accepts (Gson 2.13's lenient ``JsonReader`` and the
``ArrayList<CallbackRequest>`` adapters), with byte offsets.

* ``encode(entries)``: the canonical file bytes (the fast path: ``json.dumps`` + U+2028/9); ``encode_reference`` is
  the same built character by character from the declared escape table (``formats.orth.GSON_ESCAPES``) — the
  tests prove them equal (hypothesis) and equal to real Gson (the jar Spark ships).
* ``parse_lenient(data)``: a port of the parts of ``JsonReader`` the adapters use (lenient: comments, unquoted
  and single-quoted names and strings, ``=``/``=>``, ``;``, implied nulls in arrays, a BOM, the ``)]}'`` prefix,
  numbers read from strings, ``nextLong``/``nextInt``'s double fallback); returns the entries or the first error
  with its byte offset, and whether the end of the input came first (a truncated file).
* ``strict_error(text)``: why RFC 8259 JSON refuses the text (None if it is strict JSON).

Everything is bounded: no recursion (an explicit scope stack), no reading past the buffer.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ...formats.orth import (HEAD_DATE_KEY, CALLBACK_FIELDS, GSON_ESCAPES, GSON_NON_EXECUTE_PREFIX, JAVA_INT_MAX, JAVA_INT_MIN,
                             JAVA_LONG_MAX, JAVA_LONG_MIN, JAVA_UNPAIRED_SURROGATE, UTF8_BOM, utf16_units_to_str)


# ---------------------------------------------------------------- writing
@dataclass(slots=True)
class Entry:
    """One ``CallbackRequest`` (Java defaults: 0 and null for missing keys)."""

    log_id: int = 0
    log_date_tim: int = 0
    handle_code: int = 0
    handle_msg: str | None = None
    offset: int = 0          # byte offset of the element in its file
    length: int = 0          # bytes of the element


def _to_dicts(entries, date_key: str = "logDateTim") -> list[dict]:
    out = []
    for e in entries:
        d = {"logId": e.log_id, date_key: e.log_date_tim, "handleCode": e.handle_code}
        if e.handle_msg is not None:
            d["handleMsg"] = e.handle_msg
        out.append(d)
    return out


def encode(entries, date_key: str = "logDateTim") -> bytes:
    """``GsonTool.toJson(list)`` encoded as ``FileTool.writeString`` writes it (UTF-8, no newline). ``date_key``:
    ``logDateTime`` for xxl-job HEAD's ``CallbackData``."""
    s = json.dumps(_to_dicts(entries, date_key), ensure_ascii=False, separators=(",", ":"))
    if "\u2028" in s or "\u2029" in s:
        s = s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return java_utf8(s)


def java_utf8(s: str) -> bytes:
    """Java's UTF-8 encoder: an unpaired surrogate becomes ``?``."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return _slow_java_utf8(s)


def _slow_java_utf8(s: str) -> bytes:
    s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")   # pairs joined
    return b"".join(JAVA_UNPAIRED_SURROGATE if 0xD800 <= ord(ch) <= 0xDFFF else ch.encode("utf-8") for ch in s)


def gson_string(s: str) -> str:
    """A JSON string literal as Gson writes it (``GSON_ESCAPES``), character by character."""
    return '"' + "".join(GSON_ESCAPES.get(ch, ch) for ch in s) + '"'


def encode_reference(entries) -> bytes:
    """The declared reference: keys in ``CALLBACK_FIELDS`` order, nulls omitted, ``gson_string`` escaping."""
    parts = []
    for e in entries:
        vals = {"logId": e.log_id, "logDateTim": e.log_date_tim, "handleCode": e.handle_code,
                "handleMsg": e.handle_msg}
        members = [f'"{k}":' + (gson_string(vals[k]) if t == "String" else str(int(vals[k])))
                   for k, t in CALLBACK_FIELDS if vals[k] is not None]
        parts.append("{" + ",".join(members) + "}")
    return _slow_java_utf8("[" + ",".join(parts) + "]")


# ---------------------------------------------------------------- strict JSON
def strict_error(text: str) -> str | None:
    """Why RFC 8259 JSON refuses ``text`` (a BOM, comments, single quotes, raw control characters in strings,
    NaN, trailing commas, ...), or None."""
    if text.startswith("\ufeff"):
        return "a byte order mark before the JSON"

    def bad_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        json.loads(text, parse_constant=bad_constant)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at character {exc.pos}"
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------- the lenient reader
class GsonError(Exception):
    """What Gson throws (JsonSyntaxException, MalformedJsonException, IllegalStateException,
    NumberFormatException): ``offset`` is the byte offset where it failed; ``eof``: the input ended first."""

    def __init__(self, message: str, offset: int, eof: bool = False, eof_exception: bool = False):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.eof = eof
        self.eof_exception = eof_exception   # Java's EOFException ("End of input"), not a syntax error


@dataclass(slots=True)
class GsonResult:
    entries: list[Entry | None] | None      # None: the document was ``null`` (or empty)
    lenient: list[str] = field(default_factory=list)   # lenient-only constructs met (for the message)
    #: xxl-job HEAD's ``logDateTime`` (entry index -> value), read beside Orth's ``logDateTim``
    head_dates: dict[int, int] = field(default_factory=dict)
    date_keys: set[str] = field(default_factory=set)    # which of the two keys the file holds


# token kinds (JsonReader's PEEKED_*)
BEGIN_OBJECT, END_OBJECT, BEGIN_ARRAY, END_ARRAY, TRUE, FALSE, NULL, SQUOTED, DQUOTED, UNQUOTED, \
    SQUOTED_NAME, DQUOTED_NAME, UNQUOTED_NAME, LONG, NUMBER, EOF = range(16)
_KIND = {BEGIN_OBJECT: "BEGIN_OBJECT", END_OBJECT: "END_OBJECT", BEGIN_ARRAY: "BEGIN_ARRAY", END_ARRAY: "END_ARRAY",
         TRUE: "BOOLEAN", FALSE: "BOOLEAN", NULL: "NULL", SQUOTED: "STRING", DQUOTED: "STRING", UNQUOTED: "STRING",
         SQUOTED_NAME: "NAME", DQUOTED_NAME: "NAME", UNQUOTED_NAME: "NAME", LONG: "NUMBER", NUMBER: "NUMBER",
         EOF: "END_DOCUMENT"}
# scopes (JsonScope)
EMPTY_ARRAY, NONEMPTY_ARRAY, EMPTY_OBJECT, DANGLING_NAME, NONEMPTY_OBJECT, EMPTY_DOCUMENT, NONEMPTY_DOCUMENT = range(7)

_NOT_LITERAL = frozenset(b"/\\;#={}[]:, \t\f\r\n")
_LENIENT_BREAK = frozenset(b"/\\;#=")
_WS = frozenset(b" \t\r\n")
_LITERAL_END = re.compile(rb"[/\\;#={}\[\]:, \t\f\r\n]")
_STOP_DQ = re.compile(rb'["\\]')
_STOP_SQ = re.compile(rb"['\\]")


class LenientReader:
    """Gson's ``JsonReader`` in lenient mode over UTF-8 bytes (syntax characters are ASCII, so byte offsets are
    exact; string contents are decoded as Java would read them). ``lenient`` collects what strict JSON refuses."""

    def __init__(self, data: bytes):
        self.buf = data
        self.n = len(data)
        self.pos = 0
        self.stack = [EMPTY_DOCUMENT]
        self.peeked: int | None = None
        self.peeked_long = 0
        self.peeked_len = 0
        self.lenient: list[str] = []
        if data.startswith(UTF8_BOM):                        # fillBuffer skips a BOM on its first read
            self.pos = 3

    # -- errors
    def error(self, message: str, at: int | None = None, eof: bool = False) -> GsonError:
        return GsonError(message, self.pos if at is None else at, eof, eof_exception=message == "End of input")

    def _note(self, what: str) -> None:
        if what not in self.lenient:
            self.lenient.append(what)

    # -- whitespace and comments (nextNonWhitespace, throwOnEof)
    def _next_non_ws(self, throw_on_eof: bool) -> int:
        buf, n = self.buf, self.n
        p = self.pos
        while p < n:
            c = buf[p]
            p += 1
            if c in _WS:
                continue
            if c == 0x2F:  # '/'
                self.pos = p
                if p == n:
                    return c
                c2 = buf[p]
                if c2 == 0x2A:  # /* ... */
                    self._note("comments")
                    end = buf.find(b"*/", p + 1)
                    if end < 0:
                        raise self.error("Unterminated comment", p - 1, eof=True)
                    p = end + 2
                    continue
                if c2 == 0x2F:  # // ...
                    self._note("comments")
                    p = self._end_of_line(p + 1)
                    continue
                return c
            if c == 0x23:  # '#'
                self._note("comments")
                p = self._end_of_line(p)
                continue
            self.pos = p
            return c
        self.pos = p
        if throw_on_eof:
            raise self.error("End of input", eof=True)
        return -1

    def _end_of_line(self, p: int) -> int:
        buf, n = self.buf, self.n
        while p < n:
            c = buf[p]
            p += 1
            if c == 0x0A or c == 0x0D:
                break
        return p

    # -- peek (doPeek)
    def peek(self) -> int:
        if self.peeked is None:
            self.peeked = self._do_peek()
        return self.peeked

    def _do_peek(self) -> int:
        stack = self.stack
        scope = stack[-1]
        if scope == EMPTY_ARRAY:
            stack[-1] = NONEMPTY_ARRAY
        elif scope == NONEMPTY_ARRAY:
            c = self._next_non_ws(True)
            if c == 0x5D:
                return END_ARRAY
            if c == 0x3B:
                self._note("';' between values")
            elif c != 0x2C:
                raise self.error("Unterminated array", self.pos - 1)
        elif scope in (EMPTY_OBJECT, NONEMPTY_OBJECT):
            stack[-1] = DANGLING_NAME
            if scope == NONEMPTY_OBJECT:
                c = self._next_non_ws(True)
                if c == 0x7D:
                    return END_OBJECT
                if c == 0x3B:
                    self._note("';' between members")
                elif c != 0x2C:
                    raise self.error("Unterminated object", self.pos - 1)
            c = self._next_non_ws(True)
            if c == 0x22:
                return DQUOTED_NAME
            if c == 0x27:
                self._note("single-quoted names")
                return SQUOTED_NAME
            if c == 0x7D:
                if scope != NONEMPTY_OBJECT:
                    return END_OBJECT
                raise self.error("Expected name", self.pos - 1)
            self.pos -= 1
            if self._is_literal(c):
                self._note("unquoted names")
                return UNQUOTED_NAME
            raise self.error("Expected name")
        elif scope == DANGLING_NAME:
            stack[-1] = NONEMPTY_OBJECT
            c = self._next_non_ws(True)
            if c == 0x3D:  # '=' or '=>'
                self._note("'=' after names")
                if self.pos < self.n and self.buf[self.pos] == 0x3E:
                    self.pos += 1
            elif c != 0x3A:
                raise self.error("Expected ':'", self.pos - 1)
        elif scope == EMPTY_DOCUMENT:
            self._consume_non_execute_prefix()
            stack[-1] = NONEMPTY_DOCUMENT
        elif scope == NONEMPTY_DOCUMENT:
            c = self._next_non_ws(False)
            if c == -1:
                return EOF
            self._note("more than one top-level value")
            self.pos -= 1
        c = self._next_non_ws(True)
        if c == 0x5D and scope == EMPTY_ARRAY:
            return END_ARRAY
        if c in (0x5D, 0x3B, 0x2C):
            if scope in (EMPTY_ARRAY, NONEMPTY_ARRAY):
                self._note("empty values in arrays (read as null)")
                self.pos -= 1
                return NULL
            raise self.error("Unexpected value", self.pos - 1)
        if c == 0x27:
            self._note("single-quoted strings")
            return SQUOTED
        if c == 0x22:
            return DQUOTED
        if c == 0x5B:
            return BEGIN_ARRAY
        if c == 0x7B:
            return BEGIN_OBJECT
        self.pos -= 1
        r = self._peek_keyword()
        if r is not None:
            return r
        r = self._peek_number()
        if r is not None:
            return r
        if not self._is_literal(self.buf[self.pos]):
            raise self.error("Expected value")
        self._note("unquoted strings")
        return UNQUOTED

    def _consume_non_execute_prefix(self) -> None:
        self._next_non_ws(True)
        self.pos -= 1
        if self.buf.startswith(GSON_NON_EXECUTE_PREFIX, self.pos):
            self._note("the )]}' prefix")
            self.pos += len(GSON_NON_EXECUTE_PREFIX)

    def _is_literal(self, c: int) -> bool:
        if c in _NOT_LITERAL:
            return False
        return True

    def _peek_keyword(self) -> int | None:
        c = self.buf[self.pos]
        if c in b"tT":
            kw, kind = b"true", TRUE
        elif c in b"fF":
            kw, kind = b"false", FALSE
        elif c in b"nN":
            kw, kind = b"null", NULL
        else:
            return None
        n = len(kw)
        seg = self.buf[self.pos:self.pos + n]
        if len(seg) < n or seg.lower() != kw:
            return None
        if self.pos + n < self.n and self._is_literal(self.buf[self.pos + n]):
            return None
        if seg != kw:
            self._note("upper-case keywords")
        self.pos += n
        return kind

    def _peek_number(self) -> int | None:
        buf, p, n = self.buf, self.pos, self.n
        value = 0
        negative = False
        fits = True
        last = 0  # NONE, SIGN 1, DIGIT 2, DECIMAL 3, FRACTION 4, EXP_E 5, EXP_SIGN 6, EXP_DIGIT 7
        i = 0
        while p + i < n:
            if i >= 1024:          # JsonReader's buffer: a longer number is read as an unquoted literal
                return None
            c = buf[p + i]
            if c == 0x2D:
                if last == 0:
                    negative, last = True, 1
                elif last == 5:
                    last = 6
                else:
                    return None
            elif c == 0x2B:
                if last == 5:
                    last = 6
                else:
                    return None
            elif c in (0x65, 0x45):
                if last in (2, 4):
                    last = 5
                else:
                    return None
            elif c == 0x2E:
                if last == 2:
                    last = 3
                else:
                    return None
            elif 0x30 <= c <= 0x39:
                d = c - 0x30
                if last in (0, 1):
                    value, last = -d, 2
                elif last == 2:
                    if value == 0:
                        return None     # leading 0
                    nv = value * 10 - d
                    fits = fits and nv >= JAVA_LONG_MIN
                    value = nv
                elif last == 3:
                    last = 4
                elif last in (5, 6):
                    last = 7
            else:
                if self._is_literal(c):
                    return None
                break
            i += 1
        if last == 2 and fits and (value != JAVA_LONG_MIN or negative) and (value != 0 or not negative):
            self.peeked_long = value if negative else -value
            self.pos += i
            return LONG
        if last in (2, 4, 7):
            self.peeked_len = i
            return NUMBER
        return None

    # -- consuming
    def _consume(self) -> int:
        p = self.peek()
        self.peeked = None
        return p

    def begin_array(self) -> None:
        p = self._consume()
        if p != BEGIN_ARRAY:
            raise self._unexpected("BEGIN_ARRAY", p)
        self.stack.append(EMPTY_ARRAY)

    def end_array(self) -> None:
        p = self._consume()
        if p != END_ARRAY:
            raise self._unexpected("END_ARRAY", p)
        self.stack.pop()

    def begin_object(self) -> None:
        p = self._consume()
        if p != BEGIN_OBJECT:
            raise self._unexpected("BEGIN_OBJECT", p)
        self.stack.append(EMPTY_OBJECT)

    def end_object(self) -> None:
        p = self._consume()
        if p != END_OBJECT:
            raise self._unexpected("END_OBJECT", p)
        self.stack.pop()

    def has_next(self) -> bool:
        p = self.peek()
        return p not in (END_OBJECT, END_ARRAY, EOF)

    def _unexpected(self, expected: str, p: int) -> GsonError:
        return self.error(f"Expected {expected} but was {_KIND[p]}", eof=p == EOF)

    def next_name(self) -> str:
        p = self._consume()
        if p == UNQUOTED_NAME:
            return self._unquoted()
        if p == SQUOTED_NAME:
            return self._quoted(0x27)
        if p == DQUOTED_NAME:
            return self._quoted(0x22)
        raise self._unexpected("a name", p)

    def next_null(self) -> None:
        p = self._consume()
        if p != NULL:
            raise self._unexpected("null", p)

    def _string_token(self, p: int) -> str:
        if p == UNQUOTED:
            return self._unquoted()
        if p == SQUOTED:
            return self._quoted(0x27)
        if p == DQUOTED:
            return self._quoted(0x22)
        if p == LONG:
            return str(self.peeked_long)
        if p == NUMBER:
            s = self.buf[self.pos:self.pos + self.peeked_len].decode("ascii")
            self.pos += self.peeked_len
            return s
        raise AssertionError(p)

    def next_string(self) -> str:
        at = self.pos
        p = self._consume()
        if p in (UNQUOTED, SQUOTED, DQUOTED, LONG, NUMBER):
            return self._string_token(p)
        raise self.error(f"Expected a string but was {_KIND[p]}", at, eof=p == EOF)

    def next_boolean(self) -> bool:
        p = self._consume()
        if p in (TRUE, FALSE):
            return p == TRUE
        raise self._unexpected("a boolean", p)

    def next_long(self) -> int:
        return self._next_integral("a long", JAVA_LONG_MIN, JAVA_LONG_MAX)

    def next_int(self) -> int:
        return self._next_integral("an int", JAVA_INT_MIN, JAVA_INT_MAX)

    def _next_integral(self, what: str, lo: int, hi: int) -> int:
        at = self.pos
        p = self._consume()
        if p == LONG:
            v = self.peeked_long
            if not lo <= v <= hi:
                raise self.error(f"Expected {what} but was {v}", at)
            return v
        if p == NUMBER:
            s = self._string_token(p)
        elif p in (UNQUOTED, SQUOTED, DQUOTED):
            s = self._string_token(p)
            if p != UNQUOTED:
                self._note("numbers in strings")
            v = java_parse_integer(s, lo, hi)
            if v is not None:
                return v
        else:
            raise self.error(f"Expected {what} but was {_KIND[p]}", at, eof=p == EOF)
        d = java_parse_double(s)
        if d is None:
            raise self.error(f"For input string: \"{s}\" (not a number)", at)
        r = java_d2i(d, lo, hi)
        if float(r) != d:           # Java compares (double) result with the double
            raise self.error(f"Expected {what} but was {s}", at)
        return r

    def skip_value(self) -> None:
        """``skipValue``: one value, however nested (no recursion)."""
        depth = 0
        while True:
            p = self._consume()
            if p == BEGIN_ARRAY:
                self.stack.append(EMPTY_ARRAY)
                depth += 1
            elif p == BEGIN_OBJECT:
                self.stack.append(EMPTY_OBJECT)
                depth += 1
            elif p in (END_ARRAY, END_OBJECT):
                self.stack.pop()
                depth -= 1
                if depth < 0:
                    raise self.error("unexpected end of a scope while skipping a value")
            elif p in (UNQUOTED_NAME, SQUOTED_NAME, DQUOTED_NAME, UNQUOTED, SQUOTED, DQUOTED, NUMBER):
                self._string_token(p) if p not in (UNQUOTED_NAME, SQUOTED_NAME, DQUOTED_NAME) else \
                    self._name_token(p)
            elif p == EOF:
                raise self.error("End of input", eof=True)
            if depth == 0:
                return

    def _name_token(self, p: int) -> str:
        return self._unquoted() if p == UNQUOTED_NAME else self._quoted(0x27 if p == SQUOTED_NAME else 0x22)

    # -- strings
    def _unquoted(self) -> str:
        start = self.pos
        m = _LITERAL_END.search(self.buf, start)
        self.pos = m.start() if m else self.n
        return self.buf[start:self.pos].decode("utf-8", "surrogateescape")

    def _quoted(self, quote: int) -> str:
        """``nextQuotedValue``: escapes decoded to UTF-16 units, raw bytes decoded as UTF-8."""
        buf, n = self.buf, self.n
        p = self.pos
        start = p - 1
        parts: list[str] = []
        stop = _STOP_DQ if quote == 0x22 else _STOP_SQ
        while True:
            m = stop.search(buf, p)
            q = m.start() if m else n
            chunk = buf[p:q]
            if chunk:
                parts.append(chunk.decode("utf-8", "surrogateescape"))
                if any(b < 0x20 for b in chunk):
                    self._note("raw control characters in strings")
            if q >= n:
                self.pos = n
                raise self.error("Unterminated string", start, eof=True)
            if buf[q] == quote:
                self.pos = q + 1
                return _join(parts)
            # escape
            if q + 1 >= n:
                self.pos = n
                raise self.error("Unterminated escape sequence", q, eof=True)
            e = buf[q + 1]
            if e == 0x75:  # \uXXXX
                hexs = buf[q + 2:q + 6]
                if len(hexs) < 4:
                    self.pos = n
                    raise self.error("Unterminated escape sequence", q, eof=True)
                try:
                    if not re.fullmatch(rb"[0-9a-fA-F]{4}", hexs):
                        raise ValueError
                    unit = int(hexs, 16)
                except ValueError:
                    raise self.error("Malformed Unicode escape \\u" + hexs.decode("latin-1"), q) from None
                parts.append(_Unit(unit))
                p = q + 6
                continue
            simple = {0x74: "\t", 0x62: "\b", 0x6E: "\n", 0x72: "\r", 0x66: "\f", 0x22: '"', 0x5C: "\\",
                      0x2F: "/"}
            if e in simple:
                parts.append(simple[e])
            elif e == 0x0A:
                self._note("escaped newlines")
                parts.append("\n")
            elif e == 0x27:
                self._note("\\' escapes")
                parts.append("'")
            else:
                raise self.error("Invalid escape sequence", q)
            p = q + 2


class _Unit(int):
    """A UTF-16 code unit from a ``\\uXXXX`` escape (surrogates are joined when the string is built)."""


def _join(parts: list) -> str:
    if not any(isinstance(x, _Unit) for x in parts):
        return "".join(parts)
    units: list[int] = []
    for x in parts:
        if isinstance(x, _Unit):
            units.append(int(x))
        else:
            b = x.encode("utf-16-le", "surrogatepass")
            units += [int.from_bytes(b[i:i + 2], "little") for i in range(0, len(b), 2)]
    return utf16_units_to_str(units)


# ---------------------------------------------------------------- Java number parsing
_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)", re.ASCII)
_JAVA_HEX_DOUBLE = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP]([+-]?\d+)[fFdD]?",
                              re.ASCII)


def java_parse_integer(s: str, lo: int, hi: int) -> int | None:
    """``Long.parseLong`` / ``Integer.parseInt``: sign, decimal digits (any Unicode Nd digit), in range; else None."""
    if not _JAVA_INT.fullmatch(s):
        return None
    try:
        v = int(s)
    except ValueError:
        return None
    return v if lo <= v <= hi else None


def java_parse_double(s: str) -> float | None:
    """``Double.parseDouble`` (it trims chars <= U+0020 first); None where Java throws NumberFormatException."""
    t = s.strip("".join(map(chr, range(0x21))))
    if _JAVA_DOUBLE.fullmatch(t):
        core = t.rstrip("fFdD") if not t.endswith(("NaN", "Infinity")) else t
        if core.lstrip("+-") == "NaN":
            return math.nan
        if core.lstrip("+-") == "Infinity":
            return -math.inf if core.startswith("-") else math.inf
        return float(core)
    m = _JAVA_HEX_DOUBLE.fullmatch(t)
    if m:
        try:
            return float.fromhex(f"{m.group(1)}0x{m.group(2)}p{m.group(3)}")
        except (OverflowError, ValueError):
            return -math.inf if m.group(1) == "-" else math.inf
    return None


def java_d2i(d: float, lo: int, hi: int) -> int:
    """Java's ``(long) d`` / ``(int) d``: NaN -> 0, saturating, truncation toward zero."""
    if math.isnan(d):
        return 0
    if d >= hi:
        return hi
    if d <= lo:
        return lo
    return int(d)


# ---------------------------------------------------------------- the adapters: ArrayList<CallbackRequest>
_LONG_FIELDS = {"logId": "log_id", "logDateTim": "log_date_tim"}


def parse_lenient(data: bytes) -> GsonResult:
    """``GsonTool.fromJsonList(data, CallbackRequest.class)`` (after Orth's blank check): the entries, or a
    GsonError. ``data`` is the file's bytes (strict UTF-8 is checked by the caller; invalid bytes are read as
    U+DCxx here)."""
    r = LenientReader(data)
    try:
        first = r.peek()
    except GsonError as exc:
        if exc.eof:      # nothing but whitespace / comments: Gson returns null for an empty document
            return GsonResult(None, r.lenient)
        raise
    if first == NULL:
        r.next_null()
        return GsonResult(None, r.lenient)   # assertFullConsumption is skipped for a null result
    if first != BEGIN_ARRAY:
        raise r._unexpected("BEGIN_ARRAY", first)
    r.begin_array()
    entries: list[Entry | None] = []
    head_dates: dict[int, int] = {}
    keys: set[str] = set()
    while r.has_next():
        p = r.peek()
        if p == NULL:
            r.next_null()
            entries.append(None)
            continue
        start = r.pos - 1 if p == BEGIN_OBJECT else r.pos
        if p != BEGIN_OBJECT:
            raise r._unexpected("BEGIN_OBJECT", p)
        r.begin_object()
        e = Entry(offset=start)
        while r.has_next():
            name = r.next_name()
            if name == HEAD_DATE_KEY:
                keys.add(name)
                if r.peek() == NULL:
                    r.next_null()
                else:
                    head_dates[len(entries)] = r.next_long()
            elif name in _LONG_FIELDS:
                if name == "logDateTim":
                    keys.add(name)
                if r.peek() == NULL:
                    r.next_null()
                else:
                    setattr(e, _LONG_FIELDS[name], r.next_long())
            elif name == "handleCode":
                if r.peek() == NULL:
                    r.next_null()
                else:
                    e.handle_code = r.next_int()
            elif name == "handleMsg":
                p = r.peek()
                if p == NULL:
                    r.next_null()
                    e.handle_msg = None
                elif p in (TRUE, FALSE):
                    e.handle_msg = "true" if r.next_boolean() else "false"
                else:
                    e.handle_msg = r.next_string()
            else:
                r.skip_value()
        r.end_object()
        e.length = r.pos - start
        entries.append(e)
    r.end_array()
    # assertFullConsumption peeks once more after fromJson restored the reader's default (legacy strict) mode:
    # only whitespace may follow (a comment there is a syntax error)
    p = r.pos
    while p < r.n and r.buf[p] in _WS:
        p += 1
    if p < r.n:
        raise r.error("JSON document was not fully consumed." if r.buf[p] not in b"/#" else
                      "a comment after the document (Gson checks the end in its strict mode)", p)
    return GsonResult(entries, r.lenient, head_dates, keys)
