"""pack of an EVTJ journal: prinbee's own compression, done offline — each loaded file keeps exactly the events
its loader indexes (READY, FORWARDED, ACKNOWLEDGED), byte for byte and in order; COMPLETED and FAILED events, the
bytes after a ``00 00`` end marker and a torn tail go. The live events (the replay digest) are unchanged.

``apply`` is the template's per-file rewrite (``plan.rewrite_file``), each check refusing while a process holds a
file of the journal open (prinbee keeps offsets of its events: it must be stopped). The loader never reads the temp
``.journal-N.events.wqtool-pack`` (``EVTJ-FOREIGN-FILE``); the next run removes it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import InputError, UsageError
from ...formats.evtj import COUNTERS_FILE, JOURNAL_CONF
from ..findings import ERROR, Verdict
from ..fsops import range_chunks, unlink_quiet, write_new
from ..live import refuse_holders
from ..plan import (ApplyResult, Plan, StepRunner, WriteResult, pack_doc, pack_refusal, prove, rewrite_file,
                    timed)
from ..run import LogReport
from .fastpath import encode_file_header
from .model import Event, EventsFile, EvtjJournal
from .replay import LIVE
from .verify import EvtjRun

TEMP_SUFFIX = ".wqtool-pack"


def temp_name(path: str) -> str:
    return os.path.join(os.path.dirname(path) or ".", "." + os.path.basename(path) + TEMP_SUFFIX)


def _run(journal: EvtjJournal) -> tuple[LogReport, dict[str, list[Event]]]:
    run = EvtjRun(journal)
    per_file: dict[str, list[Event]] = {f.path: [] for f in journal.files}
    for ev in run.events():
        if ev.__class__ is Event:
            per_file[ev.path].append(ev)
    return run.report, per_file


def compacted(path: str, events: list[Event], byteorder: str) -> bytes:
    """The file's header and its live events, byte for byte."""
    with open(path, "rb") as f:
        data = f.read()
    return encode_file_header(byteorder) + b"".join(data[e.offset:e.offset + e.length] for e in events
                                                    if e.status in LIVE)


