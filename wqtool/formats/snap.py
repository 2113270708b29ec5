"""Snap! journals — spec: docs/formats/snap-journals.md.

Three m2osw artefacts, kept apart:

* **the snapwebsites list plugin's hourly client journal** (implemented upstream, ``list.cpp``): text files
  ``0.msg`` … ``23.msg``, one ASCII line ``priority=…;key_start_date=…;uri=…\\n`` per request; acknowledged lines
  are overwritten with ``\\n`` bytes in place;
* **prinbee's event journal EVTJ** (implemented upstream, ``journal.cpp``): raw structs in the writer's native
  byte order, no checksum;
* **libfastjournal — a design only, never implemented upstream.** The ``FJ`` / ``JR`` messages below follow its
  README (big-endian header fields); everything the README leaves open is marked ``[decided]`` and documented in
  the README section "fastjournal (per the unimplemented libfastjournal design)". The journal wqtool's own
  implementation writes (``FJJL``) is wqtool's: no upstream file or daemon reads or writes it.

Each schema describes one line, header, event, message or record; the engine owns every loop over a file.
Byte order is in the field types: EVTJ is native (``schemas(byteorder)`` builds it for a given order), the
fastjournal messages and journal are big-endian.
"""
from __future__ import annotations

import re
import sys
from enum import IntEnum, unique
from types import SimpleNamespace

from construct import (Adapter, Array, BitsInteger, BitStruct, Bytes, Const, Default, Flag, GreedyBytes, If,
                       IfThenElse, Int8ub, Int8ul, Int16ub, Int16ul, Int32ub, Int32ul, Int64ub, Int64ul,
                       NullTerminated, Pass, Prefixed, Rebuild, Struct, Switch, Terminated, ValidationError, len_,
                       this)

from ._common import StrictEnum

# ====================================================================== Part B: the list client journal
#: Default journal directory (``snapserver.conf`` list_data_path + ``journal``).
LIST_JOURNAL_DIR = "/var/lib/snapwebsites/list/journal"
HOURS = 24
US_PER_HOUR = 3_600_000_000
#: ``<hour>.msg``: the UTC hour of the request's start date (``std::to_string(hour)``: no leading zero).
HOUR_FILE = re.compile(r"^(0|[1-9]|1[0-9]|2[0-3])\.msg$")
#: ``LIST_PROCESSING_LATENCY``: the default and minimum start-date offset (10 s); the offset is clamped to 24 h.
LIST_PROCESSING_LATENCY_US = 10_000_000
MAX_START_DATE_OFFSET_US = 24 * US_PER_HOUR
#: While the site is being updated (``content::is_updating()``) the writer adds 1 h and uses priority 180.
UPDATING_DELAY_US = US_PER_HOUR
LIST_PRIORITY_UPDATES = 180
PRIORITY_MAX = 255
#: The three fields the reader requires (any order, ``;``-separated, spaces trimmed, unknown names ignored).
LIST_FIELDS = (b"priority", b"key_start_date", b"uri")
FIELD_SEPARATOR = b";"
#: The writer replaces every ``;`` of the URI with this text (sic: ``%3A`` is really the encoding of ``:``).
SEMICOLON_REPLACEMENT = b"%3A"
LINE_END = b"\n"
#: The journal's files are created mode 0600 (``S_IRUSR | S_IWUSR``), owned by snapwebsites:snapwebsites.
HOUR_FILE_MODE = 0o600


def hour_file(hour: int) -> str:
    return f"{hour}.msg"


def _c_div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def start_hour(start_date_us: int) -> int:
    """The hour file of a request: ``start_date / (60 * 60 * 1000000) % 24`` with C++ int64 semantics."""
    q = _c_div(start_date_us, US_PER_HOUR)
    return q - 24 * _c_div(q, 24)


def reading_order(current_hour: int) -> list[int]:
    """The reader's hours: ``(end_hour + 1) % 24`` … 23, 0 … ``end_hour`` — one day ending with the current
    hour."""
    return [(current_hour + 1 + i) % HOURS for i in range(HOURS)]


def kept_hours(current_hour: int) -> tuple[int, int]:
    """``keep_hour1`` (the previous hour) and ``keep_hour2`` (the current one): never unlinked, a writer may
    still append to them."""
    return ((current_hour + 23) % HOURS, current_hour)


