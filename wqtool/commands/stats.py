from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..engine.findings import worst
from ..engine.format import resolve
from ..render.stats import stats_doc, write_stats
from . import _spark
from ._options import (SettingOpt, AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt,
                       MasterOpt, Output, Paths, RemoteOpt, SparkConfOpt, options)


def stats(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    horizon: Horizon = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> int:
    """Per log and in total: records and bytes per command, time span, jobs per state, queues, damage found.

    Every PATH is read and replayed (at --as-of) once; the replay digest of each log is included, so the
    numbers of two runs — or of the two engines — can be compared. The exit code is verify's. Kestrel queues:
    records and bytes per opcode, time span from the items' add times, items queued / open at --as-of.

    Example:

    \b
      wqtool stats /var/lib/workq/cmdlog
      wqtool stats -o json /srv/fleet/*/cmdlog
      wqtool stats --engine spark --master local[4] /srv/fleet/*/cmdlog
    """
    opts = options(as_of, settings=settings, horizon=horizon, kestrel_version=kestrel_version.value, keep_open=keep_open)
    logs = resolve(paths, fmt, opts)
    if engine is Engine.spark:
        from ..spark.fleet import fleet_stats
        with _spark.session(master, spark_conf, remote) as spark:
            per_log, total_jobs = fleet_stats(spark, logs, opts, progress=_spark.say)
    else:
        per_log, seen = [], set()
        for log in logs:   # one pass per log; the job ids themselves only for a union over logs
            report, st = log.fmt.stats_log(log.data, opts, ids=len(logs) > 1)
            seen |= st.jobs
            per_log.append((report, st, st.job_count()))
        total_jobs = len(seen) if len(logs) > 1 else sum(n for _, _, n in per_log)
    doc = stats_doc([(r, log.fmt.state_view(r.state, log.data), st, n) for log, (r, st, n) in zip(logs, per_log)],
                    total_jobs)
    write_stats(sys.stdout, doc, output.value)
    return worst(r.verdict for r, _, _ in per_log)
