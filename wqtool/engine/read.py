"""The one entry point of every reading command and of the Python API: logs in, finished reports out.

    results = read(entries, opts, want=Want.VERIFY, live=False, runner=None, max_findings=100)

``entries`` are what ``format.resolve_each`` gives (logs, and PATHs that named no log). For each entry ``read``
returns one ``Result``, in order: its log, its settled report (``--as-of last|first`` made the log's own time,
a torn tail a live writer is still appending turned into the format's in-flight note, ``engine.live``), and what
``want`` asked for beyond the report (the replayed state, the record statistics), or the error that stopped it.
The CLI's commands (verify, replay, stats) and ``wqtool.api`` all call it, so a log gets the same verdict from
both.

Where the work runs is the ``runner``'s business: ``LOCAL`` (this process, each format's fastest path), or a
runner another layer supplies with the same three methods (``wqtool.spark.fleet.SparkRunner``: the same reports,
computed on Spark). Nothing here prints, and nothing here knows an exit code.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from ..errors import WqError
from .format import Log, Options, Unresolved, settle_as_of
from .live import LiveWatch
from .run import LogReport


class Want(str, enum.Enum):
    """What a read produces beyond the verdict: ``VERIFY`` findings and counts; ``REPLAY`` the replayed state too;
    ``STATS`` the state and the record statistics (``engine.stats.RecordStats``); ``SERIES`` all of that and the
    time series (``engine.series.Series``: report's charts), in one pass (this process only: the format's own,
    ``Passes.series``, else the reference pass)."""

    VERIFY = "verify"
    REPLAY = "replay"
    STATS = "stats"
    SERIES = "series"


@dataclass
class Reading:
    """What ``read`` returns: one ``Result`` per entry, in order (iterable), and for ``Want.STATS`` the distinct
    jobs over every log read."""

    results: list["Result"]
    total_jobs: int = 0

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


@dataclass
class Result:
    """One entry's outcome: a log's settled ``report`` (and ``stats`` for ``Want.STATS``), or the ``error`` that
    left it without one (a PATH that names no log, a log that could not be read)."""

    root: str
    log: Log | None = None
    report: LogReport | None = None
    error: BaseException | None = None
    stats: Any = None                   # RecordStats (Want.STATS, Want.SERIES)
    series: Any = None                  # engine.series.Series (Want.SERIES)
    jobs: int | None = None             # distinct jobs (Want.STATS)
    as_of_ns: int | None = None         # the time the log was read at (--as-of settled for this log)
    extra: dict = field(default_factory=dict)   # what a caller's ``measure`` hook added (verify --metrics-file)

    @property
    def ok(self) -> bool:
        return self.error is None

    def view(self):
        """The format's view of the replayed state (``Want.REPLAY`` / ``STATS``)."""
        return self.log.fmt.state_view(self.report.state, self.log.data)


class Runner(Protocol):
    """Where the reading runs. Each method gets the logs (``Log``) with their settled options and returns one
    entry per log, in order: its result, or the error (``WqError`` / ``OSError``) that stopped that log alone. An
    error raised out of the method itself (no Spark session, say) stops the whole read."""

    def verify(self, logs: Sequence[Log], opts: Sequence[Options], *, max_findings: int | None,
               workers: int | None) -> list[LogReport | BaseException]: ...

    def replay(self, logs: Sequence[Log], opts: Sequence[Options], *, limit: int | None,
               summary: bool) -> list[LogReport | BaseException]: ...

    def stats(self, logs: Sequence[Log], opts: Sequence[Options], *,
              union: bool) -> tuple[list[tuple[LogReport, Any, int] | BaseException], int | None]:
        """Per log (its report, ``RecordStats``, distinct jobs), and the distinct jobs over all logs (None: the
        caller counts them from the statistics: their ``jobs`` sets when ``union``, else the sum)."""


def each(fn: Callable[..., Any], *columns: Sequence) -> list:
    """``fn`` over the rows of ``columns``; a row whose call raises ``WqError`` / ``OSError`` gets the error
    instead of a result (one bad log never hides the others)."""
    out: list = []
    for row in zip(*columns):
        try:
            out.append(fn(*row))
        except (WqError, OSError) as exc:
            out.append(exc)
    return out


