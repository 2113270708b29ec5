"""libfastjournal — a design only, never implemented upstream — spec: docs/formats/snap-journals.md Part A.

The ``FJ`` / ``JR`` messages below follow m2osw/fastjournal's README (big-endian header fields); everything the
README leaves open is marked ``[decided]`` and documented in the README section "fastjournal (per the
unimplemented libfastjournal design)". The journal wqtool's own implementation writes (``FJJL``) is wqtool's: no
upstream file or daemon reads or writes it. Each schema describes one message or record; the engine
(``wqtool.engine.fastjournal``) owns every loop over a file.
"""
from __future__ import annotations

import re
from enum import IntEnum, unique


from ._common import declared_on_first_use, domain_of  # noqa: F401 — domain_of: the FIFO's sort key

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


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): the FJ request, the JR reply, the FIFO value, the FJJL
    segment header and record."""
    from construct import (Array, BitsInteger, BitStruct, Bytes, Const, Flag, GreedyBytes, If, IfThenElse, Int8ub,
                           Int16ub, Int32ub, Int64ub, Pass, Prefixed, Rebuild, Struct, Switch, Terminated, len_, this)
    from ._common import StrictEnum

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
                         IfThenElse(this.flags.key_size16, Prefixed(Int16ub, GreedyBytes),
                                    Prefixed(Int8ub, GreedyBytes))),
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

    return locals()


DECLARED = ("fj_flags", "value_body", "_VALUE", "fj_request", "reply_pair", "jr_reply", "fifo_value",
            "fjj_segment_header", "fjj_record")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
