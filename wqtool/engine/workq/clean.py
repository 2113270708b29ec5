"""clean for workq command logs: the server's cleaning cycle, without its resurrection bug.

workq-server's cleaner (spec 7) visits every segment but the active (newest) one and drops add/schedule records whose
logged expiration has passed and every ID-keyed record whose job is not in memory — including the delete or
complete that removed a job whose add it keeps, so a deleted job comes back at the next restart (spec 7.5).

wqtool's rule is the replay itself: a record is dropped only when the replay at ``as_of`` gives it **no effect** — an
add/schedule already expired (the replay skips it: WQ-ADD-EXPIRED) or a record of a job that is not live at that
point (ignored: WQ-UNKNOWN-JOB). Removing records that have no effect cannot change the state at any later record, so
any subset of the drops — and therefore any crash between two segment renames — replays to the same state; a
delete, complete or fail that changed a live job is always kept with the add it acts on.

Segments whose every record goes are deleted; the others are rewritten as upstream does (``<seg>.rw``, fsync, rename,
directory fsync) only when something is dropped; the active segment is never touched (the server appends to it).
The cleaned log (``.rw`` files in place of their segments) is proven before anything is renamed; a segment with a
``pinned_size`` (the active one, when a running server cleans) is read up to that size by the plan and the proof
alike. ``apply(locks="both")`` takes append.lock and read.lock (a running server refuses it); the server's own
cycle runs this engine with ``locks="read"``, holding append.lock.
"""
from __future__ import annotations

import os
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import InputError, PackRefused, UsageError
from ...formats.workq import HEADER_BYTES, HEADER_SIZE, LOCK_FILES, CmdType
from .. import progress
from ..findings import ERROR, Verdict
from ..fsops import FileSig, ranged, unlink_quiet, without
from ..plan import ApplyResult, Plan, StepRunner, WriteResult, capped, prove, timed, unchanged, write_step
from .model import Record
from .pack import _read_varint_len
from .reader import LogSet, Segment, discover
from .swap import SwapPlan, _Locks
from .fastreplay import Bail, fast_run
from .verify import LogRun, run_log

_NO_EFFECT = frozenset({"WQ-ADD-EXPIRED", "WQ-UNKNOWN-JOB"})
_LABEL = {c: c.label for c in CmdType}
_BY_INT = {int(c): c.label for c in CmdType}


@dataclass(slots=True)
class SegmentClean:
    """What cleaning does to one segment: keep it, rewrite it without its no-effect records, or delete it."""

    path: str
    seq: int
    size: int
    sig: FileSig                     # as the plan read it (the active segment may grow behind it)
    records: int | None
    drops: array = field(default_factory=lambda: array("Q"))     # (offset, length) pairs of dropped records
    dropped_by_kind: Counter = field(default_factory=Counter)
    active: bool = False

    @property
    def dropped(self) -> int:
        return len(self.drops) // 2

    @property
    def dropped_bytes(self) -> int:
        return sum(self.drops[1::2])

    @property
    def action(self) -> str:
        if self.active or not self.dropped:
            return "keep"
        return "delete" if self.dropped_bytes == self.size - HEADER_SIZE else "rewrite"

    @property
    def size_after(self) -> int:
        return {"keep": self.size, "delete": 0}.get(self.action, self.size - self.dropped_bytes)


