"""The hot codec of the libfastjournal design's messages (per the unimplemented design: ``FJ`` requests, ``JR``
replies), hand-written with ``struct`` and proven equal to ``wqtool.formats.fastjournal.fj_request`` / ``jr_reply`` by
hypothesis (same values, same bytes, the same accept / refuse decision on random bytes).

A message carries no total length: ``frame_request`` / ``frame_reply`` find where one ends from its flags and
size fields (or say more bytes are needed), checking every size before anything is sliced; ``decode_*`` then
read it. ``WireError`` means the stream cannot be trusted any more (the server replies and closes); a request
that frames but names an unknown function or value type is ``BadRequest`` (the server replies with an error and
goes on).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ...formats.fastjournal import (FJ_HEADER_SIZE, FJ_MAGIC, FJ_VERSION, FLAG_DATA, FLAG_KEY16, FLAG_TIMEOUT,
                             JR_HEADER_SIZE, JR_MAGIC, MAX_VALUE_SIZE, QUERY_MASK, QUERY_SHIFT, RESERVED_FLAGS,
                             VALUE_SIZE_MASK, VALUE_SIZE_SHIFT, FjError, Function, Query, ValueType)

_FJ = struct.Struct(">2sHHHHQ")      # magic, version, function, identifier, flags, timestamp
_JR = struct.Struct(">2sHHHQ")       # magic, version, identifier, flags, timestamp
_Q = struct.Struct(">Q")
_H = struct.Struct(">H")
_I = struct.Struct(">I")
_VW = (0, 1, 2, 4)                   # value size field width per flag value
_RANGE = int(Query.RANGE) << QUERY_SHIFT
FUNCTIONS = frozenset(int(f) for f in Function)
VALUE_TYPES = frozenset(int(t) for t in ValueType)


class WireError(Exception):
    """A message that cannot be framed: the stream is lost. ``error`` is the reply's text."""

    def __init__(self, error: bytes, message: str):
        super().__init__(message)
        self.error = error


class BadRequest(Exception):
    """A framed request the schema refuses (unknown function or value type): reply with ``error`` and go on."""

    def __init__(self, error: bytes, message: str, identifier: int):
        super().__init__(message)
        self.error = error
        self.identifier = identifier


@dataclass(slots=True)
class Request:
    function: int
    identifier: int = 0
    flags: int = 0
    timestamp: int = 0
    key: bytes = b""
    timeout: int | None = None
    count: int | None = None
    upper_key: bytes | None = None
    value_type: int | None = None
    value: bytes | None = None
    version: int = FJ_VERSION


@dataclass(slots=True)
class Reply:
    identifier: int
    flags: int = 0
    timestamp: int = 0
    timeout: int | None = None
    error: bytes = b""
    pairs: list[tuple[bytes, int | None, bytes | None]] | None = None   # (key, value type, value)
    version: int = FJ_VERSION

    @property
    def count(self) -> int | None:
        return None if self.pairs is None else len(self.pairs)


def _value_width(flags: int) -> int:
    return _VW[(flags & VALUE_SIZE_MASK) >> VALUE_SIZE_SHIFT]


def _read_size(buf, pos: int, width: int) -> int:
    if width == 1:
        return buf[pos]
    if width == 2:
        return _H.unpack_from(buf, pos)[0]
    return _I.unpack_from(buf, pos)[0]


# ---------------------------------------------------------------- requests
def frame_request(buf, pos: int = 0, end: int | None = None) -> int | None:
    """The length of the request at ``buf[pos:end]``, None if more bytes are needed; WireError if it cannot be
    framed (bad magic, reserved flag bits, a value beyond ``MAX_VALUE_SIZE``)."""
    end = len(buf) if end is None else end
    if end - pos < 2:
        return None
    if bytes(buf[pos:pos + 2]) != FJ_MAGIC:
        raise WireError(FjError.MAGIC, f"expected magic FJ, got {bytes(buf[pos:pos + 2])!r}")
    if end - pos < FJ_HEADER_SIZE:
        return None
    flags = _H.unpack_from(buf, pos + 8)[0]
    if flags & RESERVED_FLAGS:
        raise WireError(FjError.RESERVED, f"reserved flag bits set: 0x{flags:04x}")
    n = FJ_HEADER_SIZE
    if flags & FLAG_TIMEOUT:
        n += 8
    rng = (flags & QUERY_MASK) == _RANGE
    if rng:
        n += 2
    kw = 2 if flags & FLAG_KEY16 else 1
    for _ in range(2 if rng else 1):
        if end - pos < n + kw:
            return None
        n += kw + _read_size(buf, pos + n, kw)
    vw = _value_width(flags)
    if vw:
        if end - pos < n + vw:
            return None
        size = _read_size(buf, pos + n, vw)
        if size > MAX_VALUE_SIZE:
            raise WireError(FjError.TOO_LARGE, f"value of {size} bytes (the limit is {MAX_VALUE_SIZE})")
        n += vw + size
    return n if end - pos >= n else None


