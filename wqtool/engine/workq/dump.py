"""Record selection for dump (type, job, record time, offset range)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from ...errors import UsageError
from ...formats.workq import CmdType
from .model import Record

_BY_LABEL = {c.label: c for c in CmdType}


def _parse_labels(values: list[str] | None, by_label: dict, what: str) -> frozenset | None:
    """--type values (repeatable, comma-separated, case- and _/- insensitive) -> the members they name."""
    if not values:
        return None
    out = set()
    for v in values:
        for part in v.split(","):
            part = part.strip().lower().replace("_", "-")
            if not part:
                continue
            if part not in by_label:
                raise UsageError(f"--type: unknown {what} {part!r} (expected one of {', '.join(by_label)})")
            out.add(by_label[part])
    return frozenset(out)


def parse_types(values: list[str] | None) -> frozenset[CmdType] | None:
    return _parse_labels(values, _BY_LABEL, "command")


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


def parse_kestrel_ops(values: list[str] | None) -> frozenset | None:
    from ...formats.kestrel import Opcode
    return _parse_labels(values, {o.name.lower().replace("_", "-"): o for o in Opcode}, "Kestrel opcode")


@dataclass(slots=True, frozen=True)
class RecordFilter:
    types: frozenset[CmdType] | None = None
    jobs: frozenset[bytes] | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None

    def match_kestrel(self, rec) -> bool:
        if self.from_offset is not None and rec.offset < self.from_offset:
            return False
        if self.to_offset is not None and rec.offset >= self.to_offset:
            return False
        return self.types is None or rec.op in self.types

    def match(self, rec: Record) -> bool:
        if self.from_offset is not None and rec.offset < self.from_offset:
            return False
        if self.to_offset is not None and rec.offset >= self.to_offset:
            return False
        c = rec.command
        if self.types is not None and (c is None or c.cmd not in self.types):
            return False
        if self.jobs is not None and (c is None or c.job_id not in self.jobs):
            return False
        if self.since_ns is not None or self.until_ns is not None:
            t = rec.time.unix_ns
            if self.since_ns is not None and t < self.since_ns:
                return False
            if self.until_ns is not None and t >= self.until_ns:
                return False
        return True