@dataclass(slots=True)
class WorkqCleanPlan(SwapPlan):
    kind: ClassVar[str] = "clean"

    log: LogSet
    as_of_ns: int
    digest: str
    segments: list[SegmentClean]
    input_verdict: Verdict
    records_before: int

    @property
    def changed(self) -> list[SegmentClean]:
        return [s for s in self.segments if s.action != "keep"]

    def report_doc(self) -> dict:
        before_b = sum(s.size for s in self.segments)
        after_b = sum(s.size_after for s in self.segments)
        dropped = sum(s.dropped for s in self.segments if s.action != "keep")
        kinds: Counter = Counter()
        for s in self.changed:
            kinds.update(s.dropped_by_kind)
        doc = {
            "format": "workq", "root": self.log.root, "as_of_ns": self.as_of_ns,
            "before": {"files": len(self.segments), "bytes": before_b, "records": self.records_before},
            "after": {"files": sum(1 for s in self.segments if s.action != "delete"), "bytes": after_b,
                      "records": self.records_before - dropped},
            "reclaimed": {"bytes": before_b - after_b, "files": sum(1 for s in self.segments if s.action == "delete"),
                          "records": dropped, "by_kind": dict(sorted(kinds.items()))},
            "actions": [{"file": s.path, "action": s.action, "dropped": s.dropped,
                         "bytes_before": s.size, "bytes_after": s.size_after}
                        for s in self.segments if s.action != "keep"],
            "digest": self.digest, "elapsed_s": round(self.elapsed_s, 6),
        }
        capped(doc, "dropped_records", [{"file": s.path, "offset": s.drops[i], "length": s.drops[i + 1]}
                                        for s in self.changed for i in range(0, len(s.drops), 2)])
        return capped(doc, "jobs_changed", [])   # a record is dropped only when it has no effect: none changes

    @property
    def bytes_before(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def write_total(self) -> int:
        return sum(s.size_after for s in self.segments)

    def segments_kept(self) -> list[tuple[str, int, list[tuple[int, int]], bool]]:
        """clean --apply --out: kept older segments linked, the others written without their dropped records, the
        active one copied up to the size the plan read."""
        return [(s.path, s.size, _drops(s), s.action == "keep" and not s.active) for s in self.segments
                if s.action != "delete"]

    def verify_copy(self, d: str, log: LogSet | None = None) -> tuple[int, str]:
        """Replay the cleaned log (``d``'s, or ``log``) at the plan's as-of: (records, digest), the digest proven to
        be the input's."""
        rep = run_log(log or discover([d])[0], self.as_of_ns, state=True)
        return rep.records, prove("the cleaned log does not replay to the input's state", self.digest,
                                  rep.state.digest(), path=d, verdict=rep.verdict,
                                  accept=(Verdict.CLEAN, self.input_verdict))

    def apply(self, *, locks: str = "both", lock_timeout: float = 1.0, **kw) -> ApplyResult:
        """Run the plan. ``locks``: "both" (append.lock and read.lock, as pack: refused while a server runs),
        "read" (read.lock only: the server's own cleaning timer, which holds append.lock), "none" (the caller
        holds them)."""
        if locks not in ("both", "read", "none"):
            raise UsageError(f"locks must be both, read or none, not {locks!r}")
        names = {"both": LOCK_FILES, "read": LOCK_FILES[1:], "none": ()}[locks]
        held = _Locks(self.log.root, lock_timeout, names=names) if names else None
        try:
            _check_unchanged(self)
            for sc in self.changed:       # a stale .rw of an interrupted cycle goes first, as upstream's cleaner does
                unlink_quiet(_rw(sc.path))
            try:
                return Plan.apply(self, **kw)
            except Exception:
                # past the commit every state replays the same: a segment whose .rw was not renamed yet stays whole
                for sc in self.changed:
                    if sc.action == "rewrite":
                        unlink_quiet(_rw(sc.path))
                raise
        finally:
            if held is not None:
                held.release()

    def steps(self, step: StepRunner, ctx: dict, *, fsync: bool = True) -> None:
        d = self.log.root
        changed = self.changed
        ctx.update(path=d, removed=[s.path for s in changed if s.action == "delete"], result=WriteResult(
            d, [os.path.basename(s.path) for s in changed if s.action == "rewrite"], self.write_total,
            self.records_before - sum(s.dropped for s in changed), self.digest, 0.0))
        if changed:
            progress.begin("write", sum(sc.size_after for sc in changed if sc.action == "rewrite"))
        for sc in changed:
            if sc.action == "rewrite":
                write_step(step, f"write:{os.path.basename(sc.path)}.rw", _rw(sc.path), lambda sc=sc: ranged(
                    without(sc.path, HEADER_SIZE, sc.size, _drops(sc)), head=HEADER_BYTES), fsync=fsync)
        if changed:
            progress.begin("re-verify", sum(sc.size_after for sc in self.segments if sc.action != "delete"))
            step("verify", lambda: self.verify_copy(self.log.root, _in_place(self)))
        step.commit()       # from here every state of the directory replays the same (see the module docstring)
        for sc in changed:
            name = os.path.basename(sc.path)
            if sc.action == "rewrite":
                step(f"rename:{name}.rw", lambda sc=sc: os.rename(_rw(sc.path), sc.path))
            else:
                step(f"unlink:{name}", lambda sc=sc: unlink_quiet(sc.path))
            step.sync(name, d, fsync)



apply_plan = WorkqCleanPlan.apply     # the server's cleaning cycle calls it


@timed
def clean_plan(log: LogSet, as_of_ns: int) -> WorkqCleanPlan:
    """Replay ``log`` at ``as_of_ns`` and find the records without effect in every segment but the newest.
    Refuses (PackRefused) a log with corruption or an impossible history — repair it first, as upstream's cleaner
    aborts its cycle on them; a torn tail in the active segment is fine (that segment is never touched)."""
    if not log.is_dir:
        raise UsageError("clean works on a log directory (segments named one by one are not a log)", path=log.root)
    segs: list[SegmentClean] = []
    by_path: dict[str, SegmentClean] = {}
    for i, seg in enumerate(log.segments):
        try:
            st = os.stat(seg.path)
        except OSError as exc:
            raise InputError(exc.strerror or str(exc), path=seg.path) from None
        # a pinned size (the server's cleaning cycle pins the active segment at its last complete record) is the
        # size the plan, the replay and the verify all read: the appender may add records behind it meanwhile
        size = st.st_size if seg.pinned_size is None else min(st.st_size, seg.pinned_size)
        sc = SegmentClean(seg.path, seg.seq or 0, size, FileSig(st.st_ino, st.st_size, st.st_mtime_ns), 0,
                          active=i == len(log.segments) - 1)
        segs.append(sc)
        by_path[seg.path] = sc
    try:            # an intact log: the hot kernel reports every no-effect record (a finding each)
        res = fast_run(log, as_of_ns, keep=True, limit=None)
    except Bail:
        res = None
    if res is not None:
        state, verdict, records = res.state, Verdict.CLEAN, res.records
        for f in res.findings:
            if f.code in _NO_EFFECT and f.path in by_path and not by_path[f.path].active:
                sc = by_path[f.path]
                ln, kind = _record_at(f.path, f.offset)
                sc.drops.extend((f.offset, ln))
                sc.dropped_by_kind[kind] += 1
        for sc in segs:       # the kernel counts records per log, not per segment (not needed to decide)
            sc.records = None
    else:
        state, verdict, records = _reference(log, as_of_ns, by_path)
    plan = WorkqCleanPlan(log, as_of_ns, state.digest(), segs, verdict, records)
    return plan


def _reference(log: LogSet, as_of_ns: int, by_path: dict):
    """The reference pass (any log): the replay's findings right after each record say whether it had an effect."""
    run = LogRun(log, as_of_ns, limit=0)
    current: Record | None = None
    first = None
    for ev in run.events():
        if ev.__class__ is Record:
            current = ev
            by_path[ev.path].records += 1
        elif first is None and ev.severity == ERROR and ev.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY):
            first = ev
        elif ev.code in _NO_EFFECT and current is not None and ev.offset == current.offset \
                and ev.path == current.path:
            sc = by_path[ev.path]
            if not sc.active:
                sc.drops.extend((current.offset, current.length))
                c = current.command
                sc.dropped_by_kind[_LABEL[c.cmd] if c is not None else "(undecodable)"] += 1
    report = run.report
    if report.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY):
        raise PackRefused("refusing to clean a log with " + ("corruption" if report.verdict == Verdict.CORRUPT
                                                             else "a history workq-server refuses")
                          + (f" ({first.code} at {os.path.basename(first.path or '')}@0x{first.offset or 0:x})"
                             if first else "") + "; run `wqtool repair` first", verdict=report.verdict,
                          report=report, path=log.root)
    return report.state, report.verdict, report.records


