"""The fastjournal byte layouts the hot paths use, once: ``struct`` twins of the construct schemas in
``wqtool.formats.fastjournal`` (``fjj_segment_header``, ``fjj_record``, ``fifo_value``, a short ``fj_request`` SET), proven
equal to them by tests/engine/fastjournal/test_layout.py. The reader, the writer and the client share them."""
from __future__ import annotations

import struct

SEGMENT_HEAD = struct.Struct(">4sHHI")          # magic, version, flags, sequence — its CRC-32C follows
SEGMENT_HEAD_CRC = struct.Struct(">4sHHII")     # the same with the CRC: the whole 16-byte header
RECORD_HEAD = struct.Struct(">IQ")              # size (applied_at + request), applied_at
CRC = struct.Struct(">I")
FIFO_VALUE = struct.Struct(">BQ")               # priority, key_start_date
SET_SHORT_HEAD = struct.Struct(">2sHHHHQB")     # an FJ SET request with a u8 key size ...
SET_FIFO_VALUE = struct.Struct(">BBBQ")         # ... and its u8 value size, value type, then the FIFO value


def fifo_value(priority: int, key_start_date: int) -> bytes:
    return FIFO_VALUE.pack(priority, key_start_date)


def parse_fifo_value(value: bytes) -> tuple[int, int]:
    return FIFO_VALUE.unpack(value)
