"""The workq 0.2.0 client protocol, byte for byte: request lines, value parsers, reply bytes.

Spec: docs/formats/workq-protocol.md (sections 2-7). Everything here is pure: bytes in, values or reply
bytes out. The parsers reproduce Go's ``strconv`` (ParseUint / ParseInt / Atoi), ``time.Parse`` with layout
``2006-01-02T15:04:05Z`` and satori/go.uuid v1.0.0's ``FromString``, because the replies to bad input depend
on exactly what those accept.
"""
from __future__ import annotations

from ...formats._common import _format_seconds, format_uuid

CRLF = b"\r\n"
#: Per-command read budget (int/prot MaxRead): 10,000 bytes of line + the 1 MiB body.
MAX_READ = 1_058_576
MAX_BODY = 1_048_576
MAX_WAIT_MS = 86_400_000
MAX_LIMIT = 100

# ---------------------------------------------------------------- replies
OK = b"+OK\r\n"
NOT_FOUND = b"-NOT-FOUND\r\n"
TIMEOUT = b"-TIMEOUT\r\n"


def client_error(text: str) -> bytes:
    return b"-CLIENT-ERROR " + text.encode() + CRLF


def server_error(text: str) -> bytes:
    return b"-SERVER-ERROR " + text.encode() + CRLF


E_UNKNOWN = client_error("Unknown command")
E_ARGS = client_error("Invalid command args")
E_FLAGS = client_error("Invalid command flags")
E_PAYLOAD_SIZE = client_error("Invalid payload size")
E_RESULT_SIZE = client_error("Invalid result size")
E_ID = client_error("Invalid ID")
E_NAME = client_error("Invalid Name")
E_TTR = client_error("Invalid TTR")
E_TTL = client_error("Invalid TTL")
E_TIME = client_error("Invalid Time")
E_PRIORITY = client_error("Invalid Priority")
E_MAX_ATTEMPTS = client_error("Invalid Max Attempts")
E_MAX_FAILS = client_error("Invalid Max Fails")
E_WAIT = client_error("Invalid wait timeout")
E_OFFSET = client_error("Invalid cursor offset")
E_LIMIT = client_error("Invalid limit")
E_DUP_JOB = client_error("Duplicate job")
E_DUP_RESULT = client_error("Duplicate result")
E_READ_ONLY = server_error("Read-only mode triggered by cmdlog circuit breaker")

#: Reply classes (for metrics): a reply's first 4 bytes -> its class (every reply this server makes is told apart
#: by them; the server counts replies by those bytes and classifies them when the metrics are read)
_HEADS = {b"-CLI": "client_error", b"-SER": "server_error", b"-NOT": "not_found", b"-TIM": "timeout"}


def reply_class(head: bytes) -> str:
    """The class of a reply from its first 4 bytes (or more): ok, client_error, server_error, not_found, timeout,
    other."""
    return "ok" if head[:1] == b"+" else _HEADS.get(head[:4], "other")


def job_reply(jid: bytes, name: bytes, ttr: int, payload: bytes) -> list[bytes]:
    """lease: ``+OK 1`` then ``<id> <name> <ttr> <size>`` and the payload."""
    return [b"+OK 1\r\n%s %s %d %d\r\n" % (format_uuid(jid).encode(), name, ttr, len(payload)), payload, CRLF]


def result_reply(jid: bytes, success: bool, result: bytes) -> list[bytes]:
    """result / run: ``+OK 1`` then ``<id> <0|1> <size>`` and the result."""
    return [b"+OK 1\r\n%s %d %d\r\n" % (format_uuid(jid).encode(), 1 if success else 0, len(result)), result, CRLF]


def timestamp(unix_ns: int) -> bytes:
    """Go ``Format("2006-01-02T15:04:05Z")`` of a UTC time: whole seconds, truncated (floor). By arithmetic
    (``_format_seconds``): ``inspect server`` answers with one before the first reply, and datetime's import was
    2 % of a start's CPU; outside years 1-9999, datetime's own error as before."""
    s = unix_ns // 1_000_000_000
    text = _format_seconds(s)
    if text is not None:
        return text.encode() + b"Z"
    import datetime as _dt
    d = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=s)
    return b"%04d-%02d-%02dT%02d:%02d:%02dZ" % (d.year, d.month, d.day, d.hour, d.minute, d.second)

# ---------------------------------------------------------------- request lines (int/prot ParseCmd)
#: command -> (exact token count incl. the name (None: at least `minimum`), minimum, size token index or None)
COMMANDS = {
    b"add": (6, 6, 5),
    b"schedule": (7, 7, 6),
    b"run": (6, 6, 5),
    b"complete": (3, 3, 2),
    b"fail": (3, 3, 2),
    b"delete": (2, 2, None),
    b"result": (3, 3, None),
    b"lease": (None, 3, None),
    b"inspect": (None, 2, None),
}