def _record_at(path: str, offset: int) -> tuple[int, str]:
    """(length, kind label) of the intact record at ``offset`` (the kernel vouched for its framing)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        head = os.pread(fd, 26, offset)
    finally:
        os.close(fd)
    size, q = _read_varint_len(head, 15)
    return q + size + 4, _BY_INT.get(head[q] if size else 0, "(undecodable)")


def _rw(path: str) -> str:
    return path + ".rw"


def _drops(sc: SegmentClean) -> list[tuple[int, int]]:
    return [(sc.drops[i], sc.drops[i + 1]) for i in range(0, len(sc.drops), 2)]


def _in_place(plan: WorkqCleanPlan) -> LogSet:
    """The cleaned log before its renames: ``.rw`` files in place of their segments, deleted ones left out."""
    segs = []
    for sc in plan.segments:
        if sc.action == "delete":
            continue
        # a kept segment is read up to the size the plan replayed (the active one may have grown since: records
        # appended after the plan are not the input's, and would replay to another state)
        segs.append(Segment(_rw(sc.path), sc.seq) if sc.action == "rewrite" else Segment(sc.path, sc.seq, sc.size))
    return LogSet(plan.log.root, segs, is_dir=False)


def _check_unchanged(plan: WorkqCleanPlan) -> None:
    """Every segment is as the plan read it, but the active one, which may only have grown."""
    unchanged({sc.path: sc.sig for sc in plan.segments if not sc.active}, "the log changed since the plan was made")
    for sc in plan.segments[-1:]:
        if sc.active and (FileSig.of(sc.path).size or 0) < sc.size:
            raise InputError("the active segment shrank (or is gone) since the plan was made; plan again", path=sc.path)
