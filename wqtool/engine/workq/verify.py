"""verify: framing, CRC and replay-level checks over one or more logs; findings are data."""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Iterator, Sequence

from ...errors import InputError
from ...offsets import printable
from .. import progress
from ..fileio import FileView
from ..findings import ERROR, Finding, Fold
from ..run import FindingSink, LogReport, ReplayPass, VerifyReport, files_size
from ..stats import RecordStats
from .codes import REPLAY_CODES
from .fastreplay import Bail, FastResult, fast_run
from .model import Record
from .reader import LogSet, RecordReader
from .replay import ReplayState, WorkqReplay
from ...formats.workq import CmdType

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

    ``engine``: "auto" runs the kernel (fastreplay.py: C, through damage) and falls back to the reference path
    (reader + replay state machine) where the kernel cannot take the log (no C kernel, fields beyond its table); "reference" and "fast" force
    one of them (tests compare the two). ``workers`` > 1 splits the kernel's work by job over processes
    (only without ``state``).
    """
    if engine != "reference":
        try:
            res = fast_run(log, as_of_ns, keep=state, nparts=workers, limit=limit, through=True)
        except Bail as exc:
            if engine == "fast":
                raise
            if exc.handed_back:
                progress.begin(progress.REFERENCE_PASS)
        else:
            return fast_report(log, res, limit)
    run = LogRun(log, as_of_ns, limit=limit)
    for _ in run.events():
        pass
    return run.report


def fast_report(log: LogSet, res: FastResult, limit: int | None) -> LogReport:
    """The LogReport of a kernel pass, as the reference pass would have filled it."""
    report = LogReport(root=log.root, segments=res.segments, records=res.records, bytes=res.bytes, state=res.state)
    sink = FindingSink(report, limit)
    for f in res.findings:
        sink.add(f)
    for (code, severity), n in res.overflow.items():  # counted by the kernel, not kept
        report.counts[code] += n
        report.severities[severity] += n
    sink.verdicts |= res.verdicts                     # (what the report needs of them)
    for code, fold in res.folds.items():              # the as-of findings among them: their summary
        report.folds.setdefault(code, Fold(code, fold.severity)).merge(fold)
    if res.last_good is not None:
        report.last_good = res.last_good
    sink.close()
    return report


_LABELS = {int(c): c.label for c in CmdType}


def fast_stats(log: LogSet, as_of_ns: int, *, ids: bool = True) -> tuple[LogReport, RecordStats] | None:
    """``stats`` of one log in the kernel's one pass (replay + the facts of every record), or None when the
    kernel hands the log back (then the reference pass: ``Passes.stats_log``'s default)."""
    try:
        res = fast_run(log, as_of_ns, keep=True, limit=0, stats=True, through=True)
    except Bail:
        return None
    return fast_report(log, res, 0), scan_stats(res.records, res.stats, ids=ids)


def scan_stats(records: int, s, *, ids: bool) -> RecordStats:
    """The ``RecordStats`` of a kernel pass's ``ScanStats`` (``records``: the records it read); ``ids``: keep the
    job ids (for a union over logs), else only their count."""
    recs, nbytes = s.records(), s.bytes()
    return RecordStats(records=records, bytes=sum(nbytes),
                       by_type=Counter({_LABELS[c]: n for c, n in enumerate(recs) if n}),
                       bytes_by_type=Counter({_LABELS[c]: nbytes[c] for c, n in enumerate(recs) if n}),
                       first_ns=s.first_ns(), last_ns=s.last_ns(), jobs=s.ids() if ids else set(),
                       distinct=None if ids else s.distinct())


#: payload rendering -> the C encoder's mode
_PAYLOAD_MODES = {"none": 0, "hex": 1, "base64": 2, "text": 3}
_STYLES = {"jsonl": (b"", b"\n"), "json": (b",\n  ", b"")}


def fast_dump(log: LogSet, as_of_ns: int, *, style: str, payload: str, limit: int | None = None):
    """``dump -o jsonl|json`` of an intact log: the kernel verifies it (its verdict), then the C encoder writes
    every record's row straight from the segments (``_kernel.encode_records``: record_to_jsonable + json.dumps,
    proven equal by tests/engine/workq/test_rows_c.py). (LogReport, chunks of (rows, text)), or None: no C
    kernel, a log with an error (dump prints errors among its rows: the reference pass does that), or an unknown
    style or payload mode."""
    from . import fastreplay
    if fastreplay.KERNEL != "c" or style not in _STYLES or payload not in _PAYLOAD_MODES:
        return None
    try:
        res = fast_run(log, as_of_ns, keep=False, nparts=default_workers(log), limit=0)
    except Bail:
        return None
    report = fast_report(log, res, 0)
    if report.severities.get(ERROR):
        return None
    return report, _Encoded(log, res.sizes, style, _PAYLOAD_MODES[payload], limit)


class _Encoded:
    """The rows of an intact log, in chunks of (rows, text) (``Dump.encoded_records``); ``stopped``: (path,
    offset) of the first record not encoded when ``limit`` rows were written before the log's end, else None."""

    def __init__(self, log: LogSet, sizes: list[int], style: str, mode: int, limit: int | None):
        self.log, self.sizes, self.style, self.mode, self.limit = log, sizes, style, mode, limit
        self.stopped: tuple[str, int] | None = None

    def __iter__(self) -> Iterator[tuple[int, str]]:
        from . import _kernel     # (`from ._kernel import x` reads as an import of wqtool to import-linter)
        encode_records = _kernel.encode_records
        sep, term = _STYLES[self.style]
        left = (1 << 62) if self.limit is None else self.limit
        index = 0
        for seg, size in zip(self.log.segments, self.sizes):
            if size <= 8:                  # no records (the kernel read the header, or that there is none)
                continue
            if left <= 0:
                self.stopped = (seg.path, 8)
                return
            # a byte of the path that is not UTF-8 as \xff (offsets.printable), as every JSON writer shows it
            path_json = json.dumps(printable(seg.path), ensure_ascii=False).encode("utf-8")
            with FileView(seg) as sd:
                if sd.size < size:
                    raise InputError("the log changed while it was read (the segment is shorter now)", path=seg.path)
                pos = 8
                while pos < size and left > 0:
                    try:
                        text, pos, index, n = encode_records(sd.data, pos, size, path_json, index, self.mode, sep,
                                                             term, min(left, 4096), 1 << 20)
                    except ValueError as exc:
                        raise InputError(f"the log changed while it was read: {exc}", path=seg.path) from None
                    left -= n
                    yield n, text
                if pos < size:
                    self.stopped = (seg.path, pos)
                    return


def replay_findings(log: LogSet, as_of_ns: int, *, keep_max: int = 100_000) -> Iterator[Finding]:
    """The findings of ``run_log(log)`` that only the replay of the whole log raises (``REPLAY_CODES``: checks on
    decoded records that depend on the job's earlier records, and the closing notes), in ``run_log``'s order; the
    others (discovery, framing, CRC, payload decoding) are what a reader of one segment reports.

    The hot kernel when it takes the log and its findings fit in ``keep_max``; else the reference pass, streamed
    (memory: the replayed state, no finding kept).
    """
    try:
        res = fast_run(log, as_of_ns, keep=False, limit=keep_max, through=True)
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
    """Processes for verifying ``log``: 2 for logs of PARALLEL_MIN_BYTES and more when a second core is idle (the
    one-minute load average leaves one free), else 1: on a busy machine the second process only waits for a core
    and adds its start-up (the report is the same either way)."""
    if log_size(log) < PARALLEL_MIN_BYTES:
        return 1
    return 2 if idle_cores() >= 1 else 1


def idle_cores() -> float:
    """Cores this process may use minus the one-minute load average (0 where that is unknown)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:       # not Linux
        cores = os.cpu_count() or 1
    try:
        return cores - os.getloadavg()[0]
    except OSError:
        return 0.0


PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def log_size(log: LogSet) -> int:
    """Bytes in the log's segments now (missing or unreadable ones count 0: the reader reports them)."""
    return files_size(s.path for s in log.segments)
