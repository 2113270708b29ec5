"""Per-segment work of the workq fleet (``engine.workq.fleet``); runs on executors.

No pyspark here: plain functions over the engine, so the fleet's ``mapInArrow`` tasks call the very code the
local engine runs (``RecordReader``'s per-segment scanner, the fast codec). Record indexes are per log: a task
that reads one segment numbers from 0 and the driver adds the base afterwards.
"""
from __future__ import annotations

import os
import struct

from ...errors import InvalidPayload, UnknownOpcode
from ...formats._common import GoTime
from ..fileio import FileView
from .fastpath import decode_payload
from .model import Record
from .reader import LogSet, RecordReader, Segment

_TIME = struct.Struct(">BqiH")


def segment_scan(seg: Segment, start_index: int, is_newest: bool, *, decode: bool = True):
    """(bytes read, events) for one segment: ``segment_events`` plus the size the reader accounts for."""
    reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]), decode=decode)
    sd = FileView(seg)

    def events():
        with sd:
            yield from reader.segment_events(sd, start_index, is_newest)
    return sd.size, events()


def rebuild_record(path: str, offset: int, index: int, size: int, crc: int, body) -> Record:
    """The Record the reader builds, from the bytes it CRC-checked (TIME ‖ SIZE ‖ PAYLOAD, without the CRC).

    The fleet's first stage frames and CRC-checks each segment and ships ``body``; the second stage, which
    holds one job's records in log order, decodes the payload here exactly as ``RecordReader`` does.
    """
    _, sec, nsec, zone = _TIME.unpack_from(body, 0)
    n = len(body)
    rec = Record(path, offset, n + 4, index, GoTime(sec, nsec, zone - 0x10000 if zone >= 0x8000 else zone), size, crc)
    start = n - size
    try:
        rec.command = decode_payload(body, start, n)
    except (InvalidPayload, UnknownOpcode) as exc:
        rec.payload_error = exc
        rec.raw_payload = bytes(body[start:])
    return rec
