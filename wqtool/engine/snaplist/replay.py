"""The list journal's replay: what snaplistd would hold once every pending line was sent, at --as-of.

One entry per uri — the line with the largest ``key_start_date`` wins (``list::on_modified_content``: "if two
requests are made with the same URL, then only the one with the largest date is kept"); on equal dates the line
read later (upstream's order: hours ``E+1`` … ``E``, then file order) wins. Entries sort as the General Sort Index
of the libfastjournal design: ``<domain>:<priority>:<key_start_date>`` (then the uri); an entry is due when its
``key_start_date`` is at or before --as-of.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from ...formats.snaplist import domain_of
from ..findings import NOTE, Finding
from .model import KIND_ACKED, KIND_PENDING, KIND_SKIPPED, Line


@dataclass(slots=True)
class Entry:
    uri: bytes
    domain: bytes
    priority: int
    key_start_date: int
    path: str
    offset: int
    index: int
    superseded: int = 0      # older lines for the same uri that this one replaced

    def sort_key(self) -> tuple:
        return (self.domain, self.priority, self.key_start_date, self.uri)


@dataclass(slots=True)
class ListState:
    as_of_ns: int
    entries: dict[bytes, Entry] = field(default_factory=dict)
    lines: int = 0                 # lines read (pending + skipped)
    pending_lines: int = 0
    invalid_lines: int = 0         # pending lines with bad values (not replayed)
    skipped_lines: int = 0
    acked_runs: int = 0
    acked_bytes: int = 0
    superseded: int = 0
    files: dict[str, int] = field(default_factory=dict)   # hour file -> pending lines

    def sorted_entries(self) -> list[Entry]:
        return sorted(self.entries.values(), key=Entry.sort_key)

    def is_due(self, e: Entry) -> bool:
        return e.key_start_date * 1000 <= self.as_of_ns

    @property
    def due(self) -> int:
        return sum(1 for e in self.entries.values() if self.is_due(e))

    def counts_by_state(self) -> dict[str, int]:
        due = self.due
        return {"due": due, "waiting": len(self.entries) - due}

    def canonical_lines(self) -> list[bytes]:
        return [b"%s\t%d\t%d\t%s\n" % (e.domain, e.priority, e.key_start_date, e.uri) for e in self.sorted_entries()]

    def digest(self) -> str:
        h = hashlib.sha256()
        for line in self.canonical_lines():
            h.update(line)
        return h.hexdigest()


class ListReplay:
    def __init__(self, as_of_ns: int):
        self.state = ListState(as_of_ns)
        self.findings: list[Finding] = []

    def apply(self, rec: Line) -> None:
        s = self.state
        k = rec.kind
        if k == KIND_ACKED:
            s.acked_runs += 1
            s.acked_bytes += rec.length
            return
        s.lines += 1
        if k == KIND_SKIPPED:
            s.skipped_lines += 1
            return
        s.pending_lines += 1
        name = os.path.basename(rec.path)
        s.files[name] = s.files.get(name, 0) + 1
        if not rec.valid:
            s.invalid_lines += 1
            return
        old = s.entries.get(rec.uri)
        if old is not None:
            s.superseded += 1
            if rec.key_start_date < old.key_start_date:
                old.superseded += 1
                return
            n = old.superseded + 1
        else:
            n = 0
        s.entries[rec.uri] = Entry(rec.uri, domain_of(rec.uri), rec.priority, rec.key_start_date, rec.path,
                                   rec.offset, rec.index, n)

    def finish(self) -> ListState:
        s = self.state
        if s.superseded:
            self.findings.append(Finding(NOTE, "SL-SUPERSEDED", f"{s.superseded} pending line(s) replaced by a line "
                                         "for the same uri with a larger key_start_date: one entry per uri"))
        return s


__all__ = ["Entry", "ListState", "ListReplay", "KIND_PENDING"]
