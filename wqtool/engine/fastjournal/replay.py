"""Replay of wqtool's priority-FIFO journal (per the unimplemented libfastjournal design): the records re-applied
to a ``Fifo`` in order — the same rules the server applied (``fifo.py``), so a change that does not apply is a
history the server never wrote (``FJJ-NOT-APPLIED``). The FIFO is built without its index (``bulk``): memory
follows the distinct resources, not the records. The server rebuilds its state at start-up with this replay."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...formats._common import format_unix_ns
from ..findings import ERROR, WARNING, Finding, Verdict
from .fifo import Entry, Fifo, Outcome
from .model import OP_DELETE, OP_MARK, OP_SET, Change
from .reader import overwrite


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


@dataclass(slots=True)
class FifoState:
    fifo: Fifo
    as_of_ns: int
    records: int = 0
    applied: int = 0
    last_applied_at: int = 0

    @property
    def now_us(self) -> int:
        return self.as_of_ns // 1000

    def state_of(self, e: Entry) -> str:
        now = self.now_us
        if e.worked_until > now:
            return "worked-on"
        return "due" if e.key_start_date <= now else "waiting"

    def sorted_entries(self) -> list[Entry]:
        return sorted(self.fifo.entries.values(), key=lambda e: (e.domain, e.priority, e.key_start_date, e.uri))

    def counts_by_state(self) -> dict[str, int]:
        out = {"due": 0, "waiting": 0, "worked-on": 0}
        for e in self.fifo.entries.values():
            out[self.state_of(e)] += 1
        return out

    def canonical_lines(self):
        now = self.now_us
        for e in self.sorted_entries():
            worked = e.worked_until if e.worked_until > now else 0
            yield b"%s\t%s\t%d\t%d\t%d\t%d\n" % (e.uri, e.domain, e.priority, e.key_start_date, e.timestamp, worked)
        for uri in sorted(self.fifo.tombstones):
            yield b"%s\t-\t%d\n" % (uri, self.fifo.tombstones[uri])

    def digest(self) -> str:
        h = hashlib.sha256()
        for line in self.canonical_lines():
            h.update(line)
        return h.hexdigest()


class FifoReplay:
    def __init__(self, as_of_ns: int, *, fifo: Fifo | None = None):
        f = fifo if fifo is not None else Fifo()
        f.bulk()
        self.state = FifoState(f, as_of_ns)
        self.findings: list[Finding] = []

    def _refuse(self, rec: Change, what: str) -> None:
        self.findings.append(Finding(ERROR, "FJJ-NOT-APPLIED", f"{rec.op} of {_text(rec.uri)!r}: {what}; the server "
                                     "journals only changes it applied", path=rec.path, offset=rec.offset,
                                     record_index=rec.index, verdict=Verdict.INVALID_HISTORY))

    def apply(self, rec: Change) -> None:
        s = self.state
        s.records += 1
        if rec.applied_at < s.last_applied_at:
            self.findings.append(Finding(WARNING, "FJJ-TIME-BACKWARDS", f"applied at "
                                         f"{format_unix_ns(rec.applied_at * 1000)}, before the previous record "
                                         f"({format_unix_ns(s.last_applied_at * 1000)})", path=rec.path,
                                         offset=rec.offset, record_index=rec.index))
        s.last_applied_at = max(s.last_applied_at, rec.applied_at)
        f = s.fifo
        if rec.op == OP_SET:
            out = f.set(rec.uri, rec.priority, rec.key_start_date, rec.timestamp, overwrite=overwrite(rec.flags))
            if out in (Outcome.ADDED, Outcome.UPDATED):
                s.applied += 1
            else:
                self._refuse(rec, f"outcome {out.value}")
        elif rec.op == OP_DELETE:
            out = f.delete(rec.uri, rec.timestamp, complete=overwrite(rec.flags))
            if out in (Outcome.DELETED, Outcome.TOMBSTONED):
                s.applied += 1
            else:
                self._refuse(rec, f"outcome {out.value}")
        elif rec.op == OP_MARK:
            e = f.get(rec.uri)
            if e is None or e.timestamp != rec.timestamp:
                self._refuse(rec, "no entry of that timestamp to mark worked on")
                return
            out = f.mark(rec.uri, rec.applied_at + rec.timeout)
            if out is Outcome.MARKED:
                s.applied += 1
            else:
                self._refuse(rec, f"outcome {out.value}")
        else:
            self.findings.append(Finding(ERROR, "FJJ-BAD-REQUEST", f"function {rec.function} with flags "
                                         f"0x{rec.flags:04x} is not a change the server journals", path=rec.path,
                                         offset=rec.offset, record_index=rec.index, verdict=Verdict.INVALID_HISTORY))

    def finish(self) -> FifoState:
        return self.state
