"""pack and clean of the priority-FIFO journal (per the unimplemented libfastjournal design).

pack: replay as of --as-of and write the state as one **snapshot** segment (header flag bit 0): a SET per entry
(by uri), a worked-on mark per entry still worked on at --as-of, a DELETE per tombstone; numbered after every
existing segment, so once renamed into place the snapshot rule supersedes everything before it. ``apply`` holds
``journal.lock`` (the server must be stopped); the snapshot is written as ``.NNNNNNNNN.fjj.tmp``, proven, renamed
(never over an existing name), then the superseded segments are unlinked. A crash leaves a directory that replays
to the same state: the old segments (and a temp the reader ignores), or the snapshot (and superseded segments the
reader skips).

clean: remove the superseded segments and temp files an interrupted pack left, under the same lock.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import InputError, UsageError
from ...formats.fastjournal import FJJ_LOCK, FJJ_TEMP_SUFFIX, SEGMENT_SNAPSHOT, fjj_segment_name
from ..findings import ERROR, Verdict
from ..fsops import LockSet, fsync_dir, rename_noreplace, unlink_quiet, write_new
from ..plan import ApplyResult, Plan, StepRunner, WriteResult, pack_doc, pack_refusal, prove, rewrite_file, timed
from ..run import LogReport
from .model import FjjJournal, Segment
from .reader import discover
from .replay import FifoState
from .verify import run_log
from .writer import delete_request, encode_record, mark_request, segment_header, segments_in, set_request

LOCK_TIMEOUT_S = 0.5


def snapshot_records(state: FifoState) -> list[tuple[int, bytes]]:
    """(applied_at, request) of the snapshot of ``state`` at its --as-of."""
    now = state.now_us
    out = []
    for uri in sorted(state.fifo.entries):
        e = state.fifo.entries[uri]
        out.append((now, set_request(uri, e.priority, e.key_start_date, e.timestamp)))
        if e.worked_until > now:
            out.append((now, mark_request(uri, e.timestamp, e.worked_until - now)))
    for uri in sorted(state.fifo.tombstones):
        out.append((now, delete_request(uri, state.fifo.tombstones[uri])))
    return out


@dataclass(slots=True)
class FjjPackPlan(Plan):
    kind: ClassVar[str] = "pack"

    journal: FjjJournal
    as_of_ns: int
    report: LogReport
    inputs: list[tuple[str, int]]
    seq: int                                  # the snapshot's number
    records: list[tuple[int, bytes]]
    digest: str
    bytes_before: int
    dropped: list[str] = field(default_factory=list)

    @property
    def input_verdict(self) -> Verdict:
        return self.report.verdict

    @property
    def bytes_after(self) -> int:
        return 16 + sum(16 + len(r) for _, r in self.records)

    def report_doc(self) -> dict:
        fifo = self.report.state.fifo
        return pack_doc(self, {"format": "fastjournal", "root": self.journal.root, "queue": None},
                        {"records": self.report.records, "bytes": self.bytes_before, "files": len(self.inputs)},
                        {"records": len(self.records), "bytes": self.bytes_after, "files": 1,
                         "entries": len(fifo.entries), "tombstones": len(fifo.tombstones)}, self.dropped, self.digest,
                        {"snapshot": fjj_segment_name(self.seq), "supersedes": [p for p, _ in self.inputs]}, self.digest)

    def write_copy(self, out: str, fsync: bool) -> tuple:
        """The snapshot as segment 1."""
        path = os.path.join(out, fjj_segment_name(1))
        size = write_new(path, [_snapshot(self, 1)], fsync=fsync)
        return [path], size, len(self.records), _verify_segment(self, path, 1)

    def apply(self, **kw) -> ApplyResult:
        if not self.journal.is_dir:
            raise UsageError("--apply needs the journal directory", path=self.journal.root)
        return Plan.apply(self, **kw)

    def steps(self, step: StepRunner, ctx: dict, **_kw) -> None:
        """The snapshot written beside the segments (``plan.rewrite_file``, renamed to its new name, never over an
        existing one), then every segment it supersedes removed, all under ``journal.lock``."""
        j, d = self.journal, self.journal.root
        name = fjj_segment_name(self.seq)
        temp, final = os.path.join(d, "." + name + FJJ_TEMP_SUFFIX), os.path.join(d, name)
        ctx.update(path=final, removed=[p for p, _ in self.inputs] + j.superseded + j.temps,
                   result=WriteResult(final, None, self.bytes_after, len(self.records), self.digest, 0.0))

        def check():
            now = discover([d])[0]
            if [(s.path, os.path.getsize(s.path)) for s in now.segments] != self.inputs:
                raise InputError("the journal changed since the plan was made (is a server running?); plan again",
                                 path=d)
            unlink_quiet(temp)      # an earlier pack --apply died after creating it (we hold the journal's lock)

        def superseded():
            for p in ctx["removed"]:
                step("unlink:" + os.path.basename(p), lambda p=p: unlink_quiet(p))
            step.sync("unlink", d)
        rewrite_file(step, final, temp, lambda: _snapshot(self, self.seq), check,
                     verify=lambda: _verify_segment(self, temp, self.seq),
                     lock=lambda: _lock(j, ctx), unlock=lambda: ctx.pop("lock").release(), rename=rename_noreplace,
                     after=superseded)


@timed
def pack_plan(journal: FjjJournal, as_of_ns: int, *, salvage: bool = False) -> FjjPackPlan:
    report = run_log(journal, as_of_ns)
    pack_refusal(report, salvage, ("a journal with corruption", "a journal with an invalid history"),
                 "--salvage packs what replays and lists what is dropped")
    errors = [f for f in report.findings if f.severity == ERROR]
    dropped = [f"{os.path.basename(f.path or '')}@0x{(f.offset or 0):x}: {f.code} dropped" for f in errors]
    inputs = [(s.path, os.path.getsize(s.path)) for s in journal.segments]
    existing = [s.seq for s in journal.segments]
    if journal.is_dir:
        existing += [seq for seq, _ in segments_in(journal.root)]
    seq = max(existing, default=0) + 1
    state: FifoState = report.state
    return FjjPackPlan(journal, as_of_ns, report, inputs, seq, snapshot_records(state), state.digest(),
                       sum(n for _, n in inputs), dropped=dropped)


def _snapshot(plan: FjjPackPlan, seq: int) -> bytes:
    """The snapshot segment's bytes: its header (the snapshot flag), then a record per request."""
    return segment_header(seq, SEGMENT_SNAPSHOT) + b"".join(encode_record(at, req) for at, req in plan.records)


