"""Record selection for dump, for every format: kinds (--type), jobs, record time, offset range."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from .format import RecordFacts


def parse_kinds(values: list[str] | None, vocabulary, what: str) -> frozenset[str] | None:
    """--type values (repeatable, comma-separated, case- and _/- insensitive) -> the kind labels they name."""
    if not values:
        return None
    known = tuple(vocabulary)
    out = set()
    for v in values:
        for part in v.split(","):
            part = part.strip().lower().replace("_", "-")
            if not part:
                continue
            if part not in known:
                raise UsageError(f"--type: unknown {what} {part!r} (expected one of {', '.join(known)})")
            out.add(part)
    return frozenset(out)


def parse_jobs(values: list[str] | None) -> frozenset[bytes] | None:
    if not values:
        return None
    out = set()
    for v in values:
        for part in v.split(","):
            try:
                out.add(uuid.UUID(part.strip()).bytes)
            except ValueError:
                raise UsageError(f"--job: not a UUID: {part!r}") from None
    return frozenset(out)


@dataclass(slots=True, frozen=True)
class RecordFilter:
    facts: Callable[[object], RecordFacts]
    kinds: frozenset[str] | None = None
    jobs: frozenset[bytes] | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None

    def match(self, rec) -> bool:
        if self.from_offset is not None and rec.offset < self.from_offset:
            return False
        if self.to_offset is not None and rec.offset >= self.to_offset:
            return False
        if self.kinds is None and self.jobs is None and self.since_ns is None and self.until_ns is None:
            return True
        f = self.facts(rec)
        if self.kinds is not None and f.kind not in self.kinds:
            return False
        if self.jobs is not None and f.job not in self.jobs:
            return False
        if self.since_ns is not None or self.until_ns is not None:
            t = f.time_ns
            if t is None:
                return False
            if self.since_ns is not None and t < self.since_ns:
                return False
            if self.until_ns is not None and t >= self.until_ns:
                return False
        return True