class _Decimal(Adapter):
    """``std::to_string`` of an integer: ASCII digits with an optional ``-``; building writes the shortest form."""

    def _decode(self, obj, context, path):
        if not re.fullmatch(rb"-?[0-9]+", obj):
            raise ValidationError(f"not a decimal integer: {obj!r}", path=path)
        return int(obj)

    def _encode(self, obj, context, path):
        return str(int(obj)).encode("ascii")


class _Uri(Adapter):
    """The URI as the writer leaves it: non-empty, no ``;`` (replaced by ``%3A``), no newline."""

    def _decode(self, obj, context, path):
        if not obj or b";" in obj or b"\n" in obj:
            raise ValidationError(f"not a journal uri: {obj!r}", path=path)
        return obj

    def _encode(self, obj, context, path):
        return self._decode(obj, context, path)


#: One journal line exactly as ``list::on_modified_content`` writes it (the canonical form). The reader is more
#: lenient (any order, spaces, unknown names: ``wqtool.engine.snaplist.fastpath.tokenize``).
list_line = Struct(
    Const(b"priority="),
    "priority" / _Decimal(NullTerminated(GreedyBytes, term=b";")),     # std::to_string(int(priority))
    Const(b"key_start_date="),
    "key_start_date" / _Decimal(NullTerminated(GreedyBytes, term=b";")),  # int64 µs since the epoch
    Const(b"uri="),
    "uri" / _Uri(NullTerminated(GreedyBytes, term=b"\n")),
    Terminated,
)


# ====================================================================== Part C: prinbee EVTJ
EVTJ_MAGIC = b"EVTJ"
EVTJ_MAJOR_VERSION = 1
EVTJ_MINOR_VERSION = 0
EVENT_MAGIC = b"ev"
#: Where a compressed file ends: two zero bytes instead of ``ev``.
END_MARKER = b"\x00\x00"
FILE_HEADER_SIZE = 8
EVENT_HEADER_SIZE = 32
ATTACHMENT_OFFSET_SIZE = 4
#: Bit 31 of an attachment offset: the attachment is external, the low 31 bits are its id (``{id}.bin``).
EXTERNAL_ATTACHMENT = 0x8000_0000
ATTACHMENT_ID_MASK = 0x7FFF_FFFF
MAX_REQUEST_ID_SIZE = 255
MAX_ATTACHMENTS = 255
#: ``g_time_epsilon``: the loader refuses events more than 5 s in the future.
TIME_EPSILON_NS = 5_000_000_000
#: ``journal-{N}.events`` (``journal::get_filename``), ``{id}.bin`` attachments, the settings and counter files.
EVENTS_FILE = re.compile(r"^journal-(0|[1-9][0-9]*)\.events$")
ATTACHMENT_FILE = re.compile(r"^(0|[1-9][0-9]*)\.bin$")
JOURNAL_CONF = "journal.conf"
COUNTERS_FILE = "counters.seq"
#: The platforms prinbee is built for (amd64, arm64) are little-endian: the order of the spec's examples.
NATIVE_BYTE_ORDER = sys.byteorder


@unique
class Status(IntEnum):
    """``status_t``, spelled as upstream (``STATUS_READY`` …)."""

    UNKNOWN = 0           # never valid in a file
    READY = 1
    FORWARDED = 2
    ACKNOWLEDGED = 3
    COMPLETED = 4
    FAILED = 100

    @property
    def label(self) -> str:
        return self.name.lower()


#: Statuses the loader indexes (the others are skipped and make the file compressible).
LIVE_STATUSES = frozenset({Status.READY, Status.FORWARDED, Status.ACKNOWLEDGED})
#: ``update_event_status``'s allowed moves: only forward.
STATUS_MOVES = frozenset({
    (Status.READY, Status.FORWARDED), (Status.READY, Status.ACKNOWLEDGED), (Status.READY, Status.COMPLETED),
    (Status.READY, Status.FAILED), (Status.FORWARDED, Status.ACKNOWLEDGED), (Status.FORWARDED, Status.COMPLETED),
    (Status.FORWARDED, Status.FAILED), (Status.ACKNOWLEDGED, Status.COMPLETED), (Status.ACKNOWLEDGED, Status.FAILED),
})
#: How far along a status is (COMPLETED and FAILED are both final).
STATUS_RANK = {Status.READY: 1, Status.FORWARDED: 2, Status.ACKNOWLEDGED: 3, Status.COMPLETED: 4, Status.FAILED: 4}