def decode_request(buf, pos: int = 0, n: int | None = None) -> Request:
    """Decode one framed request (``n`` from ``frame_request``); BadRequest for what the schema refuses."""
    if n is None:
        n = frame_request(buf, pos)
        if n is None:
            raise WireError(FjError.TOO_LARGE, "incomplete request")
    _m, version, function, ident, flags, ts = _FJ.unpack_from(buf, pos)
    p = pos + FJ_HEADER_SIZE
    timeout = count = upper = vtype = value = None
    if flags & FLAG_TIMEOUT:
        timeout = _Q.unpack_from(buf, p)[0]
        p += 8
    rng = (flags & QUERY_MASK) == _RANGE
    if rng:
        count = _H.unpack_from(buf, p)[0]
        p += 2
    kw = 2 if flags & FLAG_KEY16 else 1
    k = _read_size(buf, p, kw)
    key = bytes(buf[p + kw:p + kw + k])
    p += kw + k
    if rng:
        k = _read_size(buf, p, kw)
        upper = bytes(buf[p + kw:p + kw + k])
        p += kw + k
    vw = _value_width(flags)
    if vw:
        size = _read_size(buf, p, vw)
        p += vw
        if size < 1:
            raise BadRequest(FjError.VALUE, "a value size of 0 (it counts the type byte)", ident)
        vtype = buf[p]
        value = bytes(buf[p + 1:p + size])
        if vtype not in VALUE_TYPES:
            raise BadRequest(FjError.VALUE, f"unknown value type {vtype}", ident)
    if function not in FUNCTIONS:
        raise BadRequest(FjError.FUNCTION, f"unknown function {function}", ident)
    return Request(function, ident, flags, ts, key, timeout, count, upper, vtype, value, version)


def _sized(b: bytes, wide: bool) -> bytes:
    return (_H.pack(len(b)) if wide else bytes((len(b),))) + b


def _value_flags(size: int) -> int:
    w = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 3
    return w << VALUE_SIZE_SHIFT


def encode_request(r: Request) -> bytes:
    """The request's bytes; the size widths in ``r.flags`` are set from the key and value sizes."""
    flags = r.flags & ~(FLAG_KEY16 | VALUE_SIZE_MASK | FLAG_TIMEOUT)
    keys = [r.key] + ([r.upper_key or b""] if (flags & QUERY_MASK) == _RANGE else [])
    wide = any(len(k) > 0xFF for k in keys)
    if wide:
        flags |= FLAG_KEY16
    if r.timeout is not None:
        flags |= FLAG_TIMEOUT
    body = []
    if r.value is not None:
        size = len(r.value) + 1
        flags |= _value_flags(size)
        vw = _value_width(flags)
        body.append(size.to_bytes(vw, "big") + bytes((r.value_type if r.value_type is not None else 1,)) + r.value)
    out = [_FJ.pack(FJ_MAGIC, r.version, r.function, r.identifier, flags, r.timestamp)]
    if r.timeout is not None:
        out.append(_Q.pack(r.timeout))
    if (flags & QUERY_MASK) == _RANGE:
        out.append(_H.pack(r.count or 0))
    out.extend(_sized(k, wide) for k in keys)
    return b"".join(out + body)


