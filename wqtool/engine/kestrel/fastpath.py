"""The hot codec for Kestrel journal records: hand-written, proven equal to ``wqtool.formats.kestrel.journal_op``.

``tests/kestrel/test_fastpath.py`` builds random operations with hypothesis and checks both directions against
the construct schema (same values, same bytes, same accept/refuse decision on random byte strings).

``decode_op`` never allocates from an unchecked size: every block size is checked for sign, against the bytes
that remain and against ``SIZE_CAP`` before anything is sliced. Damage is classified the way Kestrel 2.x's
``readJournalEntry`` meets it (allocation first, then the read, then ``unpack``'s length check).
"""
from __future__ import annotations

import struct

from ...formats.kestrel import (ADD_XID_OVERHEAD, ADDX_OVERHEAD, INT32_MAX, INT32_MIN, ITEM_BLOCK_MIN,
                                LEGACY_BLOCK_MIN, SIZE_CAP, Opcode)
from .model import Op

_I32 = struct.Struct("<i")
_II = struct.Struct("<ii")            # ADD: size, expiry_s
_IQQ = struct.Struct("<iqq")          # ADDX: size, add_ms, expiry_ms
_IIQQ = struct.Struct("<iiqq")        # ADD_XID / CONTINUE: xid, size, add_ms, expiry_ms
_BI = struct.Struct("<Bi")
_OPS = tuple(Opcode(i) for i in range(10))

ADD, REMOVE, ADDX, REMOVE_TENTATIVE, SAVE_XID, UNREMOVE, CONFIRM_REMOVE, ADD_XID, CONTINUE, RT_XID = _OPS

# damage codes (see kestrel/codes.py)
TRUNCATED = "KQ-TRUNCATED"
BAD_OPCODE = "KQ-BAD-OPCODE"
SHORT_BLOCK = "KQ-SHORT-BLOCK"
SIZE_NEGATIVE = "KQ-SIZE-NEGATIVE"
SIZE_ABSURD = "KQ-SIZE-ABSURD"


