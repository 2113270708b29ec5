"""repair for Kestrel queues: a journal set Kestrel starts on and replays in full, without losing a readable record.

Kestrel itself truncates a torn live file at start-up ("DATA MAY HAVE BEEN LOST!") and stops reading any file at
the first damaged record — in a rotated file it even truncates the *live* file by mistake (spec §8). The plan reads
the queue's files in replay order with the engine's reader (which resynchronises on a plausible chain of valid
opcodes after damage) and cuts:

* the torn tail of the live file (no flag);
* with ``salvage``: every damaged range ``[offset, resumes_at)`` anywhere (negative / absurd sizes included);
* with ``drop_invalid``: the records that reuse an open xid (KQ-XID-REUSED: the earlier open item would be lost);
* with ``truncate_to_ms``: everything from the first item added after T (Kestrel stores no time on other records).

The repaired journal holds every kept record byte for byte, in replay order, in one file, installed as a pack is
(``pack.KestrelInstall``; the replaced files linked into a backup directory first). Every cut byte goes to the
quarantine.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from ...formats._common import format_unix_ns
from ..findings import ERROR, Finding, Verdict, worst
from ..fsops import FileSig, free_dir, range_chunks, same_file
from ..plan import (Cut, KeptRanges, StepRunner, capped, quarantine_step, read_cuts, refusal, repair_doc, replay_pass,
                    stamp, timed)
from ..run import LogReport
from .pack import KestrelInstall, replay_digest
from .model import Record
from .reader import FileSet, JournalReader, read_damaged_items, whole_queue
from .codes import KESTREL_REPLAY_CODES
from .replay import NS_PER_MS, KestrelReplay, KestrelState

_WHY = {Verdict.CORRUPT: "the journal has corruption: --salvage repairs it",
        Verdict.INVALID_HISTORY: "the journal reuses an open xid: --drop-invalid removes those records (the items "
                                 "they would lose stay queued)"}


@dataclass(slots=True)
class KestrelRepairPlan(KestrelInstall):
    kind: ClassVar[str] = "repair"
    verify_version: str = "auto"

    fileset: FileSet = None
    as_of_ns: int = 0
    input_verdict: Verdict = Verdict.CLEAN
    cuts: list[Cut] = field(default_factory=list)
    kept: list[tuple[str, int, int]] = field(default_factory=list)     # (path, offset, length) in replay order
    digest_before: str = ""
    digest_expected: str = ""
    state: KestrelState | None = None            # what the repaired journal replays to (keep_open)
    state_before: KestrelState | None = None     # what the input replays to (keep_open)
    items_changed: list[dict] = field(default_factory=list)   # [{id, before, after}] (id: where it was added)
    findings: list[Finding] = field(default_factory=list)
    inputs: list[tuple[str, int]] = field(default_factory=list)
    live_sig: FileSig | None = None
    records_before: int = 0
    bytes_before: int = 0
    report: LogReport | None = None
    items_lost: list[str] = field(default_factory=list)   # <file>@0x<offset> of each item add readable in cut bytes
    lost_unread: dict = field(default_factory=lambda: {"ranges": 0, "bytes": 0})   # cut bytes nothing reads in

    @property
    def nothing_to_do(self) -> bool:
        return not self.cuts

    @property
    def records_after(self) -> int:
        return len(self.kept)

    def content_chunks(self):
        """The repaired journal: every kept record, byte for byte, in replay order."""
        return range_chunks(self.kept, advance=False)

    def report_doc(self) -> dict:
        ranges = KeptRanges()
        for path, off, ln in self.kept:
            ranges.add(path, off, ln)
        cut_files = {c.path for c in self.cuts}
        return repair_doc(
            self, {"format": "kestrel", "root": self.fileset.root, "queue": self.fileset.queue},
            "the journal is clean: Kestrel replays all of it",
            {"files": len(self.inputs), "bytes": self.bytes_before, "records": self.records_before},
            # a repair installs one journal file (the live one, empty when nothing was kept)
            {"files": len(self.inputs) if self.nothing_to_do else 1, "bytes": sum(ln for _, _, ln in self.kept),
             "records": len(self.kept)},
            [{"file": p, "action": "replace", "bytes_before": s} for p, s in self.inputs] if self.cuts else [],
            sum(1 for p, _ in self.inputs if p not in cut_files) if self.cuts else 0,
            # as `wqtool replay` prints them (the plan itself compares the open states, which is stricter)
            (replay_digest(self.state_before), replay_digest(self.state)),
            ranges, {"items_lost": len(self.items_lost), "items_lost_at": self.items_lost,
                     "items_lost_unread": dict(self.lost_unread), "jobs_changed": self.items_changed})

    def write_copy(self, d: str, fsync: bool) -> tuple:
        """repair --apply --out: the repaired journal as ``<d>/<queue>``, re-verified (the input is not touched)."""
        r = self.write_file(os.path.join(d, self.fileset.queue), fsync=fsync)
        return [r.path], r.bytes, r.records, r.digest

    def steps(self, step: StepRunner, ctx: dict, *, quarantine: str | None = None, keep_backup: bool = True,
              **kw) -> None:
        """The cut bytes quarantined, the replaced files linked into the backup directory, then the repaired journal
        installed the way a pack is installed."""
        bdir, qdef = default_dirs(self)
        quarantine_step(self, step, ctx, quarantine, qdef, kw.get("fsync", True))
        ctx["backup"] = _backup_dir(self, bdir) if keep_backup else None
        KestrelInstall.steps(self, step, ctx, **kw)


@timed
def repair_plan(fileset: FileSet, as_of_ns: int, *, salvage: bool = False, drop_invalid: bool = False,
                truncate_to_ns: int | None = None, kestrel_version: str | None = None) -> KestrelRepairPlan:
    fileset = whole_queue(fileset, "repair")   # a file named alone: its queue, when it is all of it
    version = kestrel_version or fileset.kestrel_version
    live_sig = FileSig.of(fileset.live_path)
    before, after = KestrelReplay(as_of_ns, version=version), KestrelReplay(as_of_ns, version=version)
    sizes = {f.path: os.path.getsize(f.path) for f in fileset.files}
    errors: dict[Verdict, list[Finding]] = {Verdict.TORN_TAIL: [], Verdict.CORRUPT: [], Verdict.INVALID_HISTORY: []}
    t_ms = None if truncate_to_ns is None else truncate_to_ns // NS_PER_MS
    records, kept, cut, cut_from = replay_pass(
        JournalReader(fileset).events(), Record, before, after, keep_refused=not drop_invalid, files=sizes,
        past=lambda ev: t_ms is not None and ev.add_time is not None and ev.add_time > t_ms)
    cuts: list[Cut] = []
    for x in cut:
        if x.__class__ is Finding:         # damage
            _damage(x, sizes, errors, cuts)
            continue
        ev, fs = x                         # a refused record: cut with --drop-invalid, else kept (and refused)
        errors[Verdict.INVALID_HISTORY] += fs
        if drop_invalid:
            cuts.append(Cut(ev.path, ev.offset, ev.length, "refused-record", fs[0].code, fs[0].message))
    refusal(errors, salvage=salvage, drop_invalid=drop_invalid, why=_WHY)
    if cut_from is not None:
        path, off = cut_from
        later = False
        for jf in fileset.files:
            if jf.path == path:
                cuts.append(Cut(path, off, sizes[path] - off, "after-time", None,
                                f"items added after {format_unix_ns(truncate_to_ns)} and all that follows"))
                later = True
            elif later and sizes[jf.path]:
                cuts.append(Cut(jf.path, 0, sizes[jf.path], "after-time", None,
                                f"written after {format_unix_ns(truncate_to_ns)}"))
    s_before = before.finish(keep_open=True)
    s_after = after.finish(keep_open=True)
    verdict = worst(v for v, fs in errors.items() if fs)
    plan = KestrelRepairPlan(verify_version=version, fileset=fileset, as_of_ns=as_of_ns, input_verdict=verdict,
                             cuts=cuts, kept=kept, digest_before=s_before.digest(), digest_expected=s_after.digest(),
                             state=s_after, state_before=s_before, findings=[f for fs in errors.values() for f in fs],
                             inputs=[(f.path, sizes[f.path]) for f in fileset.files], live_sig=live_sig
                             if live_sig.ino is not None else None, records_before=records,
                             bytes_before=sum(sizes.values()))
    plan.items_changed = items_changed(s_before, s_after)
    plan.items_lost, plan.lost_unread = _items_lost(cuts)
    return plan


def _damage(f: Finding, sizes: dict[str, int], errors: dict, cuts: list[Cut]) -> None:
    """A reader's error finding: counted under its verdict, its bytes cut (to where valid records resume, or the
    file's end)."""
    errors.setdefault(f.verdict, []).append(f)
    end = f.resumes_at if f.resumes_at is not None else sizes[f.path]
    cuts.append(Cut(f.path, f.offset, end - f.offset,
                    "torn-tail" if f.verdict == Verdict.TORN_TAIL else "unreadable", f.code, f.message))


