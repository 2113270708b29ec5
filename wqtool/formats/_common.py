"""Building blocks shared by the format schemas: Go binary time, bounded varints, strict enums, CRC-32C.

Meaning lives here, in Adapters; byte order lives in the field types of each schema.

**Constants eager, construct declarations on first use** (start-up, issue 20 item 9): every schema module keeps
its constants, enums and plain functions at module level, and builds its construct declarations in one function,
``_declare()``, run once on the first access of any name it lists (``declared_on_first_use``, PEP 562's module
``__getattr__``). Detection, finding codes, ``--format`` choices and the hot paths read only constants, so they
never import construct; ``from wqtool.formats.workq import record`` (the property tests, the writers'
references) gets the real declarations.
"""
from __future__ import annotations

import _struct as struct        # (struct's C module: serve imports this before its first reply)
import _thread
from _collections_abc import Callable     # (collections.abc's: serve imports this before its first reply, without
                                          # typing, functools or the collections package)

try:                                      # collections.namedtuple's field accessor (GoTime is one written out)
    from _collections import _tuplegetter
except ImportError:                       # (namedtuple's own fallback)
    from operator import itemgetter as _itemgetter

    def _tuplegetter(index: int, doc: str):
        return property(_itemgetter(index), doc=doc)


# ---------------------------------------------------------------- declarations on first use
def declared_on_first_use(namespace: dict, declare: Callable[[], dict], names: tuple[str, ...]):
    """A schema module's ``__getattr__`` and ``__dir__`` (``__getattr__, __dir__ = declared_on_first_use(globals(),
    _declare, DECLARED)``): the first access of any of ``names`` runs ``declare()`` once (under a lock, so every
    thread sees the same objects) and puts every one of ``names`` into the module; any other missing name is the
    usual AttributeError, without building anything."""
    wanted = frozenset(names)
    lock = _thread.allocate_lock()

    def __getattr__(name: str):
        if name not in wanted:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        with lock:
            if name not in namespace:
                made = declare()
                missing = wanted - made.keys()
                if missing:
                    raise AttributeError(f"{namespace['__name__']}._declare() made no {', '.join(sorted(missing))}")
                for n in names:
                    if isinstance(made[n], type) and "<locals>" in made[n].__qualname__:
                        made[n].__qualname__ = n      # pickle finds a class by module and name (workers, Spark)
                    namespace[n] = made[n]
        return namespace[name]

    def __dir__():
        return sorted({*namespace, *wanted})

    return __getattr__, __dir__


# ---------------------------------------------------------------- checksums
#: CRC-32C (Castagnoli) as declared: reflected poly 0x82F63B78 (normal 0x1EDC6F41), init and xorout 0xFFFFFFFF.
CRC32C_POLY = 0x11EDC6F41
CRC32C_CHECK = 0xE3069283  # crc32c(b"123456789")


def crc32c(data: bytes) -> int:
    """Hardware CRC-32C (google-crc32c). Takes bytes (memoryviews are rejected by google_crc32c.value)."""
    return _crc32c_value(data)


def _first_crc32c(data: bytes) -> int:
    """google-crc32c imported on the first checksum (start-up: the C kernels check their own CRCs)."""
    global _crc32c_value
    import google_crc32c
    _crc32c_value = google_crc32c.value
    return _crc32c_value(data)


_crc32c_value = _first_crc32c


# ---------------------------------------------------------------- varints (Go encoding/binary)
MAX_VARINT_LEN64 = 10


_ONE_BYTE = tuple(bytes((v,)) for v in range(0x80))     # most fields of a record fit one byte


