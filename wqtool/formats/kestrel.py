"""Kestrel queue journals (0.8, 1.x, 2.1+) — spec: docs/formats/kestrel-journal.md.

A journal file is a headerless, checksum-free concatenation of records: ``u8 opcode`` + an opcode-specific
little-endian, **signed** body. Each schema here describes one record; the engine owns every loop over a file
(and checks every size against the bytes that remain before slicing anything).

Opcode 8 is CONTINUE and 9 is REMOVE_TENTATIVE_XID in every release (the docs' STATE_DUMP never shipped).
There is no checksum: only framing damage (truncation, unknown opcode, short / negative / absurd block sizes)
is detectable.
"""
from __future__ import annotations

import re
from enum import IntEnum, unique

from ._common import declared_on_first_use


@unique
class Opcode(IntEnum):
    """Journal opcodes, spelled as upstream (``Journal.scala``)."""

    ADD = 0                   # legacy (starling / 0.8): i32 size; i32 expiry_s; data[size-4]
    REMOVE = 1
    ADDX = 2                  # i32 size; i64 add_ms; i64 expiry_ms; data[size-16]
    REMOVE_TENTATIVE = 3      # legacy (1.x): no xid, the server's counter assigns one
    SAVE_XID = 4              # legacy (1.x rewrites): i32 xid
    UNREMOVE = 5              # i32 xid
    CONFIRM_REMOVE = 6        # i32 xid
    ADD_XID = 7               # legacy (1.x rewrites): i32 xid; then an ADDX block
    CONTINUE = 8              # i32 xid; then an ADDX block (1.3.0+)
    REMOVE_TENTATIVE_XID = 9  # i32 xid (2.1.0+)

    @property
    def label(self) -> str:
        """The name used in output and on the command line: addx, remove-tentative-xid, ..."""
        return self.name.lower().replace("_", "-")


#: A journal's first byte is an opcode: a byte above this cannot start a Kestrel journal.
MAX_OPCODE = max(Opcode)

#: Opcodes whose body is an item block (``size`` + times + data).
ITEM_OPS = frozenset({Opcode.ADD, Opcode.ADDX, Opcode.ADD_XID, Opcode.CONTINUE})
#: Opcodes whose body is exactly one ``i32 xid``.
XID_OPS = frozenset({Opcode.SAVE_XID, Opcode.UNREMOVE, Opcode.CONFIRM_REMOVE, Opcode.REMOVE_TENTATIVE_XID})
#: Opcodes a 2.1+ server writes; the others (0, 3, 4, 7) only come from older writers.
OPS_WRITTEN_BY_2X = frozenset({Opcode.REMOVE, Opcode.ADDX, Opcode.UNREMOVE, Opcode.CONFIRM_REMOVE,
                               Opcode.CONTINUE, Opcode.REMOVE_TENTATIVE_XID})
OPS_WRITTEN_BY_1X_ONLY = frozenset({Opcode.REMOVE_TENTATIVE, Opcode.SAVE_XID, Opcode.ADD_XID})

# ---------------------------------------------------------------- sizes
#: ADDX / ADD_XID / CONTINUE block: i64 add_time + i64 expiry precede the data (``QItem.unpack``).
ITEM_BLOCK_MIN = 16
#: legacy ADD block: i32 expiry precedes the data (``unpackOldAdd``).
LEGACY_BLOCK_MIN = 4
#: Record length = fixed part + block size (the reader's ``Journal.size`` accounting).
ADDX_OVERHEAD = 5          # opcode + i32 size       (ADD, ADDX: 5 + size)
ADD_XID_OVERHEAD = 9       # opcode + i32 xid + i32 size (ADD_XID, CONTINUE: 9 + size)
XID_RECORD_SIZE = 5        # opcode + i32 xid
BARE_RECORD_SIZE = 1       # REMOVE, REMOVE_TENTATIVE
#: An ADDX of n data bytes is 21 + n bytes; ADD_XID / CONTINUE are 25 + n (``QItem.pack``).
ADDX_FIXED = ADDX_OVERHEAD + ITEM_BLOCK_MIN
ADD_XID_FIXED = ADD_XID_OVERHEAD + ITEM_BLOCK_MIN
#: Sane cap on a block size when it runs past the end of the file: Kestrel would try to allocate it
#: (OutOfMemoryError for 0x7fffffff); we refuse and call it absurd (exit 3). 128 MiB is Kestrel's default
#: ``maxMemorySize``; a block that fits in the file is read whatever its size.
SIZE_CAP = 128 * 1024 * 1024
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

