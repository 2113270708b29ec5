"""verify: framing, CRC and replay-level checks over one or more logs; findings are data."""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from ..findings import Finding
from ..run import FindingSink, LogReport, ReplayPass, VerifyReport, files_size
from .codes import REPLAY_CODES
from .fastreplay import Bail, fast_run
from .model import Record
from .reader import LogSet, RecordReader
from .replay import ReplayState, WorkqReplay

class LogRun(ReplayPass):
    """One pass over one workq log (``ReplayPass``): verify, replay, dump and stats all drive this one loop."""

    record_cls = Record

    def __init__(self, log: LogSet, as_of_ns: int, *, limit: int | None = None, **reader_kwargs):
        super().__init__(log.root, RecordReader(log, **reader_kwargs), WorkqReplay(as_of_ns), limit)

    def finish(self) -> tuple[ReplayState, list[Finding]]:
        state = self.replay.finish()
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing


def run_log(log: LogSet, as_of_ns: int, *, limit: int | None = None, state: bool = True,
            engine: str = "auto", workers: int = 1) -> LogReport:
    """Verify and replay one log; the findings, counts and (with ``state``) the replayed state are returned.

    ``engine``: "auto" runs the hot kernel (fastreplay.py) and falls back to the reference path (reader +
    replay state machine) when the kernel meets anything it does not handle; "reference" and "fast" force
    one of them (tests compare the two). ``workers`` > 1 splits the kernel's work by job over processes
    (only without ``state``).
    """
    if engine != "reference":
        try:
            res = fast_run(log, as_of_ns, keep=state, nparts=workers, limit=limit)
        except Bail:
            if engine == "fast":
                raise
        else:
            report = LogReport(root=log.root, segments=res.segments, records=res.records, bytes=res.bytes,
                               state=res.state)
            sink = FindingSink(report, limit)
            for f in res.findings:
                sink.add(f)
            for (code, severity), n in res.overflow.items():  # counted by the kernel, not kept
                report.counts[code] += n
                report.severities[severity] += n
            sink.close()
            return report
    run = LogRun(log, as_of_ns, limit=limit)
    for _ in run.events():
        pass
    return run.report


def replay_findings(log: LogSet, as_of_ns: int, *, keep_max: int = 100_000) -> Iterator[Finding]:
    """The findings of ``run_log(log)`` that only the replay of the whole log raises (``REPLAY_CODES``: checks on
    decoded records that depend on the job's earlier records, and the closing notes), in ``run_log``'s order; the
    others (discovery, framing, CRC, payload decoding) are what a reader of one segment reports.

    The hot kernel when it takes the log and its findings fit in ``keep_max``; else the reference pass, streamed
    (memory: the replayed state, no finding kept).
    """
    try:
        res = fast_run(log, as_of_ns, keep=False, limit=keep_max)
    except Bail:
        res = None
    if res is not None and not res.overflow:
        for f in res.findings:
            if f.code in REPLAY_CODES:
                yield f
        return
    for ev in LogRun(log, as_of_ns, limit=0).events():
        if ev.__class__ is not Record and ev.code in REPLAY_CODES:
            yield ev


def verify(logs: Sequence[LogSet], as_of_ns: int, *, max_findings: int | None = None,
           workers: int | None = None) -> VerifyReport:
    """Verify logs (no replayed state kept). ``workers`` None: 2 processes for logs over 64 MiB."""
    return VerifyReport([run_log(log, as_of_ns, limit=max_findings, state=False,
                                 workers=default_workers(log) if workers is None else workers) for log in logs])


def default_workers(log: LogSet) -> int:
    """Processes for verifying ``log``: 2 for logs of PARALLEL_MIN_BYTES and more (on 2+ cores), else 1."""
    return min(2, os.cpu_count() or 1) if log_size(log) >= PARALLEL_MIN_BYTES else 1


PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def log_size(log: LogSet) -> int:
    """Bytes in the log's segments now (missing or unreadable ones count 0: the reader reports them)."""
    return files_size(s.path for s in log.segments)
