"""repair for workq command logs: a log workq-server 0.2.0 starts on, without losing a readable record.

The plan reads the log with the engine's reader (which resynchronises after damage on the next CRC-valid record)
and its replay, and decides what to cut:

* a torn tail (the newest segment ends inside a record, or with junk): truncate at the last good offset; a 0-byte
  or short-header newest segment is removed (upstream creates the next segment itself);
* with ``salvage``: every damaged range (``[offset, resumes_at)``), a bad header of a middle segment (the segment is
  re-headed: its records are intact), an empty or short middle segment (removed);
* with ``drop_invalid``: exactly the records the server refuses (duplicate add, start-attempt on a processed job,
  undecodable payloads, ...), each listed;
* with ``truncate_to_ns``: every record from the first one written after T (point-in-time rollback).

Without the flag a class of damage needs, the plan is refused (``plan.refusal``). Nothing is ever invented; every
cut byte goes to the quarantine; the old log is kept whole as ``<dir>.pre-repair-<stamp>`` unless
``keep_backup=False`` (the directory swap, ``swap.SwapPlan``). The digest of the readable part is kept: it equals
the input's replay (damage was never applied, refused records never changed the state); only a point-in-time
rollback changes it, and the plan lists the jobs that change.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from google_crc32c import value as _crc

from ...errors import InputError, PackMismatch, PackRefused, UsageError  # noqa: F401  (PackMismatch re-exported)
from ...formats._common import format_unix_ns, format_uuid
from ...formats.workq import HEADER_SIZE, RECORD_CRC_STRUCT
from .. import progress
from ..findings import ERROR, Finding, Verdict, worst
from ..fsops import FileSig
from ..plan import Cut, KeptRanges, prove, read_cuts, refusal, repair_doc, replay_pass, timed
from .fastreplay import Bail, FastResult, fast_run
from .model import Record
from .reader import LogSet, RecordReader, discover, read_damaged_jobs, record_length
from .replay import WorkqReplay
from .swap import SwapPlan
from .verify import LogRun, run_log


@dataclass(slots=True)
class SegmentPlan:
    path: str
    seq: int
    size: int
    cuts: list[Cut] = field(default_factory=list)
    remove: bool = False       # the segment goes (empty, short, or wholly after the rollback point)
    rehead: bool = False       # its header is rewritten

    @property
    def action(self) -> str:
        if self.remove:
            return "delete"
        if self.rehead or self.cuts:
            return "rewrite"
        return "keep"

    @property
    def size_after(self) -> int:
        if self.remove:
            return 0
        return self.size - sum(c.length for c in self.cuts if c.what != "bad-header")


@dataclass(slots=True)
class WorkqRepairPlan(SwapPlan):
    kind: ClassVar[str] = "repair"
    tag: ClassVar[str] = "repair"
    changed_why: ClassVar[str] = "the log changed since the plan was made (is workq-server running?)"

    log: LogSet
    as_of_ns: int
    input_verdict: Verdict
    segments: list[SegmentPlan]
    digest_before: str
    digest_after: str
    jobs_changed: list[dict]
    findings: list[Finding]          # the errors the repair answers
    sigs: dict[str, FileSig]
    records_before: int
    kept: KeptRanges = field(default_factory=KeptRanges)
    records_after: int = 0                 # the records the repaired log keeps
    jobs_lost: list[dict] = field(default_factory=list)   # adds/schedules in cut bytes: {job_id, cmd, at, later_records}
    lost_unread: dict = field(default_factory=lambda: {"ranges": 0, "bytes": 0})  # cut bytes no frame could be read in

    @property
    def cuts(self) -> list[Cut]:
        return [c for s in self.segments for c in s.cuts]

    @property
    def nothing_to_do(self) -> bool:
        return all(s.action == "keep" for s in self.segments)

    def report_doc(self) -> dict:
        kept = [s for s in self.segments if not s.remove]
        return repair_doc(
            self, {"format": "workq", "root": self.log.root}, "the log is clean: workq-server starts on it",
            {"files": len(self.segments), "bytes": sum(s.size for s in self.segments), "records": self.records_before},
            {"files": len(kept), "bytes": sum(s.size_after for s in kept),
             "records": self.records_before if self.nothing_to_do else self.records_after},
            [{"file": s.path, "action": s.action, "bytes_before": s.size, "bytes_after": s.size_after}
             for s in self.segments if s.action != "keep"], sum(1 for s in kept if s.action == "keep"),
            (self.digest_before, self.digest_after), self.kept,
            {"jobs_lost": self.jobs_lost, "jobs_lost_unread": dict(self.lost_unread), "jobs_changed": self.jobs_changed})

    @property
    def bytes_before(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def write_total(self) -> int:
        return sum(s.size_after for s in self.segments if not s.remove)

    def segments_kept(self) -> list[tuple[str, int, list[tuple[int, int]], bool]]:
        """Unchanged older segments linked; the newest and every changed one written without its cut ranges."""
        kept = [s for s in self.segments if not s.remove]
        return [(s.path, s.size, [(c.offset, c.length) for c in s.cuts if c.what != "bad-header"],
                 s.action == "keep" and i < len(kept) - 1) for i, s in enumerate(kept)]

    def verify_copy(self, d: str) -> tuple[int, str]:
        rep = run_log(discover([d])[0], self.as_of_ns, state=True)
        errors = [f"{f.code}@{os.path.basename(f.path or '')}:0x{f.offset or 0:x}" for f in rep.findings
                  if f.severity == ERROR]
        return rep.records, prove("the repaired log is not what the plan promised (nothing was installed)",
                                  self.digest_after, rep.state.digest(), path=d, verdict=rep.verdict,
                                  detail=lambda: ", ".join(errors[:3]))


@timed
def repair_plan(log: LogSet, as_of_ns: int, *, salvage: bool = False, drop_invalid: bool = False,
                truncate_to_ns: int | None = None, prior: FastResult | None = None) -> WorkqRepairPlan:
    """Read the whole log once and describe the repair (see the module docstring); nothing is written.
    ``prior``: the kernel's pass over ``log`` at ``as_of_ns`` that the caller already made (``fast_run`` with
    keep and through, every error finding kept: ``report``'s series pass); the plan is made from it, reading
    nothing again. Nothing is written: what a crashed earlier install left is finished by ``repair --apply`` itself,
    before it plans (a plan alone, or ``--out``, leaves the input as it is)."""
    if not log.is_dir:
        raise UsageError("repair works on a log directory (segments named one by one are not a log)",
                         path=log.root)
    if truncate_to_ns is not None:
        prior = None
    sigs = {s.path: FileSig.of(s.path) for s in log.segments}
    segs = {s.path: SegmentPlan(s.path, s.seq or 0, sigs[s.path].size or 0) for s in log.segments}
    if truncate_to_ns is None:
        plan = _one_pass_plan(log, as_of_ns, segs, sigs, salvage=salvage, drop_invalid=drop_invalid, prior=prior)
    else:
        plan = _rollback_plan(log, as_of_ns, segs, sigs, salvage=salvage, drop_invalid=drop_invalid,
                              truncate_to_ns=truncate_to_ns)
    return plan


#: The reader's framing and header codes: damage to bytes (cut as ranges); every other error is a record that
#: workq-server refuses (cut as that record).
_FRAMING = frozenset({"WQ-HDR-EMPTY", "WQ-HDR-SHORT", "WQ-HDR-MAGIC", "WQ-HDR-VERSION", "WQ-TRUNCATED",
                      "WQ-TIME-VERSION", "WQ-SIZE-OVERFLOW", "WQ-SIZE-TOO-LARGE", "WQ-CRC"})


def _read_once(log: LogSet, as_of_ns: int, on_error: Callable[[Finding], None]):
    """The log's one pass — the hot kernel, else the reference reader + replay: (every finding in file order,
    the replayed state, records per segment path, records). ``on_error`` sees each error finding as soon as the
    pass meets it (a refusal need not wait for the end of the log)."""
    try:
        res = fast_run(log, as_of_ns, keep=True, through=True, on_error=on_error)
    except Bail as exc:
        if exc.handed_back:
            progress.begin(progress.REFERENCE_PASS)
    else:
        return res.findings, res.state, dict(zip((s.path for s in log.segments), res.seg_records)), res.records
    run = LogRun(log, as_of_ns)
    per: Counter = Counter()
    for ev in run.events():
        if ev.__class__ is Record:
            per[ev.path] += 1
        elif ev.severity == ERROR:
            on_error(ev)
    rep = run.report
    return rep.findings, rep.state, per, rep.records


_WHY = {Verdict.CORRUPT: "the log has corruption (damage with valid data after it): --salvage repairs it",
        Verdict.INVALID_HISTORY: "the log has records workq-server refuses: --drop-invalid repairs it"}


def _one_pass_plan(log: LogSet, as_of_ns: int, segs: dict[str, SegmentPlan], sigs: dict[str, FileSig], *,
                   salvage: bool, drop_invalid: bool, prior: FastResult | None = None) -> WorkqRepairPlan:
    """The plan from one pass over the log (its findings, offsets and record indexes): cutting damage and refused
    records never changes the replayed state (neither was ever applied), so the state after is the state
    before and no second replay is needed."""
    def early(f: Finding) -> None:       # refuse at the first corruption (the worst class: the input's exit)
        if f.path in segs and f.code in _FRAMING and f.verdict == Verdict.CORRUPT and not salvage:
            refusal({Verdict.CORRUPT: [f]}, salvage=salvage, drop_invalid=drop_invalid, why=_WHY)
    if prior is None:
        findings, state, per_seg, records = _read_once(log, as_of_ns, early)
    else:
        findings, state, records = prior.findings, prior.state, prior.records
        per_seg = dict(zip((s.path for s in log.segments), prior.seg_records))
        for f in findings:
            if f.severity == ERROR:
                early(f)
    errors: dict[Verdict, list[Finding]] = {Verdict.TORN_TAIL: [], Verdict.CORRUPT: [], Verdict.INVALID_HISTORY: []}
    refused_at: set[int] = set()
    for f in findings:
        if f.severity != ERROR or f.path not in segs:
            continue
        sp = segs[f.path]
        if f.code not in _FRAMING:                 # a record workq-server refuses: cut that record
            errors[Verdict.INVALID_HISTORY].append(f)
            sp.cuts.append(Cut(f.path, f.offset, record_length(f.path, f.offset), "refused-record", f.code,
                               f.message, f.record_index))
            refused_at.add(f.record_index)
            continue
        errors.setdefault(f.verdict, []).append(f)
        _cut_damage(sp, f)
    refusal(errors, salvage=salvage, drop_invalid=drop_invalid, why=_WHY)
    verdict = worst(v for v, fs in errors.items() if fs)
    d = state.digest()
    plan = WorkqRepairPlan(log, as_of_ns, verdict, list(segs.values()), d, d, [],
                           [f for fs in errors.values() for f in fs], sigs, records,
                           kept=_kept_ranges(log, segs, per_seg), records_after=records - len(refused_at))
    plan.jobs_lost, plan.lost_unread = _jobs_lost(log, plan.cuts, findings, state)
    return plan


def _cut_damage(sp: SegmentPlan, f: Finding) -> None:
    """The cut for one framing or header error of segment ``sp``."""
    if f.code in ("WQ-HDR-EMPTY", "WQ-HDR-SHORT"):
        sp.remove = True
        if sp.size:
            sp.cuts.append(Cut(f.path, 0, sp.size, "short-segment", f.code, f.message, f.next_index))
        else:
            sp.cuts.append(Cut(f.path, 0, 0, "empty-segment", f.code, f.message, f.next_index))
    elif f.code in ("WQ-HDR-MAGIC", "WQ-HDR-VERSION"):
        sp.rehead = True
        sp.cuts.append(Cut(f.path, 0, HEADER_SIZE, "bad-header", f.code, f.message, f.next_index))
    else:
        end = f.resumes_at if f.resumes_at is not None else sp.size
        sp.cuts.append(Cut(f.path, f.offset, end - f.offset,
                           "torn-tail" if f.verdict == Verdict.TORN_TAIL else "unreadable", f.code, f.message,
                           f.next_index))


def _kept_ranges(log: LogSet, segs: dict[str, SegmentPlan], per_seg: dict) -> KeptRanges:
    """The kept records of every segment as contiguous ranges between its cuts, with their record counts from
    the record indexes at the cuts (the reader resumes exactly at the next valid record: no record lies inside a
    cut, and every byte between two cuts is records)."""
    kept = KeptRanges()
    idx = 0
    for s in log.segments:
        sp = segs[s.path]
        n = per_seg.get(s.path, 0)
        end_idx = idx + n
        pos = HEADER_SIZE
        for c in sorted((c for c in sp.cuts if c.what not in ("bad-header", "short-segment", "empty-segment")),
                        key=lambda c: c.offset):
            at = c.index if c.index is not None else idx
            if c.offset > pos and at > idx:
                kept.ranges.append([s.path, pos, c.offset, at - idx])
            pos = max(pos, c.offset + c.length)
            idx = max(idx, at + (1 if c.what == "refused-record" else 0))
        if end_idx > idx and not sp.remove:
            kept.ranges.append([s.path, pos, sp.size, end_idx - idx])
        idx = end_idx
    return kept


def _jobs_lost(log: LogSet, cuts: list[Cut], findings: list[Finding], state) -> tuple[list[dict], dict]:
    """The jobs a repair loses: every add or schedule whose id can still be read in the cut damaged bytes
    (``reader.damaged_jobs``) and that is not live in the replay, with the later records that refer to it (its
    WQ-UNKNOWN-JOB findings); and the cut ranges / bytes in which no record could be read at all."""
    order = {s.path: i for i, s in enumerate(log.segments)}
    read, unread = read_cuts(cuts, read_damaged_jobs)
    found = [((order[c.path], off), c.path, cmd, jid) for c, jobs in read for off, cmd, jid in jobs]
    if not found:
        return [], unread
    later: dict[str, list[tuple[int, int]]] = {}
    for f in findings:
        if f.code == "WQ-UNKNOWN-JOB" and f.job_id is not None and f.path in order:
            later.setdefault(f.job_id, []).append((order[f.path], f.offset or 0))
    out, seen = [], set()
    for at, path, cmd, jid in found:
        uid = format_uuid(jid)
        if uid in seen or jid in state.jobs:
            continue
        seen.add(uid)
        out.append({"job_id": uid, "cmd": cmd.label, "at": f"{os.path.basename(path)}@0x{at[1]:x}",
                    "later_records": sum(1 for p in later.get(uid, ()) if p > at),
                    "id_unverified": not _crc_holds(path, at[1])})
    return out, unread


def _crc_holds(path: str, offset: int) -> bool:
    """Whether the record framed at ``offset`` of ``path`` is whole and its CRC matches: a job id read from a
    record that fails it may be damage (a flipped bit names a job that never existed)."""
    try:
        n = record_length(path, offset)
        with open(path, "rb") as f:
            rec = os.pread(f.fileno(), n, offset)
    except (InputError, OSError):
        return False
    return len(rec) == n and n > 4 and _crc(rec[:-4]) == RECORD_CRC_STRUCT.unpack_from(rec, n - 4)[0]


def _rollback_plan(log: LogSet, as_of_ns: int, segs: dict[str, SegmentPlan], sigs: dict[str, FileSig], *,
                   salvage: bool, drop_invalid: bool, truncate_to_ns: int) -> WorkqRepairPlan:
    """A point-in-time rollback: the state after is the replay up to T, so this pass replays twice (the log as
    it is, and as the repair leaves it) and lists the jobs that change."""
    before, after = WorkqReplay(as_of_ns), WorkqReplay(as_of_ns)
    errors: dict[Verdict, list[Finding]] = {Verdict.TORN_TAIL: [], Verdict.CORRUPT: [], Verdict.INVALID_HISTORY: []}
    records, kept_recs, cut, cut_from = replay_pass(
        RecordReader(log).events(), Record, before, after, past=lambda ev: ev.time.unix_ns > truncate_to_ns, files=segs)
    for x in cut:
        if x.__class__ is Finding:         # damage
            errors.setdefault(x.verdict, []).append(x)
            _cut_damage(segs[x.path], x)
            continue
        ev, fs = x                         # a refused record
        errors[Verdict.INVALID_HISTORY] += fs
        segs[ev.path].cuts += [Cut(ev.path, ev.offset, ev.length, "refused-record", f.code, f.message) for f in fs]
    kept = KeptRanges()
    for rec in kept_recs:
        kept.add(*rec)
    state_before = before.finish()
    refusal(errors, salvage=salvage, drop_invalid=drop_invalid, why=_WHY)
    if cut_from is not None:          # the rollback: the rest of that segment, and every later segment
        path, off = cut_from
        later = False
        for s in log.segments:
            sp = segs[s.path]
            if s.path == path:
                sp.cuts = [c for c in sp.cuts if c.offset < off]
                sp.cuts.append(Cut(path, off, sp.size - off, "after-time", None,
                                   f"written after {format_unix_ns(truncate_to_ns)}"))
                later = True
            elif later:
                sp.cuts = [Cut(s.path, 0, sp.size, "after-time", None,
                               f"a segment written after {format_unix_ns(truncate_to_ns)}")]
                sp.remove = True
    state_after = after.finish()
    verdict = worst(v for v, fs in errors.items() if fs)
    return WorkqRepairPlan(log, as_of_ns, verdict, list(segs.values()), state_before.digest(),
                           state_after.digest(), _diff(state_before, state_after),
                           [f for fs in errors.values() for f in fs], sigs, records, kept=kept,
                           records_after=len(kept_recs))


def _diff(a, b) -> list[dict]:
    """Jobs whose state differs between two replays, by id: [{id, before, after}] (state labels, or absent)."""
    out = []
    for jid in sorted(set(a.jobs) | set(b.jobs)):
        ja, jb = a.jobs.get(jid), b.jobs.get(jid)
        if ja is not None and jb is not None and ja.canonical() == jb.canonical():
            continue
        out.append({"job_id": (ja or jb).uuid, "before": ja.state.label if ja else "absent",
                    "after": jb.state.label if jb else "absent"})
    return out