class LocalRunner:
    """This process: each format's fastest path (the C kernels where they exist)."""

    def verify(self, logs, opts, *, max_findings=None, workers=None):
        return each(lambda lg, o: lg.fmt.passes.verify([lg.data], o, max_findings=max_findings, workers=workers).logs[0],
                    logs, opts)

    def replay(self, logs, opts, *, limit=None, summary=False):
        return each(lambda lg, o: lg.fmt.passes.run_log(lg.data, o, limit=limit), logs, opts)

    def stats(self, logs, opts, *, union=True):
        def one(lg, o):
            report, st = lg.fmt.passes.stats_log(lg.data, o, ids=union)
            return report, st, st.job_count()
        return each(one, logs, opts), None

    def series(self, logs, opts, *, limit=None):
        from .series import series_log      # report only (the format's fast pass, else the reference)
        return each(lambda lg, o: series_log(lg.fmt, lg.data, o, limit=limit), logs, opts)


LOCAL = LocalRunner()


def read(entries: Sequence[Log | Unresolved], opts: Options, *, want: Want = Want.VERIFY, live: bool = False,
         runner: Runner | None = None, max_findings: int | None = None, workers: int | None = None,
         summary: bool = False, measure: Callable[[Log, Options], tuple[LogReport, dict]] | None = None,
         on_error: Callable[[BaseException], None] | None = None) -> Reading:
    """Read every entry (see the module's doc). ``max_findings``: findings kept per report (all are counted);
    ``workers``: processes for one large log (local verify); ``summary``: replay without shipping each job (a
    remote runner); ``measure(log, opts)``: read a log yourself, returning its report and extra facts (verify
    --metrics-file), instead of the runner; ``on_error(exc)``: told of each entry's error, in entry order."""
    run = runner if runner is not None else LOCAL
    results: list[Result] = []
    pending: list[tuple[Result, Log, Options, LiveWatch]] = []
    for e in entries:
        if isinstance(e, Unresolved):
            results.append(Result(e.path, error=e.error))
            continue
        r = Result(e.root, log=e)
        results.append(r)
        try:
            o = settle_as_of(e, opts)
            r.as_of_ns = o.as_of_ns
            pending.append((r, e, o, LiveWatch(e, live=live)))   # watched from before the read
        except (WqError, OSError) as exc:
            r.error = exc
    logs, os_ = [p[1] for p in pending], [p[2] for p in pending]
    total: int | None = None
    if not pending:
        outs: list = []
    elif measure is not None:
        outs = each(measure, logs, os_)
    elif want is Want.REPLAY:
        outs = run.replay(logs, os_, limit=max_findings, summary=summary)
    elif want is Want.STATS:
        outs, total = run.stats(logs, os_, union=len(logs) > 1)
    elif want is Want.SERIES:
        outs = LOCAL.series(logs, os_, limit=max_findings)
    else:
        outs = run.verify(logs, os_, max_findings=max_findings, workers=workers)
    for (r, _, _, watch), out in zip(pending, outs):
        if isinstance(out, BaseException):
            r.error = out
        elif measure is not None:      # its extra facts may hold the record statistics (Want.STATS)
            r.report, r.extra = watch.settle(out[0]), out[1]
            r.stats = r.extra.pop("stats", None)
            r.jobs = None if r.stats is None else r.stats.job_count()
        elif want is Want.STATS:
            r.report, r.stats, r.jobs = watch.settle(out[0]), out[1], out[2]
        elif want is Want.SERIES:
            r.report, r.stats, r.series = watch.settle(out[0]), out[1], out[2]
        else:
            r.report = watch.settle(out)
    if on_error is not None:
        for r in results:
            if r.error is not None:
                on_error(r.error)
    if total is None and want is Want.STATS:
        done = [r for r in results if r.error is None]
        if len(done) > 1:       # a union over logs: the same job in two logs counts once
            total = len(set().union(*(r.stats.jobs for r in done)))
        else:
            total = sum(r.jobs for r in done)
    return Reading(results, total or 0)
