"""verify: framing, CRC and replay-level checks over one or more logs; findings are data."""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..exitcodes import ExitCode
from .fastreplay import Bail, fast_run
from .findings import REPLAY_CODES, Finding
from .model import Record
from .reader import LogSet, RecordReader
from .replay import ReplayState, WorkqReplay

# Which class wins when a log has several: corruption, then impossible history, then a torn tail.
_PRECEDENCE = {ExitCode.CORRUPT: 3, ExitCode.INVALID_HISTORY: 2, ExitCode.TORN_TAIL: 1, ExitCode.OK: 0}


def worst_exit(codes) -> ExitCode:
    best = ExitCode.OK
    for c in codes:
        c = ExitCode(c)
        if _PRECEDENCE.get(c, 4) > _PRECEDENCE.get(best, 4):
            best = c
    return best


@dataclass(slots=True)
class LogReport:
    root: str
    segments: int = 0
    records: int = 0
    bytes: int = 0
    findings: list[Finding] = field(default_factory=list)   # the first max_findings, in file order
    counts: Counter = field(default_factory=Counter)          # every finding, by code
    severities: Counter = field(default_factory=Counter)
    exit_code: ExitCode = ExitCode.OK
    last_good: tuple[str, int] | None = None  # torn tail: (newest segment, offset to truncate at)
    state: ReplayState | None = None

    @property
    def omitted(self) -> int:
        return sum(self.counts.values()) - len(self.findings)


@dataclass(slots=True)
class VerifyReport:
    logs: list[LogReport]

    @property
    def exit_code(self) -> ExitCode:
        return worst_exit(lr.exit_code for lr in self.logs)


class FindingSink:
    """Counts every finding, keeps the first ``limit`` (None = all), tracks the exit class."""

    def __init__(self, report: LogReport, limit: int | None):
        self.report = report
        self.limit = limit
        self.exit_classes: set[int] = set()

    def add(self, f: Finding) -> None:
        r = self.report
        r.counts[f.code] += 1
        r.severities[f.severity] += 1
        if f.exit_class:
            self.exit_classes.add(f.exit_class)
            if f.exit_class == ExitCode.TORN_TAIL:
                r.last_good = (f.path, f.last_good_offset)
        if self.limit is None or len(r.findings) < self.limit:
            r.findings.append(f)

    def close(self) -> None:
        self.report.exit_code = worst_exit(self.exit_classes)


class ReplayPass:
    """One pass over one log of either format: the reader feeds the replay state machine; every finding is
    counted. ``events()`` yields records and findings in file order (each replay finding right after the record
    that caused it, the closing findings last); once it is exhausted, ``report`` holds the counts, exit code
    and replayed state. A format gives its reader, replay, record class and ``finish``."""

    record_cls: type

    def __init__(self, root: str, reader, replay, limit: int | None):
        self.report = LogReport(root=root)
        self.sink = FindingSink(self.report, limit)
        self.reader = reader
        self.replay = replay

    def finish(self) -> tuple[object, list[Finding]]:
        """The replayed state and the findings that close the pass."""
        raise NotImplementedError

    def events(self):
        add = self.sink.add
        replay = self.replay
        rfind = replay.findings
        apply = replay.apply
        record_cls = self.record_cls
        for ev in self.reader.events():
            if ev.__class__ is record_cls:
                apply(ev)
                yield ev
                if rfind:
                    for f in rfind:
                        add(f)
                        yield f
                    rfind.clear()
            else:
                add(ev)
                yield ev
        state, closing = self.finish()
        for f in closing:
            add(f)
            yield f
        self.sink.close()
        r = self.report
        r.segments = self.reader.segments_read
        r.records = self.reader.records
        r.bytes = self.reader.bytes
        r.state = state


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
    out = []
    for log in logs:
        w = workers
        if w is None:
            w = min(2, os.cpu_count() or 1) if log_size(log) >= PARALLEL_MIN_BYTES else 1
        out.append(run_log(log, as_of_ns, limit=max_findings, state=False, workers=w))
    return VerifyReport(out)


PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def log_size(log: LogSet) -> int:
    """Bytes in the log's segments now (missing or unreadable ones count 0: the reader reports them)."""
    total = 0
    for s in log.segments:
        try:
            total += os.path.getsize(s.path)
        except OSError:
            pass
    return total
