"""xxl-job 2.0.0-2.0.1's retry file, ``{logPath}/xxl-job-callback.log``: ``FileUtil.appendFileLine`` appends
``JacksonUtil.writeValueAsString(List<HandleCallbackParam>) + "\\r\\n"`` per failed batch (v2.0.0
TriggerCallbackThread.java:183-188, FileUtil.java:47-70); the retry pass reads the lines (``BufferedReader
.readLine``), deletes the file, and reads each line with Jackson's default ``ObjectMapper`` into
``List<HandleCallbackParam{int logId, long logDateTim, ReturnT<String> executeResult{code, msg, content}}>``.

``parse_jackson_line`` reads one line as that ObjectMapper does for what matters here: strict JSON (no comments,
NaN, single quotes; ``FAIL_ON_UNKNOWN_PROPERTIES``: a key the class does not have is an error), elements with their
byte offsets. ``encode_jackson_line`` writes what Jackson writes (keys in declaration order, nulls written,
non-ASCII raw). Lines are bounded by the file's size cap (``callbacks.MAX_FILE``).
"""
from __future__ import annotations

import json
import re

from .gson import Entry

PARAM_KEYS = ("logId", "logDateTim", "executeResult")
RETURNT_KEYS = ("code", "msg", "content")
JAVA_INT_MIN, JAVA_INT_MAX = -(1 << 31), (1 << 31) - 1
_EOL = re.compile(rb"\r\n|\r|\n")
_WS = " \t\r\n"


class JacksonError(Exception):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


def java_lines(data: bytes):
    """(byte offset, text) of each line as ``BufferedReader.readLine`` splits them (\\n, \\r, \\r\\n); bytes that
    are not UTF-8 read as U+FFFD (``InputStreamReader`` replaces them)."""
    pos = 0
    for m in _EOL.finditer(data):
        yield pos, data[pos:m.start()].decode("utf-8", "replace")
        pos = m.end()
    if pos < len(data):
        yield pos, data[pos:].decode("utf-8", "replace")


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _int(v, what: str, lo: int, hi: int, at: int) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise JacksonError(f"{what} is {json.dumps(v)[:40]}, not a number as xxl-job writes it", at)
    if not lo <= v <= hi:
        raise JacksonError(f"{what} {v} is out of range (Jackson: numeric value out of range)", at)
    return v


def parse_jackson_line(text: str, base: int) -> list[Entry]:
    """The entries of one line (``base``: the line's byte offset in the file), or JacksonError."""
    def at(i: int) -> int:
        return base + len(text[:i].encode("utf-8"))

    i = 0
    while i < len(text) and text[i] in _WS:
        i += 1
    if text.startswith("null", i) and not text[i + 4:].strip(_WS):
        return []                                   # Jackson reads null: nothing to resend
    if i >= len(text) or text[i] != "[":
        raise JacksonError("not a JSON array", at(i))
    i += 1
    out: list[Entry] = []
    first = True
    while True:
        while i < len(text) and text[i] in _WS:
            i += 1
        if i < len(text) and text[i] == "]" and first:
            i += 1
            break
        if not first:
            if i >= len(text) or text[i] not in ",]":
                raise JacksonError("expected ',' or ']'", at(i))
            if text[i] == "]":
                i += 1
                break
            i += 1
            while i < len(text) and text[i] in _WS:
                i += 1
        first = False
        start = i
        try:
            v, i = _DECODER.raw_decode(text, i)
        except ValueError as exc:
            pos = getattr(exc, "pos", i)
            raise JacksonError(str(exc).split(":")[0], at(pos)) from None
        if v is None:
            raise JacksonError("a null element (xxl-job never writes one; the retry pass fails on it)", at(start))
        if not isinstance(v, dict):
            raise JacksonError("an element that is not an object", at(start))
        extra = [k for k in v if k not in PARAM_KEYS]
        if extra:
            raise JacksonError(f"unknown property {extra[0]!r} (FAIL_ON_UNKNOWN_PROPERTIES)", at(start))
        res = v.get("executeResult")
        code, msg = 0, None
        if res is not None:
            if not isinstance(res, dict):
                raise JacksonError("executeResult is not an object", at(start))
            extra = [k for k in res if k not in RETURNT_KEYS]
            if extra:
                raise JacksonError(f"unknown ReturnT property {extra[0]!r} (FAIL_ON_UNKNOWN_PROPERTIES)", at(start))
            code = _int(res.get("code"), "executeResult.code", JAVA_INT_MIN, JAVA_INT_MAX, at(start))
            msg = res.get("msg")
            if msg is not None and not isinstance(msg, str):
                msg = json.dumps(msg, ensure_ascii=False)     # Jackson coerces a scalar to String
        out.append(Entry(_int(v.get("logId"), "logId", JAVA_INT_MIN, JAVA_INT_MAX, at(start)),
                         _int(v.get("logDateTim"), "logDateTim", -(1 << 63), (1 << 63) - 1, at(start)), code, msg,
                         offset=at(start), length=at(i) - at(start)))
    if text[i:].strip(_WS):
        raise JacksonError("trailing token after the array", at(i))
    return out


def encode_jackson_line(entries, contents: dict[int, str] | None = None) -> bytes:
    """What ``JacksonUtil.writeValueAsString`` + ``appendFileLine`` append for one batch."""
    contents = contents or {}
    doc = [{"logId": e.log_id, "logDateTim": e.log_date_tim,
            "executeResult": {"code": e.handle_code, "msg": e.handle_msg, "content": contents.get(i)}}
           for i, e in enumerate(entries)]
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\r\n"
