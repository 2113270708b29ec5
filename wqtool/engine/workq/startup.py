"""What ``wqtool serve`` rebuilds from a log directory at start-up, through the engine's own replay.

``replay_directory(dir, as_of_ns)`` runs ``verify.run_log`` (the hot C kernel, falling back to the reference
reader + replay for anything unusual) with the replayed state kept, then reads the payload of every live job
back from its add/schedule record (the replayed state keeps only payload lengths and CRCs) unless asked not to. The caller decides
what the verdict means (the server refuses anything but a clean log, as workq-server refuses to start).
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from ...errors import FormatError, InvalidPayload
from ...formats._common import crc32c
from ..fileio import FileView
from ..findings import Finding, Verdict
from ..run import LogReport
from .fastpath import _uvarint, decode_payload
from .reader import Segment, discover
from .replay import ReplayState
from .verify import run_log


@dataclass(slots=True)
class Replayed:
    report: LogReport
    state: ReplayState | None
    payloads: dict[bytes, bytes] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def verdict(self) -> Verdict:
        return self.report.verdict

    def first_error(self) -> Finding | None:
        for f in self.report.findings:
            if f.severity == "error":
                return f
        return None


def replay_directory(directory: str, as_of_ns: int, *, engine: str = "auto", payloads: bool = True) -> Replayed:
    """Replay the log in ``directory`` as of ``as_of_ns``; payloads of live jobs are loaded (with ``payloads``)
    only for a clean log — ``wqtool serve`` loads none: it reads a body back when a reply needs it
    (payloads.PayloadReader). ``directory`` must exist (a new one holds at least the lock files the caller
    created)."""
    t0 = time.perf_counter()
    (log,) = discover([directory])
    report = run_log(log, as_of_ns, limit=100, state=True, engine=engine)
    out = Replayed(report, report.state)
    if payloads and report.verdict == Verdict.CLEAN and report.state is not None:
        out.payloads = load_payloads(report.state)
    out.elapsed_s = time.perf_counter() - t0
    return out


def load_payloads(state: ReplayState) -> dict[bytes, bytes]:
    """Each live job's payload, read from its add/schedule record (one read-only view per segment) and checked
    against the replayed length and CRC-32C."""
    by_path: dict[str, list] = defaultdict(list)
    for job in state.jobs.values():
        by_path[job.src_path].append(job)
    out: dict[bytes, bytes] = {}
    for path, jobs in by_path.items():
        with FileView(Segment(path, None)) as view:
            data, end = view.data, view.size
            for job in jobs:
                off = job.src_offset
                q, size = _size_at(data, off + 15, end)
                if q + size > end:
                    raise FormatError("record changed while the server read it back", path=path, offset=off)
                cmd = decode_payload(data, q, q + size)
                payload = cmd.payload
                if cmd.job_id != job.id or len(payload) != job.payload_len or crc32c(payload) != job.payload_crc:
                    raise FormatError("the add/schedule record read back does not match the replayed job",
                                      path=path, offset=off)
                out[job.id] = payload
    return out


def _size_at(data, pos: int, end: int) -> tuple[int, int]:
    """The record SIZE varint at ``pos``: (payload start, size); bounded at 10 bytes."""
    try:
        size, q = _uvarint(data, pos, end, "SIZE")
    except InvalidPayload:
        raise FormatError("bad SIZE varint while reading a record back", offset=pos) from None
    return q, size