@dataclass(slots=True)
class EvtjPackPlan(Plan):
    kind: ClassVar[str] = "pack"

    journal: EvtjJournal
    as_of_ns: int
    report: LogReport
    events: dict[str, list[Event]]
    sizes: dict[str, int]
    digest: str
    dropped: list[str] = field(default_factory=list)

    @property
    def input_verdict(self) -> Verdict:
        return self.report.verdict

    def _after(self) -> tuple[int, int]:
        live = [e for evs in self.events.values() for e in evs if e.status in LIVE]
        return len(live), 8 * len(self.events) + sum(e.length for e in live)

    def report_doc(self) -> dict:
        recs, size = self._after()
        return pack_doc(self, {"format": "evtj", "root": self.journal.root, "queue": None},
                        {"records": self.report.records, "bytes": sum(self.sizes.values()), "files": len(self.sizes)},
                        {"records": recs, "bytes": size, "files": len(self.sizes)}, self.dropped, self.digest,
                        {"rewrite": list(self.sizes)}, self.digest)

    def write_copy(self, out: str, fsync: bool) -> tuple:
        """The compacted files, journal.conf, counters.seq and the live events' attachments."""
        j = self.journal
        written, total, files = [], 0, []
        for f in j.files:
            p = os.path.join(out, os.path.basename(f.path))
            total += write_new(p, [compacted(f.path, self.events[f.path], j.byteorder)], fsync=fsync)
            written.append(p)
            files.append(EventsFile(p, f.number))
        ids = {i for evs in self.events.values() for e in evs if e.status in LIVE for i in e.external_ids}
        for name in [JOURNAL_CONF, COUNTERS_FILE] + [f"{i}.bin" for i in sorted(ids & j.attachments)]:
            src = os.path.join(j.root, name)
            if os.path.exists(src):     # copied through the same checked, fsynced write as the events files
                written.append(os.path.join(out, name))
                write_new(written[-1], range_chunks([(src, 0, os.path.getsize(src))], advance=False), fsync=fsync)
        return written, total, self._after()[0], _verify(self, out, files, j.conf)

    def apply(self, **kw) -> ApplyResult:
        if not self.journal.is_dir:
            raise UsageError("--apply needs the journal directory", path=self.journal.root)
        return Plan.apply(self, **kw)    # each file's check: step refuses while prinbee holds one open

    def steps(self, step: StepRunner, ctx: dict, **_kw) -> None:
        j = self.journal
        recs, size = self._after()
        ctx.update(path=j.root, bytes_before=sum(self.sizes.values()), removed=[], recovered=[],
                   result=WriteResult(j.root, [], size, recs, self.digest, 0.0))
        for f in j.files:
            temp = temp_name(f.path)

            def check(f=f, temp=temp):
                _refuse_holders(self)
                if os.path.getsize(f.path) != self.sizes[f.path]:
                    raise InputError("the file changed since the plan was made (is prinbee running?); plan again",
                                     path=f.path)
                if os.path.lexists(temp):   # an earlier pack --apply died after writing it: never read, replaced
                    unlink_quiet(temp)
                    ctx["recovered"].append(f"removed {os.path.basename(temp)} (an unfinished "
                                                           "pack's temp)")

            def verify(f=f, temp=temp):
                jj = EvtjJournal(root=j.root, files=[EventsFile(temp, f.number)], as_of_ns=self.as_of_ns,
                                 byteorder=j.byteorder, is_dir=False, attachments=set(j.attachments))
                rep, per = _run(jj)
                want = [(e.request_id, e.status, e.time_ns) for e in self.events[f.path] if e.status in LIVE]
                got = [(e.request_id, e.status, e.time_ns) for e in per[temp]]
                prove("the packed file does not load to the same live events", "", "", path=temp,
                      ok=rep.verdict != Verdict.CORRUPT and got == want)

            rewrite_file(step, f.path, temp, lambda f=f: compacted(f.path, self.events[f.path], j.byteorder), check,
                         verify=verify)
            ctx["result"].files.append(f.path)


@timed
def pack_plan(journal: EvtjJournal, *, salvage: bool = False) -> EvtjPackPlan:
    report, per_file = _run(journal)
    pack_refusal(report, salvage, ("corruption", "a history the loader refuses"),
                 "--salvage packs what the loader loads and lists what is dropped")
    errors = [f for f in report.findings if f.severity == ERROR]
    dropped = [f"{os.path.basename(f.path)}@0x{f.offset:x}: {f.code}: the bytes from here (never loaded)"
               for f in errors if f.path and f.offset is not None]
    done = sum(1 for evs in per_file.values() for e in evs if e.status not in LIVE)
    if done:
        dropped.append(f"{done} completed / failed event(s) (the loader skips them)")
    dropped += [f"{os.path.basename(f.path)}@0x{f.offset:x}: the end marker and what follows it"
                for f in report.findings if f.code == "EVTJ-END-MARKER"]
    sizes = {f.path: os.path.getsize(f.path) for f in journal.files}
    return EvtjPackPlan(journal, journal.as_of_ns, report, per_file, sizes, report.state.digest(), dropped)


def _verify(plan: EvtjPackPlan, root: str, files: list[EventsFile], conf: dict) -> str:
    j = EvtjJournal(root=root, files=files, as_of_ns=plan.as_of_ns, byteorder=plan.journal.byteorder, is_dir=False,
                    conf=conf, max_files=plan.journal.max_files, attachments=set(plan.journal.attachments))
    rep, _ = _run(j)
    return prove("the packed journal does not load to the same live events", plan.digest, rep.state.digest(),
                 path=root, verdict=rep.verdict)


def _refuse_holders(plan: EvtjPackPlan) -> None:
    refuse_holders([f.path for f in plan.journal.files], "prinbee", "pack --apply", plan.journal.root)
