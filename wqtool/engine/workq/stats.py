"""Record statistics: counts and bytes per command type, time span, distinct jobs (dump --stats, stats)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...formats._common import format_unix_ns
from .model import Record


@dataclass(slots=True)
class RecordStats:
    records: int = 0
    bytes: int = 0
    by_type: Counter = field(default_factory=Counter)
    bytes_by_type: Counter = field(default_factory=Counter)
    first_ns: int | None = None
    last_ns: int | None = None
    jobs: set = field(default_factory=set)
    undecodable: int = 0

    def add(self, rec: Record) -> None:
        self.records += 1
        self.bytes += rec.length
        c = rec.command
        label = c.cmd.label if c is not None else "(undecodable)"
        if c is None:
            self.undecodable += 1
        else:
            self.jobs.add(c.job_id)
        self.by_type[label] += 1
        self.bytes_by_type[label] += rec.length
        t = rec.time.unix_ns
        if self.first_ns is None or t < self.first_ns:
            self.first_ns = t
        if self.last_ns is None or t > self.last_ns:
            self.last_ns = t

    def merge(self, other: "RecordStats") -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.by_type.update(other.by_type)
        self.bytes_by_type.update(other.bytes_by_type)
        self.undecodable += other.undecodable
        self.jobs |= other.jobs
        for t in (other.first_ns, other.last_ns):
            if t is None:
                continue
            if self.first_ns is None or t < self.first_ns:
                self.first_ns = t
            if self.last_ns is None or t > self.last_ns:
                self.last_ns = t

    def to_jsonable(self) -> dict:
        return {
            "records": self.records, "bytes": self.bytes,
            "by_type": {k: {"records": v, "bytes": self.bytes_by_type[k]} for k, v in sorted(self.by_type.items())},
            "first_time": None if self.first_ns is None else format_unix_ns(self.first_ns),
            "last_time": None if self.last_ns is None else format_unix_ns(self.last_ns),
            "jobs": len(self.jobs),
        }


class KestrelRecordStats(RecordStats):
    """``RecordStats`` over Kestrel records: records and bytes per opcode, time span from the items' add times
    (legacy ADDs store none), no job ids."""

    __slots__ = ()

    def add(self, rec) -> None:
        self.records += 1
        self.bytes += rec.length
        label = rec.op.label
        self.by_type[label] += 1
        self.bytes_by_type[label] += rec.length
        if rec.add_time:
            t = rec.add_time * 1_000_000
            if self.first_ns is None or t < self.first_ns:
                self.first_ns = t
            if self.last_ns is None or t > self.last_ns:
                self.last_ns = t