# ---------------------------------------------------------------- file names (2.x Journal / LocalDirectory)
#: ``<q>~~<ms>``: temp file of a rewrite or pack in progress (deleted at the start of replay).
TEMP_MARKER = "~~"
PACK_SUFFIX = ".pack"
#: ``<q>.<ms>`` and ``<q>.<ms>.pack`` as 2.x parses them: ``name.split('.')(1).toLong``.
ROTATED_NAME = re.compile(r"^(?P<queue>[^.]+)\.(?P<ts>[+-]?\d+)(?P<rest>(\..*)?)$")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
#: libkestrel (3.0, unreleased) magics, for recognising stray files.
LIBKESTREL_WRITER_MAGIC = b"\x27\x64\x26\x03"
LIBKESTREL_READER_MAGIC = b"\x26\x3c\x26\x03"


# ---------------------------------------------------------------- schemas: one record each (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): the item blocks, the xid bodies, the record."""
    from construct import (Bytes, Int8ul, Int32sl, Int64sl, Pass, Rebuild, Struct, Switch, Terminated, len_, this)
    from ._common import StrictEnum

    #: ADDX-style item block (``QItem.pack`` after the opcode and optional xid).
    item_block = Struct(
        "size" / Rebuild(Int32sl, len_(this.data) + ITEM_BLOCK_MIN),  # counts everything after itself
        "add_time" / Int64sl,     # ms since epoch
        "expiry" / Int64sl,       # ms since epoch, 0 = never, negative = already expired
        "data" / Bytes(this.size - ITEM_BLOCK_MIN),
    )

    #: legacy ADD (0) block (``unpackOldAdd``).
    legacy_block = Struct(
        "size" / Rebuild(Int32sl, len_(this.data) + LEGACY_BLOCK_MIN),
        "expiry" / Int32sl,       # seconds since epoch, 0 = never
        "data" / Bytes(this.size - LEGACY_BLOCK_MIN),
    )

    #: SAVE_XID, UNREMOVE, CONFIRM_REMOVE, REMOVE_TENTATIVE_XID.
    xid_body = Struct("xid" / Int32sl)

    #: ADD_XID (7) and CONTINUE (8): xid, then an item block.
    xid_item_body = Struct(
        "xid" / Int32sl,
        "item" / item_block,
    )

    BODY_BY_OP = {
        Opcode.ADD: legacy_block,
        Opcode.REMOVE: Pass,
        Opcode.ADDX: item_block,
        Opcode.REMOVE_TENTATIVE: Pass,
        Opcode.SAVE_XID: xid_body,
        Opcode.UNREMOVE: xid_body,
        Opcode.CONFIRM_REMOVE: xid_body,
        Opcode.ADD_XID: xid_item_body,
        Opcode.CONTINUE: xid_item_body,
        Opcode.REMOVE_TENTATIVE_XID: xid_body,
    }

    #: One journal record. ``journal_op.parse`` of exactly one record's bytes (``Terminated`` refuses extra bytes).
    journal_op = Struct(
        "opcode" / StrictEnum(Int8ul, Opcode),
        "body" / Switch(this.opcode, BODY_BY_OP),
        Terminated,
    )

    return locals()


DECLARED = ("item_block", "legacy_block", "xid_body", "xid_item_body", "BODY_BY_OP", "journal_op")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
