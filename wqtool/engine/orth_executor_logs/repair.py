"""``repair`` for executor log folders: nothing to do (Orth appends to them; damage there is the script's output).
The plan says so in the shape of every repair plan."""
from __future__ import annotations

from dataclasses import dataclass

from ..findings import Verdict
from ..plan import ApplyResult, Plan


@dataclass
class NothingToRepair(Plan):
    """Executor logs are never rewritten (Orth appends to them; damage there is the script's output)."""

    kind = "repair"
    root: str
    input_verdict: Verdict = Verdict.CLEAN
    fmt: str = "orth-executor-logs"
    nothing_to_do = True

    def report_doc(self) -> dict:
        return {"format": self.fmt, "root": self.root, "actions": [], "nothing_to_do": True,
                "why": "executor logs are never rewritten (their findings are about runs, not bytes)", "lines": []}

    def apply(self, **kw) -> ApplyResult:
        return ApplyResult(path=self.root, steps=[], result=None, bytes_before=0, bytes_after=0)