#: ``journal.conf`` (advgetopt ``key=value``): allowed values or (min, max), and upstream's defaults where the spec
#: gives them.
CONF_CHOICES = {
    "sync": ("none", "flush", "full"),
    "compress_when_full": ("true", "false"),
    "file_management": ("keep", "truncate", "delete"),
    "attachment_copy_handling": ("softlink", "hardlink", "reflink", "full"),
}
CONF_RANGES = {
    "maximum_number_of_files": (2, 255),
    "maximum_file_size": (64 * 1024, 128 * 1024 * 1024),
    "maximum_events": (100, 100_000),
    "inline_attachment_size_threshold": (256, 16 * 1024),
}
CONF_DEFAULTS = {"maximum_number_of_files": 2, "maximum_file_size": 1024 * 1024, "maximum_events": 4096,
                 "inline_attachment_size_threshold": 4 * 1024, "attachment_copy_handling": "softlink"}


def schemas(byteorder: str = NATIVE_BYTE_ORDER) -> SimpleNamespace:
    """The EVTJ schemas for one byte order ("little", "big"; default: this machine's, as upstream reads)."""
    if byteorder not in ("little", "big"):
        raise ValueError(f"byte order must be little or big, got {byteorder!r}")
    le = byteorder == "little"
    u16, u32, u64 = (Int16ul, Int32ul, Int64ul) if le else (Int16ub, Int32ub, Int64ub)
    journal_header = Struct(                 # event_journal_header_t, 8 bytes
        "magic" / Const(EVTJ_MAGIC),
        "major_version" / Default(Int8ul, EVTJ_MAJOR_VERSION),
        "minor_version" / Default(Int8ul, EVTJ_MINOR_VERSION),
        "pad" / Default(u16, 0),
    )
    event_header = Struct(                   # event_journal_event_t, 32 bytes, fields as stored
        "magic" / Bytes(2),                  # "ev"; "\0\0" ends a compressed file; the loader stops on others
        "status" / Int8ul,                   # raw: an unknown status stops the loader (the engine says so)
        "request_id_size" / Int8ul,
        "size" / u32,                        # the whole event, this header included
        "tv_sec" / u64,
        "tv_nsec" / u64,
        "attachment_count" / Int8ul,
        "pad" / Default(Bytes(7), bytes(7)),
    )
    event = Struct(                          # one whole event as add_event writes it
        "magic" / Const(EVENT_MAGIC),
        "status" / StrictEnum(Int8ul, Status),
        "request_id_size" / Rebuild(Int8ul, len_(this.request_id)),
        "size" / Rebuild(u32, EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * len_(this.offsets)
                         + len_(this.request_id) + len_(this.data)),
        "tv_sec" / u64,
        "tv_nsec" / u64,
        "attachment_count" / Rebuild(Int8ul, len_(this.offsets)),
        "pad" / Default(Bytes(7), bytes(7)),
        "offsets" / Array(this.attachment_count, u32),   # from the event's start; bit 31: external {id}.bin
        "request_id" / Bytes(this.request_id_size),
        "data" / Bytes(this.size - EVENT_HEADER_SIZE - ATTACHMENT_OFFSET_SIZE * this.attachment_count
                       - this.request_id_size),            # the inline attachments, back to back
    )
    #: snapdev ``unique_number``: an unsigned __int128 counter at ``index * 16`` (the journal uses index 0).
    counter = Struct("low" / u64, "high" / u64) if le else Struct("high" / u64, "low" / u64)
    return SimpleNamespace(byteorder=byteorder, journal_header=journal_header, event_header=event_header,
                           event=event, counter=counter, struct_prefix="<" if le else ">")


_NATIVE = schemas()
journal_header = _NATIVE.journal_header
event_header = _NATIVE.event_header
event = _NATIVE.event


# ====================================================================== Part A: libfastjournal (DESIGN ONLY)
# Everything below follows m2osw/fastjournal's README, a design never implemented upstream; "[decided]" marks
# what the README leaves open and wqtool decided. No existing file or daemon speaks it.
FJ_MAGIC = b"FJ"
JR_MAGIC = b"JR"
FJ_VERSION = 1


@unique
class Function(IntEnum):
    NOP = 0          # never sent
    QUIT = 1         # the client closes cleanly
    SET = 2
    GET = 3
    DELETE = 4
    NEXT = 5         # [decided] the README's unnumbered backend request: the next due entry
    PING = 6         # [decided] the README's unnumbered client wake-up: a no-op that replies


