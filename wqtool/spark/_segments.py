"""Per-segment work shared by the data sources and the fleet jobs; runs on executors and in the planner.

No pyspark here: these are plain functions over the engine, so the data source's ``read()`` and the fleet's
``mapInArrow`` tasks call the very code the local engine runs (``RecordReader``'s per-segment scanner, the
fast codec, ``WorkqReplay``). Record indexes are per log: a task that reads one segment is told the index of
its first record (``start_index``), or numbers from 0 and the driver adds the base afterwards.
"""
from __future__ import annotations

import contextlib
import glob
import os
import struct
from typing import Iterator, Sequence

from ..engine.workq.fastpath import decode_payload
from ..engine.workq.model import Record
from ..engine.workq.reader import LogSet, RecordReader, Segment, FileView, discover
from ..errors import InputError, InvalidPayload, UnknownOpcode
from ..formats._common import GoTime

_TIME = struct.Struct(">BqiH")
_GLOB = set("*?[")


@contextlib.contextmanager
def working_dir(path: str | None):
    """Run with the driver's working directory, so relative PATHs mean what they meant to the caller and every
    path the engine prints (records, findings) is the string the caller gave, as with the local engine.

    Spark starts Python workers in a scratch directory; a task runs alone in its worker, so a temporary chdir is
    safe. On a cluster whose executors lack that directory, nothing changes (pass absolute paths there).
    """
    old = os.getcwd()
    if not path or path == old or not os.path.isdir(path):
        yield
        return
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Globs expand to their matches (sorted); a glob that matches nothing is an input error."""
    out: list[str] = []
    for p in paths:
        if _GLOB & set(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise InputError("no such file or directory (glob matched nothing)", path=p)
            out.extend(hits)
        else:
            out.append(p)
    return out


def plan_logs(paths: Sequence[str], *, horizon: bool = False) -> list[LogSet]:
    """The logs behind PATHs (directories, files, globs), segments in the order the engine reads them."""
    return discover(expand_paths(paths), horizon=horizon)


def segment_events(seg: Segment, start_index: int, is_newest: bool, *, decode: bool = True
                   ) -> Iterator[Record | object]:
    """The records and findings of one segment, in file order, exactly as ``RecordReader.events()`` yields
    them for this segment inside its log (``is_newest`` decides torn tail vs corruption)."""
    reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]), decode=decode)
    with FileView(seg) as sd:
        yield from reader.segment_events(sd, start_index, is_newest)


def segment_scan(seg: Segment, start_index: int, is_newest: bool, *, decode: bool = True):
    """(bytes read, events) for one segment: ``segment_events`` plus the size the reader accounts for."""
    reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]), decode=decode)
    sd = FileView(seg)

    def events():
        with sd:
            yield from reader.segment_events(sd, start_index, is_newest)
    return sd.size, events()


def count_records(seg: Segment, is_newest: bool) -> int:
    """How many records the engine reads from this segment (framing + CRC, payloads not decoded)."""
    n = 0
    for ev in segment_events(seg, 0, is_newest, decode=False):
        if ev.__class__ is Record:
            n += 1
    return n


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
