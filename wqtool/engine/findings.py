"""Findings are data, not exceptions: every check adds one, with a stable code and exact location.

The severity of damage is the engine's own ``Verdict`` (clean, torn tail, corrupt, invalid history); the CLI
maps it to exit codes once (``wqtool.cli``). Its integer values are part of the JSON a finding serialises to
(``exit_class``), so they are stable.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum, unique

ERROR, WARNING, NOTE = "error", "warning", "note"


@unique
class Verdict(IntEnum):
    """What a log, or one finding, says about the log's state."""

    CLEAN = 0            # parses, history valid (warnings and notes allowed)
    TORN_TAIL = 1        # valid up to offset X of the newest file, nothing valid after X
    CORRUPT = 3          # damage with valid data after it, or where the format allows no damage
    INVALID_HISTORY = 4  # intact bytes, a history the upstream system refuses

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {Verdict.CLEAN: "clean", Verdict.TORN_TAIL: "torn tail", Verdict.CORRUPT: "CORRUPT",
           Verdict.INVALID_HISTORY: "INVALID HISTORY"}
#: Which verdict wins when a log has several: corruption, then impossible history, then a torn tail.
PRECEDENCE = (Verdict.CLEAN, Verdict.TORN_TAIL, Verdict.INVALID_HISTORY, Verdict.CORRUPT)
_RANK = {v: i for i, v in enumerate(PRECEDENCE)}


def worst(verdicts) -> Verdict:
    """The most severe of ``verdicts`` (CLEAN when empty)."""
    best = Verdict.CLEAN
    for v in verdicts:
        v = Verdict(v)
        if _RANK[v] > _RANK[best]:
            best = v
    return best


@dataclass(slots=True)
class Finding:
    severity: str                 # error | warning | note
    code: str                     # stable: WQ-CRC, KQ-TRUNCATED, ...
    message: str
    path: str | None = None       # segment / journal file
    offset: int | None = None     # byte offset in that file
    record_index: int | None = None
    last_good_offset: int | None = None
    upstream: str | None = None   # what the upstream system does with this, where it differs from "starts"
    verdict: Verdict = Verdict.CLEAN  # what this finding says about the log (CLEAN for warnings and notes)
    job_id: str | None = None
    resumes_at: int | None = None  # after damage: where valid records resume in the same file (None: nowhere)
    #: a torn tail's damage alone, without the conclusion its place in the log draws ("; torn tail: ..."): what
    #: the in-flight note quotes when a live writer is still appending there (``engine.live``); not serialised
    cause: str | None = None

    def location(self) -> str:
        where = os.path.basename(self.path) if self.path else "-"
        if self.offset is not None:
            where += f"@0x{self.offset:x}"
        return where


#: A format's finding codes: code -> (severity, meaning).
Codes = dict[str, tuple[str, str]]
