"""Record statistics, for every format: counts and bytes per record kind, time span, distinct jobs.

Fed ``RecordFacts`` (``Format.facts(record)``); ``dump --stats`` and ``stats`` print ``to_jsonable()``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..formats._common import format_unix_ns


@dataclass(frozen=True)
class RecordFacts:
    """What filters and statistics need of one record, whatever the format."""

    kind: str                  # the record's kind label (add, complete, addx, ...)
    length: int                # bytes
    time_ns: int | None        # when it was written (or the item's add time); None: not stored
    job: bytes | None = None   # the job / entity it belongs to, if the format has one


@dataclass(slots=True)
class RecordStats:
    records: int = 0
    bytes: int = 0
    by_type: Counter = field(default_factory=Counter)
    bytes_by_type: Counter = field(default_factory=Counter)
    first_ns: int | None = None
    last_ns: int | None = None
    jobs: set = field(default_factory=set)
    distinct: int | None = None      # the distinct jobs when counted without keeping ``jobs`` (Passes.stats_log)

    def job_count(self) -> int:
        return len(self.jobs) if self.distinct is None else self.distinct

    def add(self, f: RecordFacts) -> None:
        self.records += 1
        self.bytes += f.length
        self.by_type[f.kind] += 1
        self.bytes_by_type[f.kind] += f.length
        if f.job is not None:
            self.jobs.add(f.job)
        t = f.time_ns
        if t is not None:
            if self.first_ns is None or t < self.first_ns:
                self.first_ns = t
            if self.last_ns is None or t > self.last_ns:
                self.last_ns = t

    def merge(self, other: "RecordStats") -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.by_type.update(other.by_type)
        self.bytes_by_type.update(other.bytes_by_type)
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
            "jobs": self.job_count(),
        }
