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
from dataclasses import dataclass, field
from typing import Any, Iterator

from .engine import format as registry
from .engine.findings import Finding, Verdict
from .engine.format import AS_OF_WORDS, Options, settle_as_of
from .engine.instant import from_datetime, parse_instant
from .engine.run import LogReport
from .errors import UsageError
from .exitcodes import for_verdict
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
    opts = Options(0, False, {k: v for k, v in options.items() if v is not None})
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
        return log_json(self._report, all_findings=True)


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
        return self._log.fmt.log_name(self._log.data)

    @property
    def files(self) -> list[str]:
        return self._log.files

    def __repr__(self) -> str:
        return f"<wqtool.Log {self.format} {self.name!r}>"

    def _options(self, as_of) -> Options:
        t = instant(as_of)
        if isinstance(t, str):
            o = Options(parse_instant("now"), False, {**self._opts.extra, "_as_of": t})
            return settle_as_of(self._log, o)
        return Options(t, False, dict(self._opts.extra))

    def records(self, payload: str = "base64") -> Iterator[dict]:
        """Every record, in log order, as the row ``wqtool dump -o jsonl`` prints (``payload``: base64, hex,
        text or none). Damage is skipped here — ``verify()`` reports it."""
        fmt = self._log.fmt
        if payload not in ("base64", "hex", "text", "none"):
            raise ValueError(f"payload: expected base64, hex, text or none, got {payload!r}")
        view, cls = fmt.record_view, fmt.record_cls
        for ev in fmt.run(self._log.data, self._options(None), limit=0).events():
            if ev.__class__ is cls:
                yield view.row(ev, payload)

    def verify(self, as_of: "_dt.datetime | str | None" = None) -> Report:
        """Framing, checksums and replay-level history, as ``wqtool verify`` (at ``as_of``; default now)."""
        fmt = self._log.fmt
        [lr] = fmt.verify([self._log.data], self._options(as_of)).logs
        return Report(lr.root, lr.verdict, int(for_verdict(lr.verdict)), list(lr.findings), dict(lr.counts),
                      lr.records, lr.segments, lr.bytes, lr)

    def replay(self, as_of: "_dt.datetime | str | None" = None) -> State:
        """The state the log encodes at ``as_of`` (default now), as ``wqtool replay``."""
        fmt = self._log.fmt
        opts = self._options(as_of)
        lr = fmt.run_log(self._log.data, opts)
        view = fmt.state_view(lr.state, self._log.data)
        summary = view.summary()
        when = _dt.datetime.fromtimestamp(opts.as_of_ns // 1_000_000_000, _dt.timezone.utc).replace(
            microsecond=(opts.as_of_ns % 1_000_000_000) // 1000)
        return State(lr.root, when, view.digest(), list(view.rows()), view.counts_by_state(), summary, lr.verdict,
                     list(lr.findings))


__all__ = ["open", "open_all", "Log", "Report", "State"]