class Request:
    """One parsed request line: the command name, positional args (name excluded), flags, body size."""

    __slots__ = ("name", "args", "flags", "size")

    def __init__(self, name: bytes, args: list[bytes], flags: dict[bytes, bytes], size: int | None):
        self.name = name
        self.args = args
        self.flags = flags
        self.size = size


def parse_line(line: bytes) -> Request | bytes:
    """A request line without its CRLF -> a Request, or the error reply ParseCmd gives (its body, if any, is
    then NOT read: the caller goes on parsing the next bytes as a new line)."""
    # runs of spaces are one separator (the empty tokens between them are skipped below): split by the C regex
    # engine, not into a list of one empty token per space (a 1 MB line of spaces cost 60-100 ms of the loop)
    raw = _split_spaces(line) if b"  " in line else line.split(b" ")
    flags: dict[bytes, bytes] = {}
    if b" -" not in line and line[:1] != b"-" and b"" not in raw:    # no flag, no empty token: the tokens
        args = raw
    else:
        args = []
        for tok in raw:
            if not tok:
                continue
            if tok[0] != 45 or b"=" not in tok:  # 45 = '-'
                args.append(tok)
                continue
            parts = tok.split(b"=", 2)
            key = parts[0][1:]
            if not key or not parts[1] or key in flags:
                return E_FLAGS
            flags[key] = parts[1]
    name = raw[0]
    spec = COMMANDS.get(name)
    if spec is None:
        return E_UNKNOWN
    exact, minimum, size_at = spec
    n = len(args)
    if (exact is not None and n != exact) or n < minimum:
        return E_ARGS
    size = None
    if size_at is not None:
        size = go_atoi(args[size_at])
        if size is None or size < 0 or size > MAX_BODY:
            return E_RESULT_SIZE if name == b"fail" else E_PAYLOAD_SIZE
    return Request(name, args[1:], flags, size)


def _split_spaces(line: bytes) -> list[bytes]:
    """``line`` split at each run of spaces (the pattern compiled on first use: the first replies import no ``re``)."""
    global _split_spaces
    import re
    _split_spaces = re.compile(rb" +").split
    return _split_spaces(line)


def body_error(name: bytes) -> bytes:
    """The reply when a body is not followed by exactly CRLF (or is cut short)."""
    return E_RESULT_SIZE if name == b"fail" else E_PAYLOAD_SIZE


# ---------------------------------------------------------------- Go strconv
_MAX_DIGITS = 21


def _digits(tok: bytes) -> int | None:
    if not tok or not tok.isdigit():          # bytes.isdigit: ASCII 0-9 only
        return None
    t = tok.lstrip(b"0") or b"0"
    if len(t) > _MAX_DIGITS:
        return 1 << 70                        # out of every range used here
    return int(t)


def parse_uint(tok: bytes, bits: int) -> int | None:
    """strconv.ParseUint(tok, 10, bits): ASCII digits only (no sign, no prefix), < 2**bits."""
    v = _digits(tok)
    return v if v is not None and v < (1 << bits) else None


def parse_int(tok: bytes, bits: int) -> int | None:
    """strconv.ParseInt(tok, 10, bits): optional + or - sign, then digits, in the signed range."""
    neg = False
    if tok[:1] in (b"+", b"-"):
        neg = tok[:1] == b"-"
        tok = tok[1:]
    v = _digits(tok)
    if v is None:
        return None
    v = -v if neg else v
    lim = 1 << (bits - 1)
    return v if -lim <= v < lim else None


def go_atoi(tok: bytes) -> int | None:
    """strconv.Atoi (int64): optional sign, digits."""
    return py_parse_int(tok, 64)


# ---------------------------------------------------------------- UUIDs (satori/go.uuid v1.0.0 FromString)
_HEX = frozenset(b"0123456789abcdefABCDEF")
_GROUPS = (8, 4, 4, 4, 12)


def parse_uuid(tok: bytes) -> bytes | None:
    """16 bytes, or None (upstream: ``Invalid ID``). At least 32 characters; an optional ``urn:uuid:`` or ``{``
    prefix; an optional ``-`` before every group; hex of either case; anything after the 32 digits ignored.
    Where upstream indexes past the end of the text (``urn:uuid:`` + 23 characters ending on a group) and the
    Go runtime panics — taking the whole server down — this answers Invalid ID."""
    if len(tok) == 36 and tok[8] == 45 and tok[13] == 45 and tok[18] == 45 and tok[23] == 45:   # canonical
        h = tok[:8] + tok[9:13] + tok[14:18] + tok[19:23] + tok[24:]
        if _HEX.issuperset(h):
            return bytes.fromhex(h.decode("ascii"))
    if len(tok) < 32:
        return None
    t = tok
    if t[:9] == b"urn:uuid:":
        t = t[9:]
    elif t[0] == 123:  # '{'
        t = t[1:]
    out = bytearray()
    pos = 0
    n = len(t)
    for g in _GROUPS:
        if pos >= n:
            return None
        if t[pos] == 45:  # '-'
            pos += 1
        if n - pos < g:
            return None
        chunk = t[pos:pos + g]
        if not _HEX.issuperset(chunk):
            return None
        out += bytes.fromhex(chunk.decode("ascii"))
        pos += g
    return bytes(out)