def _verify_segment(plan: FjjPackPlan, path: str, seq: int) -> str:
    j = FjjJournal(root=os.path.dirname(path) or ".", segments=[Segment(path, seq, SEGMENT_SNAPSHOT)], is_dir=False)
    rep = run_log(j, plan.as_of_ns)
    return prove("the snapshot does not replay to the input's state", plan.digest, rep.state.digest(), path=path,
                 verdict=rep.verdict)


def _lock(journal: FjjJournal, ctx: dict) -> None:
    ctx["lock"] = LockSet(journal.root, [FJJ_LOCK], LOCK_TIMEOUT_S,
                          busy=lambda n: "a fastjournal server is running: stop it first")


# ---------------------------------------------------------------- clean
@dataclass(slots=True)
class FjjCleanPlan(Plan):
    kind: ClassVar[str] = "clean"

    journal: FjjJournal
    as_of_ns: int
    remove: list[tuple[str, int, str]]
    digest: str = ""
    input_verdict: Verdict = Verdict.CLEAN
    records: int = 0

    def report_doc(self) -> dict:
        kept = sum(os.path.getsize(s.path) for s in self.journal.segments if os.path.exists(s.path))
        freed = sum(n for _, n, _ in self.remove)
        segs = len(self.journal.segments) + len(self.journal.superseded)
        return {"format": "fastjournal", "root": self.journal.root, "as_of_ns": self.as_of_ns,
                "nothing_to_do": not self.remove,
                "why": "no superseded segment, no temp file" if not self.remove else None,
                "before": {"files": segs, "records": self.records, "bytes": kept + freed},
                "after": {"files": len(self.journal.segments), "records": self.records, "bytes": kept},
                "reclaimed": {"bytes": freed, "files": len(self.remove), "records": 0},
                "actions": [{"file": p, "action": "delete", "why": r} for p, _n, r in self.remove],
                "digest": self.digest, "elapsed_s": round(self.elapsed_s, 6)}

    def steps(self, step: StepRunner, ctx: dict, **_kw) -> None:
        d = self.journal.root

        def check():
            now = discover([d])[0]
            if [p for p, _, r in self.remove if r.startswith("superseded") and p not in now.superseded]:
                raise InputError("the journal changed since the plan was made; plan again", path=d)

        def reverify():
            rep = run_log(discover([d])[0], self.as_of_ns, limit=0)
            prove("the cleaned journal does not replay to the input's state", self.digest, rep.state.digest(),
                  path=d)

        ctx.update(path=d, bytes_before=sum(n for _, n, _ in self.remove), bytes_after=0,
                   removed=[p for p, _, _ in self.remove])
        step("lock", lambda: _lock(self.journal, ctx))
        step("check", check)
        for p, _, _ in self.remove:
            step("unlink:" + os.path.basename(p), lambda p=p: unlink_quiet(p))
        step("fsync-dir", lambda: fsync_dir(d))
        step("verify", reverify)
        step("unlock", lambda: ctx.pop("lock").release())


@timed
def clean_plan(journal: FjjJournal, as_of_ns: int) -> FjjCleanPlan:
    if not journal.is_dir:
        raise UsageError("clean needs the journal directory", path=journal.root)
    rep = run_log(journal, as_of_ns, limit=0)
    remove = [(p, os.path.getsize(p), "superseded by a snapshot") for p in journal.superseded]
    remove += [(p, os.path.getsize(p), "temp file of an interrupted pack") for p in journal.temps]
    return FjjCleanPlan(journal, as_of_ns, remove, rep.state.digest(), rep.verdict, rep.records)
