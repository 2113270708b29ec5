"""clean of a list journal: what upstream's reader does when it finishes a file — unlink exhausted hour files
(every byte ``\\n``, or empty), except the current and the previous hour's (a writer may still append to them) — and
wqtool's own leftovers (a killed pack's temps: the hour file they were made from is intact). A file with a pending
line, a skipped line or a torn tail is kept (upstream would lose the others when it unlinks: wqtool never does).

Each removal runs as pack's rewrite does (``lock:``, ``check:`` — still exhausted under the lock, no other holder —
``unlink:``, ``fsync-dir:``, ``unlock:``); a late writer's bytes go to a new ``<H>.msg``, created as it creates it.
"""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from typing import ClassVar

from ...formats.snaplist import kept_hours
from ..findings import Verdict
from ..fsops import unlink_quiet
from ..plan import Plan, StepRunner, rewrite_file, timed
from .model import ListJournal
from .pack import _check_alone, _open_locked, read_all, rescue_late_writers
from .verify import run_log


@dataclass(slots=True)
class ListCleanPlan(Plan):
    kind: ClassVar[str] = "clean"

    journal: ListJournal
    as_of_ns: int
    remove: list[tuple[str, int, str]]        # (path, bytes, reason)
    keep: list[tuple[str, str]]               # (path, reason)
    digest: str = ""                          # the replay digest (clean changes no entry)
    input_verdict: Verdict = Verdict.CLEAN    # the input's, as verify gives it
    records: int = 0
    acked_removed: int = 0                    # blank runs in the files removed
    sizes: dict = field(default_factory=dict)

    def report_doc(self) -> dict:
        prev, cur = kept_hours(self.journal.current_hour)
        files = len(self.journal.files)
        before = sum(self.sizes.values())
        freed = sum(n for _, n, _ in self.remove)
        gone = sum(1 for p, _, _ in self.remove if p in self.sizes)
        return {"format": "snaplist", "root": self.journal.root, "as_of_ns": self.as_of_ns,
                "current_hour": cur, "previous_hour": prev,
                "nothing_to_do": not self.remove,
                "why": "no exhausted hour file outside the current and previous hour" if not self.remove else None,
                "before": {"files": files, "records": self.records, "bytes": before},
                "after": {"files": files - gone, "records": self.records - self.acked_removed,
                          "bytes": before - sum(n for p, n, _ in self.remove if p in self.sizes)},
                "reclaimed": {"bytes": freed, "files": len(self.remove), "records": self.acked_removed},
                "actions": [{"file": p, "action": "delete", "why": r} for p, _n, r in self.remove],
                "keep": [{"file": p, "reason": r} for p, r in self.keep],
                "lines": [f"kept {os.path.basename(p)}: {r}" for p, r in self.keep],
                "digest": self.digest, "elapsed_s": round(self.elapsed_s, 6)}

    def steps(self, step: StepRunner, ctx: dict, **_kw) -> None:
        d = self.journal.root
        ctx.update(path=d, bytes_before=sum(n for _, n, _ in self.remove), bytes_after=0, removed=[])
        for path, _size, _reason in self.remove:
            name = os.path.basename(path)
            if name.startswith("."):
                step("unlink:" + name, lambda path=path: unlink_quiet(path))
                step.sync(name, d)
                ctx["removed"].append(path)
                continue
            key = "fd:" + name

            def check(path=path, key=key, name=name):
                fd = ctx[key]
                _check_alone(path, fd, "clean")
                data = read_all(fd)
                if not is_exhausted(data):
                    ctx["skip:" + name] = True       # a writer appended since the plan: keep it
                ctx["size:" + name] = len(data)

            def unlink(path=path, name=name):
                if not ctx.get("skip:" + name):
                    os.unlink(path)
                    ctx["removed"].append(path)

            def unlock(path=path, key=key, name=name):
                fd = ctx[key]
                fcntl.flock(fd, fcntl.LOCK_UN)
                if not ctx.get("skip:" + name):
                    rescue_late_writers(fd, ctx["size:" + name], path, recreate=True)

            rewrite_file(step, path, None, None, check, unlink=unlink, unlock=unlock,
                         lock=lambda path=path, key=key: _open_locked(path, ctx, key))


def is_exhausted(data: bytes) -> bool:
    return data.count(b"\n") == len(data)


@timed
def clean_plan(journal: ListJournal) -> ListCleanPlan:
    if not journal.is_dir:
        from ...errors import UsageError
        raise UsageError("clean needs the journal directory (hour files named one by one are not cleaned)",
                         path=journal.root)
    prev, cur = kept_hours(journal.current_hour)
    report = run_log(journal, limit=0)
    remove, keep = [], []
    sizes: dict = {}
    acked = 0
    for hf in journal.files:
        with open(hf.path, "rb") as f:
            data = f.read()
        sizes[hf.path] = len(data)
        if hf.hour in (prev, cur):
            keep.append((hf.path, f"{'current' if hf.hour == cur else 'previous'} hour: a writer may append"))
        elif is_exhausted(data):
            remove.append((hf.path, len(data), "exhausted: every line acknowledged" if data else "empty"))
            acked += 1 if data else 0
        else:
            keep.append((hf.path, "still holds lines that are not acknowledged (send them first: "
                                  "wqtool replay --send)"))
    for t in journal.temps:
        remove.append((t, os.path.getsize(t), "temp file of an interrupted wqtool pack"))
    plan = ListCleanPlan(journal, journal.as_of_ns, remove, keep, report.state.digest(), report.verdict,
                         report.records, acked, sizes)
    return plan