def encode_uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def long_key(n: int) -> bytes:
    """A Java ``long`` id (an Orth / XXL-JOB log id) as the 8-byte big-endian two's-complement key the record facts
    carry for a job."""
    return n.to_bytes(8, "big", signed=True)


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def zigzag_encode(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & ((1 << 64) - 1)


# ---------------------------------------------------------------- Go binary time (version 1, 15 bytes)
#: Seconds from 0001-01-01T00:00:00Z to the Unix epoch.
UNIX_TO_INTERNAL = 62135596800
GO_TIME_VERSION = 1
GO_TIME_SIZE = 15
ZONE_UTC = -1  # FF FF


class GoTime(tuple):
    """A Go time.Time as MarshalBinary v1 stores it: seconds since year 1, nanoseconds, zone offset in minutes.

    Kept raw so that re-encoding is byte-identical; ``zone == -1`` is UTC (what workq writes). (What
    ``collections.namedtuple("GoTime", ("sec", "nsec", "zone"), defaults=(0, ZONE_UTC))`` makes — its fields,
    defaults, equality, repr and pickling — written out: serve imports this before its first reply, and importing
    collections (with functools and contextlib) was a fifth of that start's CPU, typing another 5 %.)
    """

    __slots__ = ()
    _fields = ("sec", "nsec", "zone")
    _field_defaults = {"nsec": 0, "zone": ZONE_UTC}
    __match_args__ = _fields

    def __new__(cls, sec: int, nsec: int = 0, zone: int = ZONE_UTC) -> "GoTime":
        return tuple.__new__(cls, (sec, nsec, zone))

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def __repr__(self) -> str:
        return f"GoTime(sec={self[0]!r}, nsec={self[1]!r}, zone={self[2]!r})"

    sec = _tuplegetter(0, "seconds since 0001-01-01T00:00:00Z")
    nsec = _tuplegetter(1, "nanoseconds")
    zone = _tuplegetter(2, "zone offset in minutes (-1: UTC)")

    @property
    def is_zero(self) -> bool:
        return self.sec == 0 and self.nsec == 0

    @property
    def unix_ns(self) -> int:
        return (self.sec - UNIX_TO_INTERNAL) * 1_000_000_000 + self.nsec

    @classmethod
    def from_unix_ns(cls, ns: int, zone: int = ZONE_UTC) -> "GoTime":
        s, n = divmod(ns, 1_000_000_000)
        return cls(s + UNIX_TO_INTERNAL, n, zone)

    def isoformat(self) -> str:
        """RFC 3339 in UTC with nanoseconds; the Go zero time as 0001-01-01T00:00:00Z."""
        return format_unix_ns(self.unix_ns)


def format_unix_ns(ns: int) -> str:
    s, n = divmod(ns, 1_000_000_000)
    base = _format_seconds(s)
    if base is None:
        return f"@{ns}ns"
    return base + (f".{n:09d}".rstrip("0") if n else "") + "Z"


_SECONDS: dict[int, str | None] = {}      # _format_seconds' answers, up to 8192 (functools.lru_cache: start-up)


def _format_seconds(s: int) -> str | None:
    """Unix seconds as ``YYYY-MM-DDTHH:MM:SS`` (UTC), None outside datetime's years 1-9999 — by arithmetic
    (H. Hinnant's civil_from_days), so that printing a time does not import datetime (start-up). Remembered:
    a log's records share their seconds."""
    try:
        return _SECONDS[s]
    except KeyError:
        pass
    out = _civil_seconds(s)
    if len(_SECONDS) >= 8192:
        _SECONDS.clear()
    _SECONDS[s] = out
    return out


def _civil_seconds(s: int) -> str | None:
    days, rem = divmod(s, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    if not 1 <= year <= 9999:
        return None
    hh, rem = divmod(rem, 3600)
    mm, ss = divmod(rem, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hh:02d}:{mm:02d}:{ss:02d}"


def format_uuid(b: bytes) -> str:
    """RFC 4122 text form of 16 bytes (uuid.UUID(bytes=b), without building the object)."""
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


GO_ZERO_TIME = GoTime(0, 0, ZONE_UTC)

#: The same 15 bytes for the hand-written hot paths (struct is ~50x faster than construct here): version u8,
#: seconds i64, nanoseconds i32, zone read as u16 (0xFFFF = UTC). Proven equal to ``go_time`` by the tests.
GO_TIME_STRUCT = struct.Struct(">BqiH")


# ---------------------------------------------------------------- the domain of a URI (Snap! list, fastjournal)
def domain_of(uri: bytes) -> bytes:
    """[decided] The domain of a resource (the first part of the general sort key ``<domain>:<priority>:<time>``;
    the Snap! list journal's requests and the fastjournal FIFO's entries): the host of ``scheme://host[:port]/…``
    (lower-cased, without user info and port), else everything before the first ``/``."""
    rest = uri
    i = uri.find(b"://")
    if i >= 0:
        rest = uri[i + 3:]
    for sep in (b"/", b"?", b"#"):
        j = rest.find(sep)
        if j >= 0:
            rest = rest[:j]
    if i >= 0:
        rest = rest.rpartition(b"@")[2]
        if rest.startswith(b"["):
            rest = rest[:rest.find(b"]") + 1] if b"]" in rest else rest
        else:
            rest = rest.partition(b":")[0]
        rest = rest.lower()
    return rest


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): the schemas' errors, varints, strict enums, Go time."""
    import crcmod
    from construct import Adapter, Construct, ConstructError, Int8ub, Int16sb, Int32sb, Int64sb, Struct
    from construct.core import stream_read, stream_write

    #: The declared reference implementation (slow, pure table); the tests compare the fast one against it.
    crc32c_reference = crcmod.mkCrcFun(CRC32C_POLY, initCrc=0x00000000, rev=True, xorOut=0xFFFFFFFF)

    class VarintOverflow(ConstructError):
        """A varint that does not fit in 64 bits (Go: 'binary: varint overflows a 64-bit integer')."""

    class UnknownEnumValue(ConstructError):
        """A strict enum met a value it does not declare."""

    class BadTimeVersion(ConstructError):
        """A Go binary time whose version byte is not 1 (Go: 'Time.UnmarshalBinary: unsupported version')."""

    # ------------------------------------------------------------ varints (Go encoding/binary)
    class _UVarInt(Construct):
        """Unsigned LEB128 exactly as Go's binary.ReadUvarint: at most 10 bytes, overflow past 64 bits is an error.

        Parsing accepts non-minimal encodings (as Go does); building always writes the minimal one.
        """

        def _parse(self, stream, context, path):
            result = 0
            shift = 0
            for i in range(MAX_VARINT_LEN64):
                b = stream_read(stream, 1, path)[0]
                if b < 0x80:
                    if i == MAX_VARINT_LEN64 - 1 and b > 1:
                        raise VarintOverflow("varint overflows a 64-bit integer", path=path)
                    return result | (b << shift)
                result |= (b & 0x7F) << shift
                shift += 7
            raise VarintOverflow("varint overflows a 64-bit integer", path=path)

        def _build(self, obj, stream, context, path):
            if not isinstance(obj, int) or obj < 0 or obj >= 1 << 64:
                raise VarintOverflow(f"uvarint out of range: {obj!r}", path=path)
            data = encode_uvarint(obj)
            stream_write(stream, data, len(data), path)
            return obj

        def _sizeof(self, context, path):
            raise ConstructError("uvarint has no fixed size", path=path)

    class _ZigZag(Adapter):
        """Signed zig-zag over the unsigned varint, as Go's binary.PutVarint / ReadVarint."""

        def _decode(self, obj, context, path):
            return (obj >> 1) ^ -(obj & 1)

        def _encode(self, obj, context, path):
            if not -(1 << 63) <= obj < (1 << 63):
                raise VarintOverflow(f"varint out of range: {obj!r}", path=path)
            return ((obj << 1) ^ (obj >> 63)) & ((1 << 64) - 1)

    #: Go binary.PutUvarint / ReadUvarint.
    UVarInt = _UVarInt()
    #: Go binary.PutVarint / ReadVarint (zig-zag).
    ZVarInt = _ZigZag(UVarInt)

    class StrictEnum(Adapter):
        """An IntEnum over an integer field that refuses undeclared values.

        Not construct.Enum: that one parses an unknown byte to a plain int, and a Switch keyed by IntEnum
        members then silently takes its default branch.
        """

        def __init__(self, subcon, enum_cls: type):     # (an IntEnum class)
            super().__init__(subcon)
            self.enum_cls = enum_cls

        def _decode(self, obj, context, path):
            try:
                return self.enum_cls(obj)
            except ValueError:
                raise UnknownEnumValue(f"unknown {self.enum_cls.__name__} {obj}", path=path) from None

        def _encode(self, obj, context, path):
            try:
                return int(self.enum_cls(obj))
            except ValueError:
                raise UnknownEnumValue(f"unknown {self.enum_cls.__name__} {obj}", path=path) from None

    # ------------------------------------------------------------ Go binary time (version 1, 15 bytes)
    class _GoTimeAdapter(Adapter):
        def _decode(self, obj, context, path):
            if obj.version != GO_TIME_VERSION:
                raise BadTimeVersion(f"unsupported Go time version {obj.version}", path=path)
            return GoTime(obj.sec, obj.nsec, obj.zone)

        def _encode(self, obj, context, path):
            return dict(version=GO_TIME_VERSION, sec=obj.sec, nsec=obj.nsec, zone=obj.zone)

    #: Go time.Time.MarshalBinary, version 1 (15 bytes): version u8, seconds i64 BE, nanoseconds i32 BE, zone i16 BE.
    go_time = _GoTimeAdapter(Struct(
        "version" / Int8ub,
        "sec" / Int64sb,
        "nsec" / Int32sb,
        "zone" / Int16sb,
    ))

    return locals()


DECLARED = ("crc32c_reference", "VarintOverflow", "UnknownEnumValue", "BadTimeVersion", "_UVarInt", "UVarInt",
            "_ZigZag", "ZVarInt", "StrictEnum", "_GoTimeAdapter", "go_time")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
