"""xxl-job 2.0.2-2.1.x retry files: Hessian 2 (xxl-rpc ``HessianSerializer`` = ``Hessian2Output.writeObject``) of
``List<HandleCallbackParam>`` — a small bounded reader of the subset such files use, and the writer of it.

``read_value`` reads lists, class definitions, objects, strings, ints, longs, booleans, nulls and back references
(spec: Hessian 2.0 serialization, sections 3.x; byte codes in ``formats.orth`` ``HS_*``). No class is
instantiated: an object is a ``HObject(class name, {field: value})``. Every length is checked against the bytes
left before anything is sliced or allocated (a string's UTF-16 length and a list's length are at most the bytes
left, one byte per unit or element at least), nesting is capped at ``MAX_DEPTH``, and anything else (maps, dates,
doubles, binary, typed lists of another type) is refused with the offset and what was expected.

Checked against the writer's source (caucho hessian 4.0.x ``Hessian2Output``: ``writeListBegin`` — untyped
fixed lists ``0x78 + n`` up to 7, else ``X`` + int; ``writeObjectBegin`` — ``C`` + class name, then the field
count and names, then ``0x60 + def``; ``writeInt`` / ``writeLong`` — the compact ranges above, ``Y`` for a long that
fits 32 bits; ``writeString`` — ``R`` chunks of 0x8000 never ending on a high surrogate, then direct / short / ``S``;
``addRef`` — a second write of the same object is ``Q`` + its reference number) and xxl-rpc 1.4.0/1.5.0
``HessianSerializer`` (``new Hessian2Output(os).writeObject(obj)``); the field order is ``JavaSerializer`` /
``UnsafeSerializer``'s: java.lang and primitive fields first, then the rest, in declaration order.

``encode_params(entries)`` writes what Hessian2Output writes for ``ArrayList<HandleCallbackParam>`` (compact int /
long / string forms, class definitions once, ``ReturnT`` objects shared by identity as ``Q`` references): the
fixtures' writer and the property tests' reference.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ...formats.orth import (HESSIAN_PARAM_FIELDS, HESSIAN_RETURNT_FIELDS, HS_CLASS_DEF, HS_FALSE, HS_INT,
                             HS_INT_BYTE, HS_INT_DIRECT, HS_INT_SHORT, HS_LIST_DIRECT_TYPED, HS_LIST_DIRECT_UNTYPED,
                             HS_LIST_END, HS_LIST_FIXED_TYPED, HS_LIST_FIXED_UNTYPED, HS_LIST_VAR_TYPED,
                             HS_LIST_VAR_UNTYPED, HS_LONG, HS_LONG_BYTE, HS_LONG_DIRECT, HS_LONG_INT, HS_LONG_SHORT,
                             HS_NULL, HS_OBJECT, HS_OBJECT_DIRECT, HS_REF, HS_STRING_CHUNK, HS_STRING_DIRECT_MAX,
                             HS_STRING_FINAL, HS_STRING_SHORT, HS_TRUE, PARAM_CLASS, RETURNT_CLASS,
                             units_utf8, utf16_units_to_str)
from .gson import Entry
from .javaser import StreamError

MAX_DEPTH = 16
#: Class definitions a file may declare (xxl-job's hold two).
MAX_CLASSES = 64


class HessianError(StreamError):
    """A Hessian 2 stream outside the subset xxl-job 2.0.2-2.1.x retry files use, or cut short."""


@dataclass(slots=True)
class HObject:
    cls: str
    fields: dict
    offset: int
    end: int = 0


class HessianReader:
    def __init__(self, data: bytes):
        self.data = data
        self.n = len(data)
        self.pos = 0
        self.classes: list[tuple[str, tuple[str, ...]]] = []
        self.refs: list = []

    def need(self, k: int, what: str) -> None:
        if self.pos + k > self.n:
            raise HessianError(f"cut short in {what}: needs {k} byte(s), {self.n - self.pos} left", self.pos, True)

    def byte(self, what: str) -> int:
        self.need(1, what)
        b = self.data[self.pos]
        self.pos += 1
        return b

    def _be(self, k: int, what: str, signed: bool = True) -> int:
        self.need(k, what)
        v = int.from_bytes(self.data[self.pos:self.pos + k], "big", signed=signed)
        self.pos += k
        return v

    # -- scalars
    def read_int(self, what: str = "an int") -> int:
        at = self.pos
        b = self.byte(what)
        v = self._int_from(b, what)
        if v is None:
            raise HessianError(f"0x{b:02x} is not an int (expected {what})", at)
        return v

    def _int_from(self, b: int, what: str) -> int | None:
        if HS_INT_DIRECT[0] <= b <= HS_INT_DIRECT[1]:
            return b - HS_INT_DIRECT[2]
        if HS_INT_BYTE[0] <= b <= HS_INT_BYTE[1]:
            return ((b - HS_INT_BYTE[2]) << 8) | self._be(1, what, False)
        if HS_INT_SHORT[0] <= b <= HS_INT_SHORT[1]:
            return ((b - HS_INT_SHORT[2]) << 16) | self._be(2, what, False)
        if b == HS_INT:
            return self._be(4, what)
        return None

    def _long_from(self, b: int, what: str) -> int | None:
        if HS_LONG_DIRECT[0] <= b <= HS_LONG_DIRECT[1]:
            return b - HS_LONG_DIRECT[2]
        if HS_LONG_BYTE[0] <= b <= HS_LONG_BYTE[1]:
            return ((b - HS_LONG_BYTE[2]) << 8) | self._be(1, what, False)
        if HS_LONG_SHORT[0] <= b <= HS_LONG_SHORT[1]:
            return ((b - HS_LONG_SHORT[2]) << 16) | self._be(2, what, False)
        if b == HS_LONG_INT:
            return self._be(4, what)
        if b == HS_LONG:
            return self._be(8, what)
        return None

    def _string_from(self, b: int, what: str) -> str | None:
        units: list[int] = []
        while True:
            if b <= HS_STRING_DIRECT_MAX:
                ln, final = b, True
            elif HS_STRING_SHORT[0] <= b <= HS_STRING_SHORT[1]:
                ln, final = ((b - HS_STRING_SHORT[0]) << 8) | self._be(1, what, False), True
            elif b in (HS_STRING_FINAL, HS_STRING_CHUNK):
                ln, final = self._be(2, what, False), b == HS_STRING_FINAL
            else:
                return None if not units else self._bad_chunk(b)
            if ln > self.n - self.pos:          # a UTF-16 unit takes at least one byte
                raise HessianError(f"a string of {ln} characters, {self.n - self.pos} byte(s) left", self.pos, True)
            self._chars(ln, units)
            if final:
                return utf16_units_to_str(units)
            b = self.byte(what)

    def _bad_chunk(self, b: int):
        raise HessianError(f"0x{b:02x} where a string chunk should continue", self.pos - 1)

    def _chars(self, ln: int, units: list[int]) -> None:
        """``ln`` UTF-16 units, each as Hessian writes a char: 1, 2 or 3 UTF-8 bytes (surrogates one by one)."""
        d, p = self.data, self.pos
        for _ in range(ln):
            if p >= self.n:
                raise HessianError("cut short inside a string", p, True)
            c = d[p]
            if c < 0x80:
                units.append(c)
                p += 1
            elif c & 0xE0 == 0xC0:
                if p + 2 > self.n:
                    raise HessianError("cut short inside a string", p, True)
                units.append(((c & 0x1F) << 6) | (d[p + 1] & 0x3F))
                p += 2
            elif c & 0xF0 == 0xE0:
                if p + 3 > self.n:
                    raise HessianError("cut short inside a string", p, True)
                units.append(((c & 0x0F) << 12) | ((d[p + 1] & 0x3F) << 6) | (d[p + 2] & 0x3F))
                p += 3
            else:
                raise HessianError(f"byte 0x{c:02x} is not a character as Hessian writes one", p)
        self.pos = p

    def read_string(self, what: str) -> str:
        at = self.pos
        b = self.byte(what)
        s = self._string_from(b, what)
        if s is None:
            raise HessianError(f"0x{b:02x} is not a string (expected {what})", at)
        return s

    # -- values
    def read_value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            raise HessianError(f"nested deeper than {MAX_DEPTH}", self.pos)
        at = self.pos
        b = self.byte("a value")
        if b == HS_NULL:
            return None
        if b in (HS_TRUE, HS_FALSE):
            return b == HS_TRUE
        v = self._int_from(b, "an int")
        if v is not None:
            return v
        v = self._long_from(b, "a long")
        if v is not None:
            return v
        s = self._string_from(b, "a string")
        if s is not None:
            return s
        if b == HS_REF:
            r = self.read_int("a reference")
            if not 0 <= r < len(self.refs):
                raise HessianError(f"reference {r} names no earlier list or object ({len(self.refs)} so far)", at)
            return self.refs[r]
        if b == HS_CLASS_DEF:
            if len(self.classes) >= MAX_CLASSES:
                raise HessianError(f"more than {MAX_CLASSES} class definitions", at)
            name = self.read_string("a class name")
            count = self.read_int("a field count")
            if count < 0 or count > self.n - self.pos:
                raise HessianError(f"{count} fields cannot fit in the {self.n - self.pos} byte(s) left", at, True)
            self.classes.append((name, tuple(self.read_string("a field name") for _ in range(count))))
            v = self.read_value(depth)
            if isinstance(v, HObject):
                v.offset = at               # the definition belongs to the first object of its class
            return v
        if b == HS_OBJECT or HS_OBJECT_DIRECT[0] <= b <= HS_OBJECT_DIRECT[1]:
            ref = self.read_int("a class reference") if b == HS_OBJECT else b - HS_OBJECT_DIRECT[0]
            if not 0 <= ref < len(self.classes):
                raise HessianError(f"object of class definition {ref}: none so far ({len(self.classes)})", at)
            name, fields = self.classes[ref]
            obj = HObject(name, {}, at)
            self.refs.append(obj)
            for f in fields:
                obj.fields[f] = self.read_value(depth + 1)
            obj.end = self.pos
            return obj
        if b in (HS_LIST_FIXED_UNTYPED, HS_LIST_FIXED_TYPED) or \
                HS_LIST_DIRECT_UNTYPED[0] - 8 <= b <= HS_LIST_DIRECT_UNTYPED[1]:
            if b == HS_LIST_FIXED_TYPED or HS_LIST_DIRECT_TYPED[0] <= b <= HS_LIST_DIRECT_TYPED[1]:
                t = self.read_value(depth + 1)      # a type name (string) or a type reference (int)
                if not isinstance(t, (str, int)) or isinstance(t, bool):
                    raise HessianError("a list type that is neither a name nor a reference", at)
            if b in (HS_LIST_FIXED_UNTYPED, HS_LIST_FIXED_TYPED):
                ln = self.read_int("a list length")
            else:
                ln = b - (HS_LIST_DIRECT_UNTYPED[0] if b >= HS_LIST_DIRECT_UNTYPED[0] else HS_LIST_DIRECT_TYPED[0])
            if ln < 0 or ln > self.n - self.pos:
                raise HessianError(f"a list of {ln} elements cannot fit in the {self.n - self.pos} byte(s) left", at,
                                   ln > 0)
            out: list = []
            self.refs.append(out)
            for _ in range(ln):
                out.append(self.read_value(depth + 1))
            return out
        if b in (HS_LIST_VAR_TYPED, HS_LIST_VAR_UNTYPED):
            if b == HS_LIST_VAR_TYPED:
                self.read_value(depth + 1)
            out = []
            self.refs.append(out)
            while True:
                self.need(1, "a list element or its end")
                if self.data[self.pos] == HS_LIST_END:
                    self.pos += 1
                    return out
                out.append(self.read_value(depth + 1))
        raise HessianError(f"byte code 0x{b:02x} ({chr(b) if 0x20 < b < 0x7f else '?'}) is outside what xxl-job's "
                           "retry files hold (lists, objects, strings, ints, longs, nulls, references)", at)


@dataclass(slots=True)
class HessianResult:
    entries: list[Entry]
    end: int
    trailing: int
    int_log_ids: bool       # logId written as an int (2.0.2-2.0.x: HandleCallbackParam.logId is an int)


def parse_hessian(data: bytes) -> HessianResult:
    """The entries of an xxl-job 2.0.2-2.1.x retry file, or HessianError (offset; eof when the bytes ran out)."""
    r = HessianReader(data)
    top = r.read_value()
    if not isinstance(top, list):
        raise HessianError(f"the document is {type(top).__name__ if not isinstance(top, HObject) else top.cls}, "
                           "not a list", 0)
    entries = []
    int_ids = False
    for i, e in enumerate(top):
        if not isinstance(e, HObject) or e.cls != PARAM_CLASS:
            what = e.cls if isinstance(e, HObject) else type(e).__name__
            raise HessianError(f"element {i} is {what}, not {PARAM_CLASS}", e.offset if isinstance(e, HObject) else 0)
        f = e.fields
        missing = [k for k in HESSIAN_PARAM_FIELDS if k not in f]
        if missing:
            raise HessianError(f"element {i}: no field {', '.join(missing)} (fields {', '.join(f)})", e.offset)
        lid, date = f["logId"], f["logDateTim"]
        if not (isinstance(lid, int) and isinstance(date, int)) or isinstance(lid, bool) or isinstance(date, bool):
            raise HessianError(f"element {i}: logId / logDateTim are not numbers", e.offset)
        int_ids |= -(1 << 31) <= lid < (1 << 31) and _written_as_int(data, e)
        res = f["executeResult"]
        if res is None:
            code, msg = 0, None
        elif isinstance(res, HObject) and res.cls == RETURNT_CLASS and set(HESSIAN_RETURNT_FIELDS) <= set(res.fields):
            code, msg = res.fields["code"], res.fields["msg"]
            if not isinstance(code, int) or isinstance(code, bool) or not (msg is None or isinstance(msg, str)):
                raise HessianError(f"element {i}: executeResult.code / msg of the wrong type", res.offset)
        else:
            raise HessianError(f"element {i}: executeResult is not a {RETURNT_CLASS}", e.offset)
        entries.append(Entry(lid, date, code, msg, offset=e.offset, length=e.end - e.offset))
    return HessianResult(entries, r.pos, len(data) - r.pos, int_ids)


def _written_as_int(data: bytes, obj: HObject) -> bool:
    """Whether the object's first field (logId) is in an int form (2.0.2's ``int logId``)."""
    p = obj.offset + (1 if data[obj.offset] != HS_OBJECT else 2)
    b = data[p] if p < len(data) else 0
    return HS_INT_DIRECT[0] <= b <= HS_INT_SHORT[1] or b == HS_INT


# ---------------------------------------------------------------- the writer (Hessian2Output's choices)
def h_int(v: int) -> bytes:
    if -0x10 <= v <= 0x2F:
        return bytes((0x90 + v,))
    if -0x800 <= v <= 0x7FF:
        return bytes((0xC8 + (v >> 8), v & 0xFF))
    if -0x40000 <= v <= 0x3FFFF:
        return bytes((0xD4 + (v >> 16), (v >> 8) & 0xFF, v & 0xFF))
    return bytes((HS_INT,)) + struct.pack(">i", v)


def h_long(v: int) -> bytes:
    if -8 <= v <= 15:
        return bytes((0xE0 + v,))
    if -2048 <= v <= 2047:
        return bytes((0xF8 + (v >> 8), v & 0xFF))
    if -262144 <= v <= 262143:
        return bytes((0x3C + (v >> 16), (v >> 8) & 0xFF, v & 0xFF))
    if -(1 << 31) <= v < (1 << 31):
        return bytes((HS_LONG_INT,)) + struct.pack(">i", v)
    return bytes((HS_LONG,)) + struct.pack(">q", v)


def h_string(s: str | None) -> bytes:
    """``Hessian2Output.writeString``: chunks of 0x8000 units ('R', never ending on a high surrogate), then the
    final part: direct (<= 31), short (<= 1023) or 'S'."""
    if s is None:
        return bytes((HS_NULL,))
    b = s.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(b[i:i + 2], "little") for i in range(0, len(b), 2)]
    out = bytearray()
    while len(units) > 0x8000:
        k = 0x8000
        if 0xD800 <= units[k - 1] <= 0xDBFF:
            k -= 1
        out += bytes((HS_STRING_CHUNK,)) + k.to_bytes(2, "big") + units_utf8(units[:k], nul_in_two=False)
        units = units[k:]
    n = len(units)
    if n <= HS_STRING_DIRECT_MAX:
        out.append(n)
    elif n <= 1023:
        out += bytes((HS_STRING_SHORT[0] + (n >> 8), n & 0xFF))
    else:
        out += bytes((HS_STRING_FINAL,)) + n.to_bytes(2, "big")
    return bytes(out + units_utf8(units, nul_in_two=False))


def encode_params(entries, *, int_log_id: bool = False, shared: dict[int, int] | None = None,
                  contents: dict[int, str] | None = None, classes: tuple[str, ...] = (), ref0: int = 0) -> bytes:
    """``Hessian2Output.writeObject(ArrayList<HandleCallbackParam>)`` of ``entries`` (``Entry``: the ReturnT's code
    and msg are handle_code / handle_msg). ``shared[i] = j``: entry i's executeResult is entry j's object (one
    ReturnT instance, e.g. ``ReturnT.SUCCESS``: a 'Q' reference); ``contents[i]``: its ReturnT content;
    ``int_log_id``: 2.0.2's ``int logId``. Inside a larger stream (the xxl-rpc request, ``xxlrpc.py``):
    ``classes``, the class definitions written before it, and ``ref0``, the list's reference number."""
    shared, contents = shared or {}, contents or {}
    n = len(entries)
    out = [bytes((HS_LIST_DIRECT_UNTYPED[0] + n,)) if n <= 7 else bytes((HS_LIST_FIXED_UNTYPED,)) + h_int(n)]
    refs = ref0 + 1                             # the list is reference ref0
    defined: list[str] = list(classes)
    ret_ref: dict[int, int] = {}

    def begin(cls: str, fields) -> bytes:
        if cls in defined:
            k = defined.index(cls)
            return bytes((HS_OBJECT_DIRECT[0] + k,)) if k <= 15 else bytes((HS_OBJECT,)) + h_int(k)
        defined.append(cls)
        head = bytes((HS_CLASS_DEF,)) + h_string(cls) + h_int(len(fields)) + b"".join(h_string(f) for f in fields)
        return head + begin(cls, fields)

    for i, e in enumerate(entries):
        out.append(begin(PARAM_CLASS, HESSIAN_PARAM_FIELDS))
        refs += 1
        out.append(h_int(e.log_id) if int_log_id else h_long(e.log_id))
        out.append(h_long(e.log_date_tim))
        if i in shared:
            out.append(bytes((HS_REF,)) + h_int(ret_ref[shared[i]]))
            continue
        out.append(begin(RETURNT_CLASS, HESSIAN_RETURNT_FIELDS))
        ret_ref[i] = refs
        refs += 1
        out.append(h_int(e.handle_code) + h_string(e.handle_msg) + h_string(contents.get(i)))
    return b"".join(out)