@unique
class ValueType(IntEnum):
    """Advisory value types (no schema upstream)."""

    VOID = 0
    BUFFER = 1
    STRING = 2
    INTEGER = 3
    FLOAT = 4
    BOOLEAN = 5


@unique
class Query(IntEnum):
    KEY = 0
    RANGE = 1
    REGEX = 2
    CURSOR = 3


@unique
class SizeWidth(IntEnum):
    """Flag bits 1-2: how the value size is stored."""

    NONE = 0
    U8 = 1
    U16 = 2
    U32 = 3


# flag bits (the README's numbering: bit 0 is the least significant bit of the big-endian u16)
FLAG_KEY16 = 1 << 0
VALUE_SIZE_SHIFT = 1
VALUE_SIZE_MASK = 3 << VALUE_SIZE_SHIFT
FLAG_TIMEOUT = 1 << 3
FLAG_UPDATE_TIMEOUT = 1 << 4
FLAG_OVERWRITE = 1 << 5
FLAG_WORKED_ON = 1 << 6
QUERY_SHIFT = 7
QUERY_MASK = 3 << QUERY_SHIFT
FLAG_PERSIST = 1 << 9
FLAG_DATA = 1 << 10
FLAG_LISTEN = 1 << 11
FLAG_PERSIST_AGAIN = 1 << 12     # the README lists "persist" twice (bits 9 and 12) [decided: the same meaning]
RESERVED_FLAGS = 0xE000          # bits 13-15 [decided: must be 0]

#: The u16 flags as named bits (most significant first, as BitStruct reads them).
fj_flags = BitStruct(
    "reserved" / Const(0, BitsInteger(3)),     # 15-13 [decided: must be 0]
    "persist_again" / Flag,                    # 12
    "listen" / Flag,                           # 11: notify the client of changes [decided: refused]
    "data" / Flag,                             # 10: return the data (request); pairs follow (reply) [decided]
    "persist" / Flag,                          # 9: save on disk before replying [decided: always done]
    "query" / StrictEnum(BitsInteger(2), Query),  # 8-7
    "worked_on" / Flag,                        # 6: skip values currently worked on
    "overwrite" / Flag,                        # 5: SET may replace; DELETE is immediate and complete
    "update_timeout" / Flag,                   # 4
    "timeout" / Flag,                          # 3: the timeout field is present
    "value_size" / StrictEnum(BitsInteger(2), SizeWidth),  # 2-1
    "key_size16" / Flag,                       # 0: key (and, in replies, error) sizes are u16, else u8
)

#: A value: its size (u8 / u16 / u32 by flags, counting the type byte), the type, the bytes.
value_body = Struct("type" / StrictEnum(Int8ub, ValueType), "data" / GreedyBytes)


_VALUE = {SizeWidth.U8: Prefixed(Int8ub, value_body), SizeWidth.U16: Prefixed(Int16ub, value_body),
          SizeWidth.U32: Prefixed(Int32ub, value_body)}

#: A request (client -> server), header fields big-endian, data not swapped.
fj_request = Struct(
    "magic" / Const(FJ_MAGIC),
    "version" / Int16ub,
    "function" / StrictEnum(Int16ub, Function),
    "identifier" / Int16ub,                    # echoed in the reply
    "flags" / fj_flags,
    "timestamp" / Int64ub,                     # µs [decided]; the largest wins; orders SET vs DELETE
    "timeout" / If(this.flags.timeout, Int64ub),          # µs, relative [decided]
    "count" / If(this.flags.query == Query.RANGE, Int16ub),  # max keys returned (range queries), 0 = no limit
    "key" / IfThenElse(this.flags.key_size16, Prefixed(Int16ub, GreedyBytes), Prefixed(Int8ub, GreedyBytes)),
    "upper_key" / If(this.flags.query == Query.RANGE,
                     IfThenElse(this.flags.key_size16, Prefixed(Int16ub, GreedyBytes), Prefixed(Int8ub, GreedyBytes))),
    "value" / Switch(this.flags.value_size, _VALUE, default=Pass),
)

#: One key/value pair of a reply.
reply_pair = Struct(
    "key" / IfThenElse(this._.flags.key_size16, Prefixed(Int16ub, GreedyBytes), Prefixed(Int8ub, GreedyBytes)),
    "value" / Switch(this._.flags.value_size, _VALUE, default=Pass),
)