def repair_loss(fileset: FileSet, findings: list[Finding], *, salvage: bool, drop_invalid: bool) -> dict:
    """What ``repair_plan(fileset, ...)`` (no ``truncate_to_ns``) states of the items it would lose, from every error
    finding of a pass already made over the same bytes (``report``'s: its kernel pass; ``findings`` in stream
    order): the same refusal, and the same damage cuts (the reader's errors; the replay's are refused records,
    which lose no item) read for the items they hold — no record is read or replayed again."""
    sizes = {f.path: os.path.getsize(f.path) for f in fileset.files}
    errors: dict[Verdict, list[Finding]] = {Verdict.TORN_TAIL: [], Verdict.CORRUPT: [], Verdict.INVALID_HISTORY: []}
    cuts: list[Cut] = []
    for f in findings:
        if f.severity != ERROR:
            continue
        if f.code in KESTREL_REPLAY_CODES:
            errors[Verdict.INVALID_HISTORY].append(f)
            continue
        if f.path in sizes:
            _damage(f, sizes, errors, cuts)
    refusal(errors, salvage=salvage, drop_invalid=drop_invalid, why=_WHY)
    lost, unread = _items_lost(cuts)
    return capped({"items_lost": len(lost), "items_lost_unread": unread}, "items_lost_at", lost)


