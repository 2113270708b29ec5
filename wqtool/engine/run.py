"""The format-neutral pass: a format's reader feeds its replay state machine; every finding is counted.

verify, replay, dump and stats of every format drive this one loop (``ReplayPass``); a format supplies its
reader (``events()`` yielding records and findings in file order), its replay (``apply(record)`` and a
``findings`` list it appends to) and ``finish()``.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from . import progress
from .findings import Finding, Fold, QuotaCap, Verdict, present, quota, worst


@dataclass(slots=True)
class LogReport:
    root: str
    segments: int = 0
    records: int = 0
    bytes: int = 0
    findings: list[Finding] = field(default_factory=list)   # kept: the first max_findings of each quota, in file order
    counts: Counter = field(default_factory=Counter)          # every finding, by code
    severities: Counter = field(default_factory=Counter)
    verdict: Verdict = Verdict.CLEAN
    last_good: tuple[str, int] | None = None  # torn tail: (newest file, offset to truncate at)
    state: object | None = None               # the format's replayed state
    folds: dict = field(default_factory=dict)  # as-of codes: code -> Fold (every finding of it, counted)
    limit: int | None = None                  # --max-findings: what ``shown`` shows at most
    reuse: object | None = None               # the format's own pass, whole, for its plans to build on (report)

    @property
    def omitted(self) -> int:
        return sum(self.counts.values()) - len(self.findings)

    def shown(self, *, all_findings: bool = False, as_of: str | None = None) -> tuple[list[Finding], int]:
        """The findings a report shows (``findings.present``: as-of codes folded, the most severe first, at most
        ``limit``) and how many it leaves out."""
        return present(self.findings, self.counts, self.folds, self.limit, all_findings=all_findings, as_of=as_of)


@dataclass(slots=True)
class VerifyReport:
    logs: list[LogReport]

    @property
    def verdict(self) -> Verdict:
        return worst(lr.verdict for lr in self.logs)


class FindingSink:
    """Counts every finding, keeps the first ``limit`` (None = all) of each quota (errors, warnings, notes, as-of
    findings: ``findings.quota``) so that the most severe can be shown first, sums up every as-of finding
    (``LogReport.folds``), tracks the verdict."""

    def __init__(self, report: LogReport, limit: int | None):
        self.report = report
        self.limit = limit
        report.limit = limit
        self.cap = QuotaCap(limit)
        self.verdicts: set[Verdict] = set()

    def add(self, f: Finding) -> None:
        r = self.report
        r.counts[f.code] += 1
        r.severities[f.severity] += 1
        if f.verdict:
            self.verdicts.add(f.verdict)
            if f.verdict == Verdict.TORN_TAIL:
                r.last_good = (f.path, f.last_good_offset)
        q = quota(f)
        if q == "as-of":
            fold = r.folds.get(f.code)
            if fold is None:
                fold = r.folds[f.code] = Fold(f.code)
            fold.take(f.path, f.offset, f.when, f.severity)
        if self.cap.take(f, q):
            r.findings.append(f)

    def close(self) -> None:
        self.report.verdict = worst(self.verdicts)


class ReplayPass:
    """One pass over one log of any format: the reader feeds the replay state machine; every finding is
    counted. ``events()`` yields records and findings in file order (each replay finding right after the record
    that caused it, the closing findings last); once it is exhausted, ``report`` holds the counts, verdict and
    replayed state. A format gives its reader, replay, record class and ``finish``."""

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
        tick = progress.at if progress.active() else None
        n = 0
        for ev in self.reader.events():
            if ev.__class__ is record_cls:
                apply(ev)
                if tick is not None:
                    n += 1
                    if not n & 0xFFF:
                        tick(ev.offset)
                yield ev
                if rfind:
                    for f in rfind:
                        add(f)
                        yield f
                    rfind.clear()
            else:
                add(ev)
                yield ev
        yield from self.close()

    def close(self):
        """End the pass (once the reader is exhausted): yields the closing findings, then fills ``report``."""
        state, closing = self.finish()
        for f in closing:
            self.sink.add(f)
            yield f
        self.sink.close()
        r = self.report
        r.segments = self.reader.segments_read
        r.records = self.reader.records
        r.bytes = self.reader.bytes
        r.state = state


def files_size(paths: Iterable[str]) -> int:
    """Bytes in these files now (missing or unreadable ones count 0: the reader reports them)."""
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total
