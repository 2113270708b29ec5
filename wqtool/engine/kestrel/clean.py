"""clean for Kestrel queues: what Kestrel 2.x itself does at start-up and after a pack, plan-first.

Kestrel's start-up (``Journal`` / ``cleanUpPackedFiles``) deletes ``<q>~~<ms>`` temp files of an unfinished rewrite,
and for every ``<q>.<ms>.pack`` deletes the rotated files it supersedes (``<q>.<ts>`` with ``ts <= ms``) and renames
it to ``<q>.<ms>``. wqtool already applies these rules virtually when it reads a queue (``reader.classify``); clean
applies them for real, in Kestrel's order, each step one that Kestrel itself takes, so a crash anywhere leaves a set
Kestrel (and wqtool) replays to the same state. Stray names are reported, never touched. Kestrel has no lock files:
clean refuses while another process holds a file of the queue open (a running Kestrel could be writing a temp).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from ...errors import InputError
from ...formats.kestrel import PACK_SUFFIX
from ..findings import Verdict
from ..fsops import FileSig, unlink_quiet
from ..live import refuse_holders
from ..plan import ApplyResult, Plan, StepRunner, WriteResult, prove, timed, unchanged
from .pack import replay_digest
from .reader import ROLE_PACK, FileSet, classify, queue_of, whole_queue
from .verify import run_log


@dataclass(slots=True)
class KestrelCleanPlan(Plan):
    kind: ClassVar[str] = "clean"

    fileset: FileSet
    as_of_ns: int
    digest: str                              # the queue's replay digest (open transactions kept open)
    deletes: list[tuple[str, str]]           # (path, why): temps, files a pack supersedes
    renames: list[tuple[str, str]]           # (.pack path, its final name)
    sigs: dict[str, FileSig]
    input_verdict: Verdict
    records: int
    shown_digest: str = ""                   # as `wqtool replay` prints it (open transactions backed out)

    def report_doc(self) -> dict:
        sizes = {p: (s.size or 0) for p, s in self.sigs.items()}
        reclaimed = sum(sizes.get(p, 0) for p, _ in self.deletes)
        before = sum(sizes.values())
        return {
            "format": "kestrel", "root": self.fileset.root, "queue": self.fileset.queue, "as_of_ns": self.as_of_ns,
            "before": {"files": len(self.sigs), "bytes": before, "records": self.records},
            "after": {"files": len(self.sigs) - len(self.deletes), "bytes": before - reclaimed,
                      "records": self.records},
            "reclaimed": {"bytes": reclaimed, "files": len(self.deletes), "records": 0},
            "actions": [{"file": p, "action": "delete", "why": why} for p, why in self.deletes]
                       + [{"file": p, "action": "rename", "to": to} for p, to in self.renames],
            "stray": list(self.fileset.stray), "digest": self.shown_digest or self.digest, "elapsed_s": round(self.elapsed_s, 6),
            "jobs_changed": [], "jobs_changed_more": 0,   # Kestrel's own start-up steps: the queue replays the same
        }

    def apply(self, **kw) -> ApplyResult:
        fs = self.fileset
        refuse_holders(list(self.sigs) + [fs.live_path], "Kestrel", "clean --apply", fs.live_path)
        unchanged(self.sigs, "the queue's files changed since the plan was made (is Kestrel running?)")
        deleted = {p for p, _ in self.deletes}
        for _, dst in self.renames:
            if os.path.lexists(dst) and dst not in deleted:
                raise InputError("the name a pack is renamed to is taken; plan again", path=dst)
        return Plan.apply(self, **kw)

    def steps(self, step: StepRunner, ctx: dict, *, fsync: bool = True) -> None:
        d = self.fileset.root
        for p, _ in self.deletes:
            step(f"unlink:{os.path.basename(p)}", lambda p=p: unlink_quiet(p))
        if self.deletes:
            step.sync("unlink", d, fsync)
        for src, dst in self.renames:
            step(f"rename:{os.path.basename(src)}", lambda src=src, dst=dst: os.rename(src, dst))
            step.sync(os.path.basename(dst), d, fsync)
        step("verify", lambda: ctx.__setitem__("result", self.verify_queue()))
        ctx.update(path=self.fileset.live_path, bytes_before=sum((s.size or 0) for s in self.sigs.values()),
                   removed=[p for p, _ in self.deletes])

    def verify_queue(self) -> WriteResult:
        """The queue as the steps left it, replayed: the digest must be the plan's (``prove``)."""
        fs = self.fileset
        names = sorted(n for n in os.listdir(fs.root) if os.path.isfile(os.path.join(fs.root, n))
                       and queue_of(n) == fs.queue)
        after = run_log(classify(fs.queue, fs.root, names), self.as_of_ns, keep_open=True, limit=0)
        got = prove("the cleaned queue replays differently", self.digest, after.state.digest(), path=fs.root)
        return WriteResult(fs.root, None, sum(os.path.getsize(os.path.join(fs.root, n)) for n in names),
                           after.records, got, 0.0)


@timed
def clean_plan(fileset: FileSet, as_of_ns: int) -> KestrelCleanPlan:
    fileset = whole_queue(fileset, "clean")   # a file named alone: its queue, when it is all of it
    report = run_log(fileset, as_of_ns, keep_open=True, limit=0)
    files = {f.path for f in fileset.files}
    deletes = [(p, "a leftover rewrite temp file (Kestrel deletes it at start-up)") for p in fileset.temps]
    deletes += [(p, "superseded by a finished pack (Kestrel deletes it)") for p in fileset.superseded
                if p not in fileset.temps and p not in files]
    renames = []
    for f in fileset.files:
        if f.role == ROLE_PACK:
            renames.append((f.path, f.path[: -len(PACK_SUFFIX)]))
    on_disk = [f.path for f in fileset.files] + list(fileset.superseded)
    plan = KestrelCleanPlan(fileset, as_of_ns, report.state.digest(), deletes, renames,
                            {p: FileSig.of(p) for p in dict.fromkeys(on_disk)}, report.verdict, report.records,
                            shown_digest=replay_digest(report.state))
    return plan