#: A reply (server -> client).
jr_reply = Struct(
    "magic" / Const(JR_MAGIC),
    "version" / Int16ub,
    "identifier" / Int16ub,
    "flags" / fj_flags,
    "timestamp" / Int64ub,                     # the entry's (or the server's) time, µs
    "timeout" / If(this.flags.timeout, Int64ub),   # [decided] absolute µs: worked-on deadline / next job at T
    "count" / If(this.flags.data, Int16ub),        # [decided] present when the reply carries pairs (bit 10)
    "error" / IfThenElse(this.flags.key_size16, Prefixed(Int16ub, GreedyBytes), Prefixed(Int8ub, GreedyBytes)),
    "pairs" / If(this.flags.data, Array(this.count, reply_pair)),
)

#: [decided] The value of a priority-FIFO entry (SET, and the pairs of GET / NEXT replies): type BUFFER, 9 bytes.
fifo_value = Struct(
    "priority" / Int8ub,                       # smaller = more urgent
    "key_start_date" / Int64ub,                # not before this time, µs since the epoch
    Terminated,
)
FIFO_VALUE_SIZE = 9
FJ_HEADER_SIZE = 18                            # magic .. timestamp
JR_HEADER_SIZE = 16
#: [decided] A value beyond this is refused (the connection is closed: a stream cannot be resynchronised).
MAX_VALUE_SIZE = 1 << 20


class FjError:
    """[decided] The error texts of replies (empty = success)."""

    OK = b""
    EXISTS = b"exists"
    NOT_FOUND = b"not found"
    DELETED = b"deleted"            # GET of a deleted key: the reply's timestamp is its tombstone's
    WORKED_ON = b"worked on"
    VERSION = b"unsupported version"
    FUNCTION = b"unknown function"
    QUERY = b"unsupported query"
    FLAG = b"unsupported flag"
    VALUE = b"bad value"
    KEY = b"bad key"
    NOP = b"NOP is never sent"
    TOO_LARGE = b"message too large"
    MAGIC = b"bad magic"
    RESERVED = b"reserved flag bits set"


def domain_of(uri: bytes) -> bytes:
    """[decided] The domain of a resource (the first part of the general sort key ``<domain>:<priority>:<time>``):
    the host of ``scheme://host[:port]/…`` (lower-cased, without user info and port), else everything before the
    first ``/``."""
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


# ---------------------------------------------------------------------- wqtool's journal of the FIFO (FJJL)
# [decided] The priority FIFO's on-disk journal, written by wqtool's implementation only: a directory of segments
# NNNNNNNNN.fjj read in numeric order, plus journal.lock (flock held by the running server). Each record is one
# applied change, stored as the design's own FJ request message, stamped with the server's clock and framed with
# a size and a CRC-32C.
FJJ_MAGIC = b"FJJL"
FJJ_VERSION = 1
FJJ_SEGMENT = re.compile(r"^([0-9]{9})\.fjj$")
FJJ_LOCK = "journal.lock"
FJJ_TEMP_SUFFIX = ".tmp"           # .<NNNNNNNNN>.fjj.tmp: a pack being written
#: Segment flag bit 0: a snapshot — the whole state; every lower-numbered segment is superseded.
SEGMENT_SNAPSHOT = 1 << 0
SEGMENT_HEADER_SIZE = 16
RECORD_OVERHEAD = 16               # size u32 + applied_at u64 + crc u32
#: A record larger than this is damage, never allocated (a request is at most 18 + 8 + 8 + 2 + 2*65537 + 4 + 2**20).
MAX_RECORD_SIZE = 2 * 1024 * 1024
DEFAULT_SEGMENT_SIZE = 64 * 1024 * 1024


def fjj_segment_name(seq: int) -> str:
    return f"{seq:09d}.fjj"


#: Segment header (16 bytes): magic, version, flags, the segment's number, CRC-32C of the first 12 bytes.
fjj_segment_header = Struct(
    "magic" / Const(FJJ_MAGIC),
    "version" / Int16ub,
    "flags" / Int16ub,
    "seq" / Int32ub,
    "crc" / Int32ub,
)

#: One record: ``size`` counts applied_at + request; the CRC-32C covers size, applied_at and request.
fjj_record = Struct(
    "size" / Rebuild(Int32ub, 8 + len_(this.request)),
    "applied_at" / Int64ub,                    # the server's clock when the change was applied, µs
    "request" / Bytes(this.size - 8),          # one fj_request, exactly
    "crc" / Int32ub,
)
