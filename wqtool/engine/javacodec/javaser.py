"""Legacy XXL-JOB <= 3.2 retry files: ``ObjectOutputStream.writeObject(ArrayList<HandleCallbackParam>)``.

``parse_legacy(data)`` is a bounded parser of exactly that stream shape (``formats.orth``: ``arraylist_head``,
``param_desc``, ``reference``, ``param_values``, string bodies): it never instantiates anything, checks every length
against the bytes left before slicing, and raises ``JavaStreamError`` (message, byte offset, whether the bytes ran
out first) on anything else — another class, another field layout, an unknown type code, a dangling reference.
``encode_legacy(entries)`` writes the stream from the same schemas (the fixtures' writer); the tests check both
against real Java.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from construct import ConstructError

from ...formats.orth import (BASE_WIRE_HANDLE, MIN_ELEMENT_BYTES, PARAM_CLASS, STREAM_HEAD, TC_CLASSDESC,
                             TC_ENDBLOCKDATA, TC_LONGSTRING, TC_NULL, TC_OBJECT, TC_REFERENCE, TC_STRING,
                             arraylist_head, java_long_utf, java_utf, mutf8_decode, mutf8_encode, param_desc,
                             param220_desc, param220_values, param_values, reference, returnt_desc, returnt_values)
from .gson import Entry

_HEAD = arraylist_head.build({"size": 0, "capacity": 0})
_SIZE_AT = len(_HEAD) - 4 - 2 - 4            # size(4) blockdata(2) capacity(4) end the head
_DESC = param_desc.build({})
_VALUES = struct.Struct(">iqq")              # param_values: handleCode, logDateTim, logId
assert _VALUES.size == param_values.sizeof()
_DESC220 = param220_desc.build({})
_RDESC = returnt_desc.build({})
_VALUES220 = struct.Struct(">qq")             # param220_values: logDateTim, logId
_RVALUES = struct.Struct(">i")                # returnt_values: code
assert _VALUES220.size == param220_values.sizeof() and _RVALUES.size == returnt_values.sizeof()


class StreamError(Exception):
    """A bounded binary reader's refusal: what was expected, at which offset, and whether the bytes ran out (``eof``:
    a cut-short file rather than foreign bytes). The Java stream and the Hessian readers raise its kinds."""

    def __init__(self, message: str, offset: int, eof: bool = False):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.eof = eof


class JavaStreamError(StreamError):
    """A Java serialization stream this reader does not take (ObjectOutputStream's shape of one list)."""


@dataclass(slots=True)
class LegacyResult:
    entries: list[Entry]
    end: int            # offset after the stream's last byte (TC_ENDBLOCKDATA)
    trailing: int       # bytes after it (Java's readObject ignores them)
    release: str = "xxl-job-2.3"     # formats.orth.CALLBACK_RELEASES: 2.3-3.2's four fields, or 2.2.0's ReturnT


def _first_difference(data: bytes, pos: int, expected: bytes) -> int | None:
    """The offset of the first byte of ``data[pos:]`` differing from ``expected``, or None if it matches."""
    got = data[pos:pos + len(expected)]
    for i, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return pos + i
    if len(got) < len(expected):
        return pos + len(got)
    return None


def _string_or_null(data: bytes, pos: int, handles: dict, nxt: int, element: int,
                    what: str) -> tuple[str | None, int, int]:
    """Field ``what`` of list element ``element`` at ``pos``: TC_NULL, a TC_STRING / TC_LONGSTRING (modified UTF-8;
    it takes handle ``nxt``) or a TC_REFERENCE to an earlier string. Returns (value, next pos, next handle);
    a cut-short or foreign byte is a JavaStreamError at its offset. Lengths are checked before anything is read."""
    n = len(data)

    def need(k: int, which: str) -> None:
        if pos + k > n:
            raise JavaStreamError(f"cut short in {which} (element {element}): needs {k} bytes, {n - pos} left",
                                  pos, eof=True)

    need(1, what)
    t = data[pos]
    if t == TC_NULL:
        return None, pos + 1, nxt
    if t in (TC_STRING, TC_LONGSTRING):
        width = 2 if t == TC_STRING else 8
        need(1 + width, "a string length")
        ln = int.from_bytes(data[pos + 1:pos + 1 + width], "big")
        body = pos + 1 + width
        if ln > n - body:
            raise JavaStreamError(f"string of {ln} bytes, {n - body} left", pos + 1, eof=True)
        try:
            v = (java_utf if t == TC_STRING else java_long_utf).parse(data[pos + 1:body + ln])
        except (ConstructError, ValueError) as exc:
            raise JavaStreamError(f"{what} is not modified UTF-8: {exc}", body) from None
        handles[nxt] = v
        return v, body + ln, nxt + 1
    if t == TC_REFERENCE:
        need(5, "a string reference")
        h = int.from_bytes(data[pos + 1:pos + 5], "big")
        v = handles.get(h)
        if not isinstance(v, str):
            raise JavaStreamError(f"reference 0x{h:x} does not name an earlier string", pos + 1)
        return v, pos + 5, nxt
    raise JavaStreamError(f"unexpected type code 0x{t:02x} for {what} (expected a string or null)", pos)


def parse_legacy(data: bytes) -> LegacyResult:
    n = len(data)
    if not data.startswith(STREAM_HEAD):
        bad = _first_difference(data, 0, STREAM_HEAD)
        raise JavaStreamError(f"not a Java serialization stream: expected {STREAM_HEAD.hex(' ')} at offset 0",
                              bad or 0, eof=n < 4 and data == STREAM_HEAD[:n])
    bad = _first_difference(data, 0, _HEAD[:_SIZE_AT])
    if bad is not None:
        eof = bad >= n
        raise JavaStreamError("cut short inside the ArrayList header" if eof else
                              "not an ArrayList as ObjectOutputStream writes it (class descriptor differs)", bad, eof)
    if n < len(_HEAD):
        raise JavaStreamError("cut short inside the ArrayList header", n, eof=True)
    try:
        head = arraylist_head.parse(data[:len(_HEAD)])
    except ConstructError as exc:
        raise JavaStreamError(f"ArrayList header: {exc}", _SIZE_AT) from None
    size = head.size
    pos = len(_HEAD)
    if size < 0 or size > (n - pos) // MIN_ELEMENT_BYTES + 1:
        if size < 0:
            raise JavaStreamError(f"negative list size {size}", _SIZE_AT)
        raise JavaStreamError(f"list size {size} cannot fit in the {n - pos} bytes left (an element takes at least "
                              f"{MIN_ELEMENT_BYTES})", _SIZE_AT, eof=True)
    #: handle -> the string it names (None: an object or class descriptor)
    handles: dict[int, str | None] = {BASE_WIRE_HANDLE: None, BASE_WIRE_HANDLE + 1: None}
    nxt = BASE_WIRE_HANDLE + 2
    desc_handle: int | None = None
    entries: list[Entry] = []

    def need(k: int, what: str) -> None:
        if pos + k > n:
            raise JavaStreamError(f"cut short in {what} (element {len(entries)}): needs {k} bytes, {n - pos} left",
                                  pos, eof=True)

    if size and data[pos:pos + 2] == bytes((TC_OBJECT, TC_CLASSDESC)) and \
            _first_difference(data, pos + 1, _DESC220[:_DESC220.index(b"\x00\x03J") + 2]) is None:
        return _parse_220(data, pos, size)
    for _ in range(size):
        start = pos
        need(1, "an element")
        tag = data[pos]
        if tag == TC_NULL:
            raise JavaStreamError("a null list element (xxl-job never writes one)", pos)
        if tag != TC_OBJECT:
            raise JavaStreamError(f"unexpected type code 0x{tag:02x} where a list element should start (expected "
                                  f"TC_OBJECT 0x73)", pos)
        pos += 1
        need(1, "a class descriptor")
        t = data[pos]
        if t == TC_CLASSDESC:
            if desc_handle is not None:
                raise JavaStreamError("a second class descriptor (ObjectOutputStream writes it once)", pos)
            bad = _first_difference(data, pos, _DESC)
            if bad is not None:
                if bad >= n:
                    raise JavaStreamError("cut short inside the HandleCallbackParam class descriptor", n, eof=True)
                raise JavaStreamError(_describe_desc(data, pos), bad)
            pos += len(_DESC)
            desc_handle = nxt
            handles[nxt] = None
            handles[nxt + 1] = "Ljava/lang/String;"
            nxt += 2
        elif t == TC_REFERENCE:
            need(5, "a class reference")
            h = reference.parse(data[pos:pos + 5]).handle
            if desc_handle is None or h != desc_handle:
                raise JavaStreamError(f"reference 0x{h & 0xFFFFFFFF:x} does not name the HandleCallbackParam "
                                      "class descriptor", pos + 1)
            pos += 5
        else:
            raise JavaStreamError(f"unexpected type code 0x{t:02x} where a class descriptor should be", pos)
        handles[nxt] = None
        nxt += 1
        need(_VALUES.size, "the field values")
        code, date_tim, log_id = _VALUES.unpack_from(data, pos)
        pos += _VALUES.size
        msg, pos, nxt = _string_or_null(data, pos, handles, nxt, len(entries), "handleMsg")
        entries.append(Entry(log_id, date_tim, code, msg, offset=start, length=pos - start))
    if pos >= n:
        raise JavaStreamError("cut short before the end of the list's block data", pos, eof=True)
    if data[pos] != TC_ENDBLOCKDATA:
        raise JavaStreamError(f"unexpected type code 0x{data[pos]:02x} after the last element (expected "
                              "TC_ENDBLOCKDATA 0x78)", pos)
    pos += 1
    return LegacyResult(entries, pos, n - pos)


def _describe_desc(data: bytes, pos: int) -> str:
    """What class descriptor is there instead (for the finding): its class name and field names, read bounded."""
    try:
        ln = int.from_bytes(data[pos + 1:pos + 3], "big")
        name = mutf8_decode(data[pos + 3:pos + 3 + ln]) if pos + 3 + ln <= len(data) else "?"
        p = pos + 3 + ln + 8 + 1
        count = int.from_bytes(data[p:p + 2], "big")
        p += 2
        fields = []
        for _ in range(min(count, 16)):
            tc = chr(data[p])
            fl = int.from_bytes(data[p + 1:p + 3], "big")
            fields.append(mutf8_decode(data[p + 3:p + 3 + fl]))
            p += 3 + fl
            if tc in "L[":
                if data[p] == TC_STRING:
                    p += 3 + int.from_bytes(data[p + 1:p + 3], "big")
                else:
                    p += 5
        what = f"fields {', '.join(fields)}"
    except (IndexError, ValueError):
        return "not the HandleCallbackParam class descriptor xxl-job 2.3-3.2 writes"
    if name == PARAM_CLASS:
        return (f"{name} with {what}: not the four-field layout of xxl-job 2.3-3.2 (handleCode, logDateTim, logId, "
                "handleMsg); older releases (executeResult) are not read")
    return f"an element of class {name} ({what}), not {PARAM_CLASS}"


class _Stream:
    """A Java serialization stream of one ``ArrayList`` being written: the next wire handle, and the handle of each
    class descriptor written so far (a later object of that class refers to it)."""

    def __init__(self, size: int):
        self.out = [arraylist_head.build({"size": size, "capacity": size})]
        self.nxt = BASE_WIRE_HANDLE + 2            # the ArrayList's class descriptor and the list itself
        self.descs: dict[bytes, int] = {}

    def new_object(self, desc: bytes, desc_handles: int) -> int:
        """TC_OBJECT, then its class descriptor ``desc`` (which takes ``desc_handles`` handles) the first time, a
        reference to it after; the object's handle."""
        self.out.append(bytes((TC_OBJECT,)))
        h = self.descs.get(desc)
        if h is None:
            self.out.append(desc)
            self.descs[desc] = self.nxt
            self.nxt += desc_handles
        else:
            self.ref(h)
        self.nxt += 1
        return self.nxt - 1

    def ref(self, handle: int) -> None:
        self.out.append(reference.build({"handle": handle}))

    def string(self, v: str | None) -> int | None:
        """A String object (TC_STRING, or TC_LONGSTRING past 65,535 bytes of modified UTF-8) or TC_NULL; its
        handle."""
        if v is None:
            self.out.append(bytes((TC_NULL,)))
            return None
        if len(mutf8_encode(v)) <= 0xFFFF:
            self.out.append(bytes((TC_STRING,)) + java_utf.build(v))
        else:
            self.out.append(bytes((TC_LONGSTRING,)) + java_long_utf.build(v))
        self.nxt += 1
        return self.nxt - 1

    def end(self) -> bytes:
        self.out.append(bytes((TC_ENDBLOCKDATA,)))
        return b"".join(self.out)


def encode_legacy(entries, same_object: dict[int, int] | None = None) -> bytes:
    """The stream Java writes for ``ArrayList<HandleCallbackParam>`` of ``entries`` (Entry or tuples).
    ``same_object[i] = j``: entry i's handleMsg is the same String object as entry j's (Java writes a reference)."""
    same_object = same_object or {}
    w = _Stream(len(entries))
    msg_handle: dict[int, int] = {}
    for i, e in enumerate(entries):
        w.new_object(_DESC, 2)
        w.out.append(_VALUES.pack(e.handle_code, e.log_date_tim, e.log_id))
        if e.handle_msg is not None and i in same_object:
            w.ref(msg_handle[same_object[i]])
        else:
            h = w.string(e.handle_msg)
            if h is not None:
                msg_handle[i] = h
    return w.end()


def _parse_220(data: bytes, pos: int, size: int) -> LegacyResult:
    """xxl-job 2.2.0: ``ArrayList<HandleCallbackParam{logId, logDateTim, ReturnT<String> executeResult}>``
    (v2.2.0 HandleCallbackParam.java:9-14, ReturnT.java): the same bounded walk, two descriptors, ReturnT objects
    shared by reference (``ReturnT.SUCCESS`` is one instance)."""
    n = len(data)
    handles: dict[int, object] = {BASE_WIRE_HANDLE: None, BASE_WIRE_HANDLE + 1: None}
    nxt = BASE_WIRE_HANDLE + 2
    pdesc = rdesc = None
    returnts: dict[int, tuple[int, str | None]] = {}
    entries: list[Entry] = []

    def need(k: int, what: str) -> None:
        if pos + k > n:
            raise JavaStreamError(f"cut short in {what} (element {len(entries)}): needs {k} bytes, {n - pos} left",
                                  pos, eof=True)

    def string_or_null(what: str) -> str | None:
        nonlocal pos, nxt
        v, pos, nxt = _string_or_null(data, pos, handles, nxt, len(entries), what)
        return v

    def desc(expected: bytes, known: int | None, what: str, extra_handles: int) -> int:
        nonlocal pos, nxt
        need(1, f"the {what} class descriptor")
        t = data[pos]
        if t == TC_CLASSDESC:
            if known is not None:
                raise JavaStreamError(f"a second {what} class descriptor (ObjectOutputStream writes it once)", pos)
            bad = _first_difference(data, pos, expected)
            if bad is not None:
                if bad >= n:
                    raise JavaStreamError(f"cut short inside the {what} class descriptor", n, eof=True)
                raise JavaStreamError(f"not the {what} class descriptor of xxl-job 2.2.0", bad)
            pos += len(expected)
            h = nxt
            nxt += 1 + extra_handles
            return h
        if t == TC_REFERENCE:
            need(5, "a class reference")
            h = int.from_bytes(data[pos + 1:pos + 5], "big")
            if h != known:
                raise JavaStreamError(f"reference 0x{h & 0xFFFFFFFF:x} does not name the {what} class descriptor",
                                      pos + 1)
            pos += 5
            return h
        raise JavaStreamError(f"unexpected type code 0x{t:02x} where the {what} class descriptor should be", pos)

    for _ in range(size):
        start = pos
        need(1, "an element")
        if data[pos] != TC_OBJECT:
            raise JavaStreamError(f"unexpected type code 0x{data[pos]:02x} where a list element should start "
                                  "(expected TC_OBJECT 0x73)", pos)
        pos += 1
        pdesc = desc(_DESC220, pdesc, "HandleCallbackParam", 1)
        handles[nxt] = None
        nxt += 1
        need(_VALUES220.size, "the field values")
        date_tim, log_id = _VALUES220.unpack_from(data, pos)
        pos += _VALUES220.size
        need(1, "executeResult")
        t = data[pos]
        if t == TC_NULL:
            pos += 1
            code, msg = 0, None
        elif t == TC_REFERENCE:
            need(5, "a ReturnT reference")
            h = int.from_bytes(data[pos + 1:pos + 5], "big")
            if h not in returnts:
                raise JavaStreamError(f"reference 0x{h:x} does not name an earlier ReturnT", pos + 1)
            code, msg = returnts[h]
            pos += 5
        elif t == TC_OBJECT:
            pos += 1
            rdesc = desc(_RDESC, rdesc, "ReturnT", 2)
            me = nxt
            handles[me] = None
            nxt += 1
            need(_RVALUES.size, "ReturnT.code")
            (code,) = _RVALUES.unpack_from(data, pos)
            pos += _RVALUES.size
            string_or_null("ReturnT.content")
            msg = string_or_null("ReturnT.msg")
            returnts[me] = (code, msg)
        else:
            raise JavaStreamError(f"unexpected type code 0x{t:02x} for executeResult (expected a ReturnT or null)",
                                  pos)
        entries.append(Entry(log_id, date_tim, code, msg, offset=start, length=pos - start))
    if pos >= n:
        raise JavaStreamError("cut short before the end of the list's block data", pos, eof=True)
    if data[pos] != TC_ENDBLOCKDATA:
        raise JavaStreamError(f"unexpected type code 0x{data[pos]:02x} after the last element (expected "
                              "TC_ENDBLOCKDATA 0x78)", pos)
    pos += 1
    return LegacyResult(entries, pos, n - pos, "xxl-job-2.2.0")


def encode_220(entries, shared: dict[int, int] | None = None, contents: dict[int, str] | None = None) -> bytes:
    """The stream Java writes for 2.2.0's ``ArrayList<HandleCallbackParam>``: each entry's ReturnT(code, msg,
    content); ``shared[i] = j``: entry i's executeResult is entry j's object (a reference)."""
    shared, contents = shared or {}, contents or {}
    w = _Stream(len(entries))
    rt: dict[int, int] = {}
    for i, e in enumerate(entries):
        w.new_object(_DESC220, 2)
        w.out.append(_VALUES220.pack(e.log_date_tim, e.log_id))
        if i in shared:
            w.ref(rt[shared[i]])
            continue
        rt[i] = w.new_object(_RDESC, 3)
        w.out.append(_RVALUES.pack(e.handle_code))
        w.string(contents.get(i))
        w.string(e.handle_msg)
    return w.end()
