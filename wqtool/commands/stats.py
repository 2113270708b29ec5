from __future__ import annotations

import enum
import os
import sys
from functools import partial
from typing import Annotated, Optional

import typer

from ..engine.format import Log, resolve_each
from ..engine.read import Want, read
from ..errors import UsageError
from ..render.analytics import write_tables_files
from ..render.outcome import Failed, Outcome, error_text, split
from ..render.progress import track
from ..render.stats import stats_doc, write_stats
from . import _spark
from ._options import (QuietOpt, AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion,
                       KestrelVersionOpt, LiveOpt, MasterOpt, Output, ReadPaths, JdbcOpt, RemoteOpt, SettingOpt,
                       SparkConfOpt,
                       options, read_paths, say_error)


class TableFormat(str, enum.Enum):
    csv = "csv"
    parquet = "parquet"


def stats(
    ctx: typer.Context,
    paths: ReadPaths = None,
    jdbc: JdbcOpt = None,
    quiet: QuietOpt = False,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    horizon: Horizon = False,
    live: LiveOpt = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    out_dir: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="Also write each analytics table "
                       "(orth-joblog: status, daily, executors, handlers, latency, lost) to a new DIR, one file per "
                       "table.")] = None,
    out_format: Annotated[TableFormat, typer.Option("--out-format", help="Files of --out.")] = TableFormat.csv,
    chart: Annotated[Optional[str], typer.Option("--chart", metavar="FILE", help="Also draw each log's charts "
                     "into a new FILE: FILE.html a self-contained page (inline SVG and the numbers in tables; "
                     "report's drawings without the findings table), FILE.svg one standalone SVG drawing: records "
                     "per minute by type, live jobs per queue, job states, wait and run times, the format's own "
                     "chart (orth-joblog: rows per trigger day, success / fail / running).")] = None,
    timeline: Annotated[bool, typer.Option("--timeline", help="Also draw each log's records over time in the "
                        "terminal (a row per record type, damage, live jobs, a UTC time axis; the terminal's "
                        "width, COLUMNS when piped; -o table only).")] = False,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> Outcome:
    """Per log and in total: records and bytes per command, time span, jobs per state, queues, damage found.

    Every PATH is read and replayed (at --as-of) once; the replay digest of each log is included, so the
    numbers of two runs — or of the two engines — can be compared. The exit code is verify's (a PATH that
    cannot be read is named in the output and on stderr; the others are counted). Kestrel queues:
    records and bytes per opcode, time span from the items' add times, items queued / open at --as-of.
    Orth job-log tables (orth_job_log exports, dumps, databases): rows per UI status, the daily report counts
    (JobLogReportHelper), per-executor and per-handler failure rates, trigger-to-handle latency percentiles and
    the jobs the lost-job monitor marks lost at --as-of, as tables (--out DIR) and a chart (--chart FILE).

    Example:

    \b
      wqtool stats /var/lib/workq/cmdlog
      wqtool stats -o json /srv/fleet/*/cmdlog
      wqtool stats --engine spark --master local[4] /srv/fleet/*/cmdlog
      wqtool stats --timeline /var/lib/workq/cmdlog
      wqtool stats --chart /tmp/cmdlog.html /var/lib/workq/cmdlog
      wqtool stats -O timezone=Asia/Shanghai --out /tmp/joblog-stats --chart /tmp/daily.html orth_job_log.csv
      wqtool stats --engine spark 'jdbc:mariadb://db:3306/orth_job?user=orth&password=...'
    """
    for target, what in ((out_dir, "--out"), (chart, "--chart")):
        if target is not None and os.path.lexists(target):
            raise UsageError(f"{what} {target}: already exists; stats never overwrites")
    chart_kind = None if chart is None else _chart_kind(chart)
    if timeline and output is not Output.table:
        raise UsageError("--timeline draws in the terminal: it goes with -o table only")
    drawn = chart is not None or timeline     # the series pass (engine.series): verify's and stats' pass, one per log
    series: dict[int, object] = {}
    paths = read_paths(ctx, paths, jdbc)
    opts = options(as_of, settings=settings, horizon=horizon,
                   flags=dict(kestrel_version=kestrel_version.value, keep_open=keep_open))
    entries = resolve_each(paths, fmt, opts, on_note=say_error)
    logs = [e for e in entries if isinstance(e, Log)]
    # drawn locally: the series pass (engine.series) is the log's one pass, verify's and stats' in one
    measure = partial(_series, series=series) if drawn and engine is not Engine.spark else None
    with _spark.runner(engine is Engine.spark, logs, master, spark_conf, remote) as runner, \
            track(logs, "stats", enabled=runner is None):
        reading = read(entries, opts, want=Want.STATS, live=live, runner=runner, max_findings=0, measure=measure,
                       on_error=lambda e: say_error(error_text(e)))
    total_jobs = reading.total_jobs
    items = [Failed(r.root, r.error) if not r.ok else (r.report, r.view(), r.stats, r.jobs) for r in reading]
    done, failed = split(items)
    return Outcome.of([i[0].verdict for i in done], failed, lambda resolved: _write(
        resolved, items, done, reading, total_jobs, output, out_dir, out_format, timeline, chart, chart_kind, series,
        paths, fmt, as_of, opts, settings))


def _write(resolved, items, done, reading, total_jobs, output, out_dir, out_format, timeline, chart, chart_kind,
           series, paths, fmt, as_of, opts, settings) -> None:
    """stats' output, with the run's codes (``resolved``)."""
    write_stats(sys.stdout, stats_doc(items, total_jobs, resolved), output.value)
    if out_dir is not None:
        write_tables_files(out_dir, [(r.root, v.analytics()) for r, v, _, _ in done], out_format.value)
    read_ok = [r for r in reading if r.ok]      # in the order of ``done``
    if timeline:
        from ..render.timeline import write_timeline
        write_timeline([(r.report.root, series.get(id(r.log))) for r in read_ok])
    if chart is not None:
        from ..render.htmlreport import LogPage, chart_page, chart_svg
        from ..render.output import write_file
        from .report import command_line
        pages = [LogPage(r.log.fmt, rep, v, st, series.get(id(r.log)), r.as_of_ns, resolved.of(rep.verdict))
                 for r, (rep, v, st, _) in zip(read_ok, done)]
        made_by = command_line("stats", paths, fmt=fmt, as_of=as_of, opts=opts, settings=settings,
                               flags=["--chart", chart])
        write_file(chart, (chart_svg if chart_kind == "svg" else chart_page)(pages, made_by), "--chart")


def _chart_kind(path: str) -> str:
    """--chart FILE's kind from its suffix: ``.svg`` a standalone SVG drawing, ``.html`` / ``.htm`` the page."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".svg":
        return "svg"
    if suffix in (".html", ".htm"):
        return "html"
    raise UsageError(f"--chart {path}: expected a name ending in .svg (a standalone SVG drawing) or .html (the "
                     f"page with the charts and their tables), got {suffix or 'no suffix'!r}")


def _series(log, opts, *, series: dict):
    """One log's series pass (``engine.series``: records over time, live jobs, wait and run times) with its
    report and record statistics, as ``read`` asks of a ``measure``."""
    from ..engine.series import series_log
    report, st, series[id(log)] = series_log(log.fmt, log.data, opts, limit=0)
    return report, {"stats": st}
