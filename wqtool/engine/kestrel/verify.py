"""verify / replay for Kestrel file sets: the reader and the state machine, findings collected as data.

The same verdicts as every format: a torn final record or junk at the end of the live file is a torn tail;
damage followed by valid data, damage in a rotated file, negative or absurd sizes are corrupt; history Kestrel
cannot represent (an open xid reused) is invalid history; oddities it tolerates (removes on an empty queue, unknown xids,
stray files) are warnings.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..findings import NOTE, Finding
from ..run import LogReport, ReplayPass, VerifyReport
from .codes import KESTREL_REPLAY_CODES
from .fastreplay import Bail, fast_run
from .model import Record
from .reader import FileSet, JournalReader
from .replay import KestrelReplay

NO_CHECKSUM = Finding(NOTE, "KQ-NO-CHECKSUM", "Kestrel journals carry no checksum: only framing damage "
                      "(truncation, bad opcodes, bad block sizes) is detectable; flipped bits inside item data "
                      "or times go unnoticed")


class KestrelRun(ReplayPass):
    """One pass over one file set (``ReplayPass``); the closing findings are the replay's notes, then
    KQ-NO-CHECKSUM. ``limit=0`` keeps no finding in the report: a stream."""

    record_cls = Record

    def __init__(self, fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
                 kestrel_version: str | None = None, resync: bool = True):
        super().__init__(fileset.label, JournalReader(fileset, resync=resync),
                         KestrelReplay(as_of_ns, version=kestrel_version or fileset.kestrel_version), limit)
        self.keep_open = keep_open

    def finish(self):
        state = self.replay.finish(keep_open=self.keep_open)
        closing = [*self.replay.findings, NO_CHECKSUM]
        self.replay.findings.clear()
        return state, closing


def run_log(fileset: FileSet, as_of_ns: int, *, limit: int | None = None, keep_open: bool = False,
            on_record=None, kestrel_version: str | None = None, resync: bool = True) -> LogReport:
    """Read one file set through the reader and the replay state machine; the core of verify, replay and pack.

    Returns a ``wqtool.engine.verify.LogReport`` whose ``state`` is a ``KestrelState`` (``.digest()``,
    ``.sorted_items()``, ``.queue``, ``.open``). ``on_record(record)`` is called after each record is applied.
    Without ``on_record`` the journal goes through the fused fast path (fastreplay.py: C, through damage), with
    the same result.
    """
    if on_record is None:
        try:
            return fast_run(fileset, as_of_ns, limit=limit, keep_open=keep_open, kestrel_version=kestrel_version,
                            no_checksum=NO_CHECKSUM, resync=resync)
        except Bail:
            pass
    run = KestrelRun(fileset, as_of_ns, limit=limit, keep_open=keep_open, kestrel_version=kestrel_version,
                     resync=resync)
    if on_record is None:
        for _ in run.events():
            pass
    else:
        for ev in run.events():
            if ev.__class__ is Record:
                on_record(ev)
    return run.report


def replay_findings(fileset: FileSet, as_of_ns: int, *, keep_open: bool = False) -> Iterator[Finding]:
    """The findings of ``run_log(fileset)`` that only the queue's replay raises (``KESTREL_REPLAY_CODES``), in
    its order, streamed (no finding is kept); the rest are what the reader of one journal file reports."""
    for ev in KestrelRun(fileset, as_of_ns, limit=0, keep_open=keep_open).events():
        if ev.__class__ is not Record and ev.code in KESTREL_REPLAY_CODES:
            yield ev


def verify(filesets: Sequence[FileSet], as_of_ns: int, *, max_findings: int | None = None,
           keep_open: bool = False) -> VerifyReport:
    return VerifyReport([run_log(fs, as_of_ns, limit=max_findings, keep_open=keep_open) for fs in filesets])