def _items_lost(cuts: list[Cut]) -> tuple[list[str], dict]:
    """The items a repair loses: every item add that decodes whole in a cut damaged range (``damaged_items``),
    as ``<file>@0x<offset>``; and the cut ranges / bytes in which nothing could be read."""
    read, unread = read_cuts(cuts, read_damaged_items)
    return [f"{os.path.basename(c.path)}@0x{o:x}" for c, offs in read for o in offs], unread


def _where(state: KestrelState) -> dict[tuple, str]:
    """Each item by where its add record lies (its identity across two replays of the same bytes) -> its state."""
    out = {}
    for i, it in enumerate(state.queue):
        out[(it.path, it.offset, it.add_time, it.data)] = f"queued #{i}"
    for x, it in state.open.items():
        out[(it.path, it.offset, it.add_time, it.data)] = f"open xid {x}"
    return out


def items_changed(a: KestrelState, b: KestrelState) -> list[dict]:
    """Items whose state differs between two replays: [{id, before, after}] — the id is where the item was added
    (``<file>@0x<offset>``, as dump shows it); a state is "queued #<position>", "open xid <n>" or "absent"."""
    wa, wb = _where(a), _where(b)
    out = []
    for key in list(wa) + [k for k in wb if k not in wa]:
        sa, sb = wa.get(key, "absent"), wb.get(key, "absent")
        if sa.split(" #")[0] != sb.split(" #")[0]:      # a new position in the queue is no change of state
            path, off = key[0], key[1]
            out.append({"at": f"{os.path.basename(path or '?')}@0x{off or 0:x}", "before": sa, "after": sb})
    return out


def default_dirs(plan: KestrelRepairPlan) -> tuple[str, str]:
    d, t = os.path.abspath(plan.fileset.root), stamp(plan.as_of_ns)
    return f"{d}.pre-repair-{plan.fileset.queue}-{t}", f"{d}.quarantine-{plan.fileset.queue}-{t}"


def _backup_dir(plan: KestrelRepairPlan, bdir: str) -> str:
    """The backup directory: the default name, or the next free one, unless it holds only links (or copies) of
    this queue's current files under their own names (an earlier run of the same repair died after its backup
    step: reused)."""
    fs = plan.fileset
    wanted = {os.path.basename(p): p for p in [f.path for f in fs.files] + list(fs.superseded)}
    return free_dir(bdir, lambda name, f: name in wanted and same_file(f, wanted[name]))
