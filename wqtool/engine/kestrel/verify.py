"""verify / replay for Kestrel file sets: the reader and the state machine, findings collected as data.

Same exit-code table as workq (``wqtool.exitcodes``): a torn final record or junk at the end of the live file
= 1; damage followed by valid data, damage in a rotated file, negative or absurd sizes = 3; history Kestrel
cannot represent (an open xid reused) = 4; oddities it tolerates (removes on an empty queue, unknown xids,
stray files) are warnings.
"""
from __future__ import annotations

from typing import Sequence

from ..findings import NOTE, Finding
from ..verify import FindingSink, LogReport, VerifyReport
from .model import Record
from .reader import FileSet, JournalReader
from .replay import KestrelReplay

NO_CHECKSUM = Finding(NOTE, "KQ-NO-CHECKSUM", "Kestrel journals carry no checksum: only framing damage "
                      "(truncation, bad opcodes, bad block sizes) is detectable; flipped bits inside item data "
                      "or times go unnoticed")


def run_log(fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
            on_record=None, kestrel_version: str | None = None, resync: bool = True) -> LogReport:
    """Read one file set through the reader and the replay state machine; the core of verify, replay and pack.

    Returns a ``wqtool.engine.verify.LogReport`` whose ``state`` is a ``KestrelState`` (``.digest()``,
    ``.sorted_items()``, ``.queue``, ``.open``). ``on_record(record)`` is called after each record is applied.
    """
    report = LogReport(root=fileset.live_path if fileset.is_dir else fileset.root)
    sink = FindingSink(report, limit)
    reader = JournalReader(fileset, resync=resync)
    replay = KestrelReplay(as_of_ns, version=kestrel_version or fileset.kestrel_version)
    rfind = replay.findings
    apply = replay.apply
    for ev in reader.events():
        if ev.__class__ is Record:
            apply(ev)
            if rfind:
                for f in rfind:
                    sink.add(f)
                rfind.clear()
            if on_record is not None:
                on_record(ev)
        else:
            sink.add(ev)
    state = replay.finish(keep_open=keep_open)
    for f in rfind:
        sink.add(f)
    rfind.clear()
    sink.add(NO_CHECKSUM)
    sink.close()
    report.segments = reader.segments_read
    report.records = reader.records
    report.bytes = reader.bytes
    report.state = state
    return report


def verify(filesets: Sequence[FileSet], as_of_ns: int, *, max_findings: int | None = None,
           keep_open: bool = False) -> VerifyReport:
    return VerifyReport([run_log(fs, as_of_ns, limit=max_findings, keep_open=keep_open) for fs in filesets])
