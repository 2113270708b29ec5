"""Values of wqtool's priority-FIFO journal (per the unimplemented libfastjournal design)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding

OP_SET, OP_DELETE, OP_MARK, OP_OTHER = "set", "delete", "mark", "other"
KINDS = (OP_SET, OP_DELETE, OP_MARK, OP_OTHER)


@dataclass(frozen=True, slots=True)
class Segment:
    path: str
    seq: int
    flags: int = 0
    pinned_size: int | None = None


@dataclass(slots=True)
class FjjJournal:
    root: str
    segments: list[Segment]                 # replayed, in order (from the newest snapshot on)
    is_dir: bool = True
    superseded: list[str] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    live: bool = False                      # journal.lock held by a server

    @property
    def label(self) -> str:
        """What reports call this journal: the directory, or the files named one by one (not their directory)."""
        return self.root if self.is_dir or not self.segments else ", ".join(f.path for f in self.segments)

    @property
    def files(self) -> list[Segment]:
        return self.segments


@dataclass(slots=True)
class Change:
    """One journal record: an applied change, stored as the design's FJ request message."""

    path: str
    offset: int
    length: int
    index: int
    applied_at: int                         # µs
    op: str
    function: int
    flags: int
    uri: bytes
    timestamp: int
    priority: int | None = None
    key_start_date: int | None = None
    timeout: int | None = None
    request: bytes = b""