class Damage(Exception):
    """Framing damage at a record start: ``code`` (a KQ- code), ``message``, and the block ``size`` if read."""

    def __init__(self, code: str, message: str, size: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.size = size


def _block(size: int, rem: int, minimum: int, what: str) -> None:
    """Kestrel's order: allocation (negative / huge), then the read (EOF), then unpack's length check."""
    if size < 0:
        raise Damage(SIZE_NEGATIVE, f"{what} block size {size} is negative (Kestrel: NegativeArraySizeException "
                     "escapes replay and the server exits)", size)
    if size > rem:
        if size > SIZE_CAP:
            raise Damage(SIZE_ABSURD, f"{what} block size {size} is absurd: beyond the {rem} bytes left and the "
                         f"{SIZE_CAP}-byte sanity cap (Kestrel: OutOfMemoryError); nothing allocated", size)
        raise Damage(TRUNCATED, f"record cut short: {what} block of {size} bytes, {rem} left", size)
    if size < minimum:
        raise Damage(SHORT_BLOCK, f"{what} block of {size} bytes is shorter than {minimum} "
                     f"(Kestrel 2.1.1+: 'Data unexpectedly short')", size)


def decode_fields(b, pos: int, end: int) -> tuple:
    """Decode the record at ``b[pos:end]`` into ``(opcode, xid, add_time, expiry, data, next_pos)`` or raise
    ``Damage``. ``b`` is bytes, bytearray, mmap or memoryview; ``pos < end`` is the caller's loop condition."""
    c = b[pos]
    if c > 9:
        signed = c - 256 if c >= 128 else c
        raise Damage(BAD_OPCODE, f"invalid opcode in journal: {signed} at position {pos}")
    op = _OPS[c]
    rem = end - pos
    if c == 1 or c == 3:
        return op, None, None, None, None, pos + 1
    if c == 2:
        if rem < 5:
            raise Damage(TRUNCATED, f"record cut short: {rem} bytes left, ADDX needs at least 5")
        size = _I32.unpack_from(b, pos + 1)[0]
        _block(size, rem - ADDX_OVERHEAD, ITEM_BLOCK_MIN, "ADDX")
        _, add_time, expiry = _IQQ.unpack_from(b, pos + 1)
        s = pos + 21
        e = pos + ADDX_OVERHEAD + size
        return op, None, add_time, expiry, bytes(b[s:e]), e
    if c == 7 or c == 8:
        if rem < 9:
            raise Damage(TRUNCATED, f"record cut short: {rem} bytes left, {op.name} needs at least 9")
        xid, size = _II.unpack_from(b, pos + 1)
        _block(size, rem - ADD_XID_OVERHEAD, ITEM_BLOCK_MIN, op.name)
        _, _, add_time, expiry = _IIQQ.unpack_from(b, pos + 1)
        s = pos + 25
        e = pos + ADD_XID_OVERHEAD + size
        return op, xid, add_time, expiry, bytes(b[s:e]), e
    if c == 0:
        if rem < 5:
            raise Damage(TRUNCATED, f"record cut short: {rem} bytes left, ADD needs at least 5")
        size = _I32.unpack_from(b, pos + 1)[0]
        _block(size, rem - ADDX_OVERHEAD, LEGACY_BLOCK_MIN, "ADD")
        expiry = _I32.unpack_from(b, pos + 5)[0]
        e = pos + ADDX_OVERHEAD + size
        return op, None, None, expiry, bytes(b[pos + 9:e]), e
    # 4, 5, 6, 9: i32 xid
    if rem < 5:
        raise Damage(TRUNCATED, f"record cut short: {rem} bytes left, {op.name} needs 5")
    return op, _I32.unpack_from(b, pos + 1)[0], None, None, None, pos + 5


def decode_op(b, pos: int, end: int) -> tuple[Op, int]:
    """Decode the record at ``b[pos:end]``; returns ``(op, next_pos)`` or raises ``Damage``."""
    op, xid, add_time, expiry, data, nxt = decode_fields(b, pos, end)
    return Op(op, xid, add_time, expiry, data), nxt


def record_length(b, pos: int, end: int) -> int:
    """Length of the record at ``pos`` (framing only, no data copy); raises ``Damage`` like ``decode_op``."""
    c = b[pos]
    if c == 1 or c == 3:
        return 1
    if c > 9:
        signed = c - 256 if c >= 128 else c
        raise Damage(BAD_OPCODE, f"invalid opcode in journal: {signed} at position {pos}")
    rem = end - pos
    if c == 2 or c == 0:
        if rem < 5:
            raise Damage(TRUNCATED, f"record cut short: {rem} bytes left")
        size = _I32.unpack_from(b, pos + 1)[0]
        _block(size, rem - 5, ITEM_BLOCK_MIN if c == 2 else LEGACY_BLOCK_MIN, _OPS[c].name)
        return 5 + size
    if c == 7 or c == 8:
        if rem < 9:
            raise Damage(TRUNCATED, f"record cut short: {rem} bytes left")
        size = _I32.unpack_from(b, pos + 5)[0]
        _block(size, rem - 9, ITEM_BLOCK_MIN, _OPS[c].name)
        return 9 + size
    if rem < 5:
        raise Damage(TRUNCATED, f"record cut short: {rem} bytes left")
    return 5


# ---------------------------------------------------------------- encoding (QItem.pack / Journal writers)
def _check_i32(v: int, name: str) -> int:
    if not INT32_MIN <= v <= INT32_MAX:
        raise ValueError(f"{name} {v} outside int32")
    return v


def encode_addx(data: bytes, add_time: int, expiry: int = 0) -> bytes:
    """ADDX: ``02 | i32 16+len | i64 add_ms | i64 expiry_ms | data`` (21 + len bytes)."""
    return _IQQ.pack(_check_i32(len(data) + ITEM_BLOCK_MIN, "size"), add_time, expiry).join((b"\x02", data))


def encode_xid_item(op: int, xid: int, data: bytes, add_time: int, expiry: int = 0) -> bytes:
    """ADD_XID (7) or CONTINUE (8): ``op | i32 xid | i32 16+len | i64 add_ms | i64 expiry_ms | data``."""
    return bytes((op,)) + _IIQQ.pack(_check_i32(xid, "xid"), _check_i32(len(data) + ITEM_BLOCK_MIN, "size"),
                                     add_time, expiry) + data


def encode_legacy_add(data: bytes, expiry_s: int = 0) -> bytes:
    """Legacy ADD (0): ``00 | i32 4+len | i32 expiry_s | data``."""
    return b"\x00" + _II.pack(_check_i32(len(data) + LEGACY_BLOCK_MIN, "size"), _check_i32(expiry_s, "expiry")) + data


def encode_xid_op(op: int, xid: int) -> bytes:
    """SAVE_XID, UNREMOVE, CONFIRM_REMOVE, REMOVE_TENTATIVE_XID: ``op | i32 xid``."""
    return _BI.pack(op, _check_i32(xid, "xid"))


REMOVE_BYTES = b"\x01"
REMOVE_TENTATIVE_BYTES = b"\x03"


def encode_op(o: Op) -> bytes:
    """Build one record's bytes exactly as ``formats.kestrel.journal_op.build`` does."""
    c = int(Opcode(o.op))
    if c == 2:
        return encode_addx(o.data, o.add_time, o.expiry)
    if c == 1:
        return REMOVE_BYTES
    if c == 3:
        return REMOVE_TENTATIVE_BYTES
    if c == 7 or c == 8:
        return encode_xid_item(c, o.xid, o.data, o.add_time, o.expiry)
    if c == 0:
        return encode_legacy_add(o.data, o.expiry)
    return encode_xid_op(c, o.xid)
