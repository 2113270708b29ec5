"""The Python API: ``wqtool.open(path)`` for any registered format (workq, Kestrel, ...).

    import wqtool
    log = wqtool.open("/var/lib/workq/cmdlog")               # format="auto": detected, as the CLI does
    for rec in log.records():                                # dicts: the fields of `wqtool dump -o jsonl`
        print(rec["offset"], rec["cmd"])
    report = log.verify(as_of="2026-11-21T23:30:00Z")        # or a datetime, "last", "now", "-2h"
    report.verdict, report.exit_code, report.findings
    state = log.replay(as_of=datetime(2026, 11, 21, 23, 30, tzinfo=timezone.utc))
    state.digest, state.rows, state.counts

Times are ``datetime`` objects (a naive one is UTC) or strings in any form the CLI's ``--as-of`` takes (RFC 3339,
``2026-11-21 23:30:00``, ``now``, ``-2h``, ``last`` / ``first``: the log's newest / first record's time) — never
raw nanoseconds. Built on the format registry (``wqtool.engine.format``): what a format registers is readable
here, with no change to this module.
"""
from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from .engine import format as registry
from .engine.findings import Finding, Verdict
from .engine.format import AS_OF_WORDS, Options
from .engine.instant import from_datetime, parse_instant
from .engine.dump import Records, Told, selection
from .engine.read import Want, read
from .engine.run import LogReport
from .errors import UsageError
from .exitcodes import resolve
from .render.outcome import Resolved
from .render.report import log_json


def open(path: str | os.PathLike, format: str = "auto", **options: Any) -> "Log":  # noqa: A001 — wqtool.open
    """The one log at ``path`` (a log directory, a queue directory with one queue, a segment / journal file).
    ``format``: "auto" (detected as the CLI does) or a registered format's name. ``options``: the format's own
    settings (Kestrel: ``kestrel_version``, ``keep_open``, ``queue``). A path naming several logs (a Kestrel
    directory of several queues) is a ``UsageError``: use ``open_all``."""
    logs = open_all(path, format=format, **options)
    if len(logs) != 1:
        raise UsageError(f"{len(logs)} logs here ({', '.join(lg.name for lg in logs)}): use wqtool.open_all, or "
                         "pass queue=... (Kestrel)", path=os.fspath(path))
    return logs[0]


def open_all(*paths: str | os.PathLike, format: str = "auto", **options: Any) -> list["Log"]:
    """Every log behind ``paths`` (each as ``open``)."""
    if not paths:
        raise UsageError("no path given")
    fmt = format.lower()
    if fmt != "auto":
        registry.get(fmt)
    opts = Options(parse_instant("now"), settings={k: v for k, v in options.items() if v is not None})
    return [Log(lg, opts) for lg in registry.resolve([os.fspath(p) for p in paths], fmt, opts)]


def instant(as_of: "_dt.datetime | str | None") -> int | str:
    """A time argument → Unix ns (or the word "last" / "first", settled per log)."""
    if as_of is None:
        return parse_instant("now")
    if isinstance(as_of, _dt.datetime):
        return from_datetime(as_of)
    if isinstance(as_of, str):
        if as_of.strip().lower() in AS_OF_WORDS:
            return as_of.strip().lower()
        try:
            return parse_instant(as_of)
        except ValueError as exc:
            raise ValueError(f"as_of: {exc}") from None
    raise TypeError(f"as_of: expected a datetime or a string (RFC 3339, 'now', 'last', ...), got "
                    f"{type(as_of).__name__} (raw numbers are ambiguous: seconds or nanoseconds?)")


