from __future__ import annotations

import enum
import os
import sys
from typing import Annotated, Optional

import typer

from ..engine.findings import worst
from ..engine.format import resolve
from ..errors import UsageError
from ..render.analytics import write_chart, write_tables_files
from ..render.stats import stats_doc, write_stats
from . import _spark
from ._options import (SettingOpt, AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt,
                       MasterOpt, Output, Paths, RemoteOpt, SparkConfOpt, options)


class TableFormat(str, enum.Enum):
    csv = "csv"
    parquet = "parquet"


def stats(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    horizon: Horizon = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    out_dir: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="Also write each analytics table "
                       "(orth-joblog: status, daily, executors, handlers, latency, lost) to a new DIR, one file per "
                       "table.")] = None,
    out_format: Annotated[TableFormat, typer.Option("--out-format", help="Files of --out.")] = TableFormat.csv,
    chart: Annotated[Optional[str], typer.Option("--chart", metavar="FILE", help="Also draw the format's chart "
                     "(orth-joblog: rows per trigger day, success / fail / running) into a new self-contained HTML "
                     "FILE.")] = None,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> int:
    """Per log and in total: records and bytes per command, time span, jobs per state, queues, damage found.

    Every PATH is read and replayed (at --as-of) once; the replay digest of each log is included, so the
    numbers of two runs — or of the two engines — can be compared. The exit code is verify's. Kestrel queues:
    records and bytes per opcode, time span from the items' add times, items queued / open at --as-of.
    Orth job-log tables (orth_job_log exports, dumps, databases): rows per UI status, the daily report counts
    (JobLogReportHelper), per-executor and per-handler failure rates, trigger-to-handle latency percentiles and
    the jobs the lost-job monitor marks lost at --as-of, as tables (--out DIR) and a chart (--chart FILE).

    Example:

    \b
      wqtool stats /var/lib/workq/cmdlog
      wqtool stats -o json /srv/fleet/*/cmdlog
      wqtool stats --engine spark --master local[4] /srv/fleet/*/cmdlog
      wqtool stats -O timezone=Asia/Shanghai --out /tmp/joblog-stats --chart /tmp/daily.html orth_job_log.csv
      wqtool stats --engine spark 'jdbc:mariadb://db:3306/orth_job?user=orth&password=...'
    """
    for target, what in ((out_dir, "--out"), (chart, "--chart")):
        if target is not None and os.path.lexists(target):
            raise UsageError(f"{what} {target}: already exists; stats never overwrites")
    opts = options(as_of, settings=settings, horizon=horizon, kestrel_version=kestrel_version.value, keep_open=keep_open)
    logs = resolve(paths, fmt, opts)
    if engine is Engine.spark:
        from ..spark.fleet import fleet_stats
        with _spark.session(master, spark_conf, remote) as spark:
            per_log, total_jobs = fleet_stats(spark, logs, opts, progress=_spark.say)
    else:
        per_log, seen = [], set()
        for log in logs:
            report, st = log.fmt.stats_log(log.data, opts)
            seen |= st.jobs
            per_log.append((report, st, len(st.jobs)))
        total_jobs = len(seen)
    views = [log.fmt.state_view(r.state, log.data) for log, (r, _, _) in zip(logs, per_log)]
    doc = stats_doc([(r, v, st, n) for v, (r, st, n) in zip(views, per_log)], total_jobs)
    write_stats(sys.stdout, doc, output.value)
    if out_dir is not None:
        write_tables_files(out_dir, [(r.root, v.analytics()) for v, (r, _, _) in zip(views, per_log)],
                           out_format.value)
    if chart is not None:
        charts = []
        for v, (r, _, _) in zip(views, per_log):
            spec = v.chart()
            if spec is not None:
                charts.append((r.root, spec, v.analytics().get(spec["table"], [])))
        write_chart(chart, charts)
    return worst(r.verdict for r, _, _ in per_log)