def is_v4(jid: bytes) -> bool:
    """job.ValidateID: not nil, version 4, RFC 4122 variant."""
    return jid[6] >> 4 == 4 and jid[8] & 0xC0 == 0x80


# ---------------------------------------------------------------- names
def valid_name(name: bytes) -> bool:
    """job.ValidateName: 1..255 bytes of [A-Za-z0-9_.-]."""
    return 0 < len(name) <= 255 and _NAME_OK.issuperset(name)


_NAME_OK = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


# ---------------------------------------------------------------- Go time.Parse("2006-01-02T15:04:05Z", s)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm; any year)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _num(s: bytes, pos: int, fixed: bool) -> tuple[int, int] | None:
    """Go's getnum: one or two digits (exactly two when ``fixed``)."""
    if pos >= len(s) or not 48 <= s[pos] <= 57:
        return None
    if pos + 1 >= len(s) or not 48 <= s[pos + 1] <= 57:
        if fixed:
            return None
        return s[pos] - 48, pos + 1
    return (s[pos] - 48) * 10 + s[pos + 1] - 48, pos + 2


def parse_go_time(tok: bytes) -> int | None:
    """Unix nanoseconds of a schedule time, or None (upstream: ``Invalid Time``). Literal ``Z`` required (no
    offsets, no lowercase ``z``); an hour may have one digit; a fractional second after the seconds is accepted
    (digits after the ninth are ignored); the day must exist in its month."""
    s = tok
    if len(s) < 4 or not s[:4].isdigit():
        return None
    year = int(s[:4])
    pos = 4
    out = []
    for sep, fixed, lo, hi in ((b"-", True, 1, 12), (b"-", True, 1, 31), (b"T", False, 0, 23),
                               (b":", True, 0, 59), (b":", True, 0, 59)):
        if s[pos:pos + 1] != sep:
            return None
        r = _num(s, pos + 1, fixed)
        if r is None:
            return None
        v, pos = r
        if not lo <= v <= hi:
            return None
        out.append(v)
    month, day, hour, minute, second = out
    nsec = 0
    if len(s) - pos >= 2 and s[pos] == 46 and 48 <= s[pos + 1] <= 57:   # '.' then a digit
        n = pos + 1
        while n < len(s) and 48 <= s[n] <= 57:
            n += 1
        digits = s[pos + 1:n][:9]
        nsec = int(digits) * 10 ** (9 - len(digits))
        pos = n
    if s[pos:] != b"Z":
        return None
    dim = 29 if month == 2 and _leap(year) else _DAYS[month - 1]
    if day > dim:
        return None
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return secs * 1_000_000_000 + nsec


def go_unix_nano(unix_ns: int) -> int:
    """Go's Time.UnixNano(): the int64 wrap-around of unix nanoseconds (the zero time of add-jobs becomes
    -6795364578871345152, before every real time) — the ready queues order by it."""
    v = unix_ns & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


GO_ZERO_UNIX_NS = (0 - 62135596800) * 1_000_000_000


# ---------------------------------------------------------------- the C parser (_proto.c)
#: the Python functions above are the reference; the C module's are proven equal to them (tests/server/
#: test_proto_c.py) and replace them unless WQTOOL_PURE_PYTHON is set or the module did not build
py_parse_line, py_parse_uuid, py_parse_uint, py_parse_int = parse_line, parse_uuid, parse_uint, parse_int


def proto_c():
    """The C module ``_proto``, or None: WQTOOL_PURE_PYTHON is set or it did not build (the Python reference then)."""
    import os
    if os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _proto
    except ImportError:
        return None
    return _proto


def _load_c():
    _proto = proto_c()
    if _proto is None:
        return None
    _proto.init(Request, COMMANDS, (E_FLAGS, E_UNKNOWN, E_ARGS, E_PAYLOAD_SIZE, E_RESULT_SIZE))
    return _proto


_c = _load_c()
if _c is not None:
    parse_line, parse_uuid, parse_uint, parse_int = _c.parse_line, _c.parse_uuid, _c.parse_uint, _c.parse_int
