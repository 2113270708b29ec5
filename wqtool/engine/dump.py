"""Record selection for dump, for every format: kinds (--type), jobs, record time, offset range."""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, replace
from typing import Callable

from ..errors import UsageError
from ..offsets import At
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
    from_offset: At | None = None
    to_offset: At | None = None
    #: the log's files in order, by base name: a bound that names a file (``000000001.log@0x194``) is a position
    #: in the log — the records of that file from the offset on, and of every file after it (``for_files``)
    order: dict[str, int] | None = None

    def for_files(self, files: list[str], what: str) -> "RecordFilter":
        """This filter for one log (``files``: its files in order); a bound naming a file it lacks is an error."""
        named = [b for b in (self.from_offset, self.to_offset) if b is not None and b.file is not None]
        if not named:
            return self
        order = {os.path.basename(f): i for i, f in enumerate(files)}
        for b, opt in ((self.from_offset, "--from-offset"), (self.to_offset, "--to-offset")):
            if b is not None and b.file is not None and b.file not in order:
                raise UsageError(f"{opt} {b}: {b.file} is not a file of {what} (its files: "
                                 f"{', '.join(order) or 'none'})")
        return replace(self, order=order)

    def at_or_after(self, path: str | None, offset: int, bound: At) -> bool:
        """``path``@``offset`` is at or after ``bound``."""
        if bound.file is None or self.order is None:
            return offset >= bound.offset
        return (self.order.get(os.path.basename(path or ""), -1), offset) >= (self.order[bound.file], bound.offset)

    def match(self, rec) -> bool:
        if self.from_offset is not None and not self.at_or_after(rec.path, rec.offset, self.from_offset):
            return False
        if self.to_offset is not None and self.at_or_after(rec.path, rec.offset, self.to_offset):
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