# ---------------------------------------------------------------- replies
def frame_reply(buf, pos: int = 0, end: int | None = None) -> int | None:
    end = len(buf) if end is None else end
    if end - pos < 2:
        return None
    if bytes(buf[pos:pos + 2]) != JR_MAGIC:
        raise WireError(FjError.MAGIC, f"expected magic JR, got {bytes(buf[pos:pos + 2])!r}")
    if end - pos < JR_HEADER_SIZE:
        return None
    flags = _H.unpack_from(buf, pos + 6)[0]
    if flags & RESERVED_FLAGS:
        raise WireError(FjError.RESERVED, f"reserved flag bits set: 0x{flags:04x}")
    n = JR_HEADER_SIZE + (8 if flags & FLAG_TIMEOUT else 0)
    count = 0
    if flags & FLAG_DATA:
        if end - pos < n + 2:
            return None
        count = _H.unpack_from(buf, pos + n)[0]
        n += 2
    kw = 2 if flags & FLAG_KEY16 else 1
    vw = _value_width(flags)
    for i in range(1 + count):
        if end - pos < n + kw:
            return None
        n += kw + _read_size(buf, pos + n, kw)
        if i and vw:
            if end - pos < n + vw:
                return None
            size = _read_size(buf, pos + n, vw)
            if size > MAX_VALUE_SIZE:
                raise WireError(FjError.TOO_LARGE, f"value of {size} bytes")
            n += vw + size
    return n if end - pos >= n else None


def decode_reply(buf, pos: int = 0, n: int | None = None) -> Reply:
    if n is None:
        n = frame_reply(buf, pos)
        if n is None:
            raise WireError(FjError.TOO_LARGE, "incomplete reply")
    _m, version, ident, flags, ts = _JR.unpack_from(buf, pos)
    p = pos + JR_HEADER_SIZE
    timeout = None
    if flags & FLAG_TIMEOUT:
        timeout = _Q.unpack_from(buf, p)[0]
        p += 8
    count = None
    if flags & FLAG_DATA:
        count = _H.unpack_from(buf, p)[0]
        p += 2
    kw = 2 if flags & FLAG_KEY16 else 1
    k = _read_size(buf, p, kw)
    error = bytes(buf[p + kw:p + kw + k])
    p += kw + k
    pairs = None
    if count is not None:
        pairs = []
        vw = _value_width(flags)
        for _ in range(count):
            k = _read_size(buf, p, kw)
            key = bytes(buf[p + kw:p + kw + k])
            p += kw + k
            vt = val = None
            if vw:
                size = _read_size(buf, p, vw)
                p += vw
                if size < 1:
                    raise WireError(FjError.VALUE, "a value size of 0")
                vt = buf[p]
                if vt not in VALUE_TYPES:
                    raise WireError(FjError.VALUE, f"unknown value type {vt}")
                val = bytes(buf[p + 1:p + size])
                p += size
            pairs.append((key, vt, val))
    return Reply(ident, flags, ts, timeout, error, pairs, version)


def encode_reply(r: Reply) -> bytes:
    """The reply's bytes; widths, the timeout bit and the data bit (pairs present) are set from the contents."""
    flags = r.flags & ~(FLAG_KEY16 | VALUE_SIZE_MASK | FLAG_TIMEOUT | FLAG_DATA)
    if r.pairs is None and r.timeout is None and not r.error:      # the common acknowledgement
        return _JR.pack(JR_MAGIC, r.version, r.identifier, flags, r.timestamp) + b"\x00"
    keys = [r.error] + [k for k, _, _ in (r.pairs or ())]
    wide = any(len(k) > 0xFF for k in keys)
    if wide:
        flags |= FLAG_KEY16
    if r.timeout is not None:
        flags |= FLAG_TIMEOUT
    vals = [v for _, _, v in (r.pairs or ()) if v is not None]
    if r.pairs is not None:
        flags |= FLAG_DATA
        if vals:
            flags |= _value_flags(max(len(v) for v in vals) + 1)
    vw = _value_width(flags)
    out = [_JR.pack(JR_MAGIC, r.version, r.identifier, flags, r.timestamp)]
    if r.timeout is not None:
        out.append(_Q.pack(r.timeout))
    if r.pairs is not None:
        out.append(_H.pack(len(r.pairs)))
    out.append(_sized(r.error, wide))
    for k, vt, v in r.pairs or ():
        out.append(_sized(k, wide))
        if vw:
            if v is None:
                raise ValueError("every pair needs a value when any has one")
            out.append((len(v) + 1).to_bytes(vw, "big") + bytes((vt if vt is not None else 1,)) + v)
    return b"".join(out)


__all__ = ["Request", "Reply", "WireError", "BadRequest", "frame_request", "decode_request", "encode_request",
           "frame_reply", "decode_reply", "encode_reply", "field"]