@dataclass(frozen=True)
class Report:
    """What ``verify`` found in one log."""

    root: str
    verdict: Verdict              # CLEAN, TORN_TAIL, CORRUPT, INVALID_HISTORY (.label: "clean", "torn tail", ...)
    exit_code: int                # what `wqtool verify` exits with for this log
    findings: list[Finding]       # every finding, in file order (.code, .severity, .path, .offset, .message)
    counts: dict[str, int]        # findings by code
    records: int
    segments: int
    bytes: int
    _report: LogReport = field(repr=False, compare=False)

    @property
    def clean(self) -> bool:
        return self.verdict == Verdict.CLEAN

    def to_dict(self) -> dict:
        """The log's entry of ``wqtool verify -o json``."""
        return log_json(self._report, Resolved(*resolve([self.verdict])), all_findings=True)


@dataclass(frozen=True)
class State:
    """The state a log encodes at ``as_of`` (``wqtool replay``)."""

    root: str
    as_of: _dt.datetime
    digest: str                   # the sha256 `wqtool replay` prints
    rows: list[dict]              # one row per job / item, in the digest's order (`replay -o json`'s list)
    counts: dict[str, int]        # live jobs / items by state
    summary: dict                 # `replay -o json` without the rows
    verdict: Verdict
    findings: list[Finding]


class Log:
    """One log of any registered format (``wqtool.open``)."""

    def __init__(self, log: registry.Log, opts: Options):
        self._log = log
        self._opts = opts

    @property
    def format(self) -> str:
        return self._log.fmt.name

    @property
    def name(self) -> str:
        return self._log.fmt.passes.log_name(self._log.data)

    @property
    def files(self) -> list[str]:
        return self._log.files

    def __repr__(self) -> str:
        return f"<wqtool.Log {self.format} {self.name!r}>"

    def _options(self, as_of) -> Options:
        """The read's options: a time, or ``last`` / ``first`` (settled for this log by ``engine.read``)."""
        t = instant(as_of)
        if isinstance(t, str):
            return replace(self._opts, as_of_ns=parse_instant("now"), as_of_word=t)
        return replace(self._opts, as_of_ns=t, as_of_word=None)

    def _read(self, as_of, want: Want, live: bool):
        [r] = read([self._log], self._options(as_of), want=want, live=live)
        if r.error is not None:
            raise r.error
        return r

    def records(self, payload: str = "base64") -> Iterator[dict]:
        """Every record, in log order, as the row ``wqtool dump -o jsonl`` prints (``payload``: base64, hex,
        text or none). Damage is skipped here — ``verify()`` reports it."""
        fmt = self._log.fmt
        if payload not in ("base64", "hex", "text", "none"):
            raise ValueError(f"payload: expected base64, hex, text or none, got {payload!r}")
        view = fmt.record_view
        for item in Records(self._log, self._options(None), selection(fmt)):
            if item.__class__ is not Told:
                yield view.row(item, payload)

    def verify(self, as_of: "_dt.datetime | str | None" = None, *, live: bool = False) -> Report:
        """Framing, checksums and replay-level history, as ``wqtool verify`` (at ``as_of``; default now). A log
        being written (a held lock, a process holding it open, a file that changes during the read; ``live``:
        the caller knows it is) has its partial last record reported in flight, as the CLI reports it."""
        lr = self._read(as_of, Want.VERIFY, live).report
        return Report(lr.root, lr.verdict, resolve([lr.verdict])[0], list(lr.findings), dict(lr.counts),
                      lr.records, lr.segments, lr.bytes, lr)

    def replay(self, as_of: "_dt.datetime | str | None" = None, *, live: bool = False) -> State:
        """The state the log encodes at ``as_of`` (default now), as ``wqtool replay``."""
        r = self._read(as_of, Want.REPLAY, live)
        lr, view = r.report, r.view()
        summary = view.summary()
        ns = r.as_of_ns
        when = _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.timezone.utc).replace(
            microsecond=(ns % 1_000_000_000) // 1000)
        return State(lr.root, when, view.digest(), list(view.rows()), view.counts_by_state(), summary, lr.verdict,
                     list(lr.findings))


__all__ = ["open", "open_all", "Log", "Report", "State"]
