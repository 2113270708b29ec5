from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..engine.format import Log, resolve_each
from ..engine.live import LiveWatch
from ..engine.stats import RecordStats
from ..errors import UsageError
from ..render.outcome import Failed, run_exit_code
from ..render.progress import track
from ..render.stats import stats_doc, write_stats
from . import _spark
from ._options import (AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt,
                       LiveOpt, MasterOpt, Output, Paths, RemoteOpt, SettingOpt, SparkConfOpt, each_log, for_log,
                       options, say_error)


def stats(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    horizon: Horizon = False,
    live: LiveOpt = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> int:
    """Per log and in total: records and bytes per command, time span, jobs per state, queues, damage found.

    Every PATH is read and replayed (at --as-of) once; the replay digest of each log is included, so the
    numbers of two runs — or of the two engines — can be compared. The exit code is verify's (a PATH that
    cannot be read is named in the output and on stderr; the others are counted). Kestrel queues:
    records and bytes per opcode, time span from the items' add times, items queued / open at --as-of.

    Example:

    \b
      wqtool stats /var/lib/workq/cmdlog
      wqtool stats -o json /srv/fleet/*/cmdlog
      wqtool stats --engine spark --master local[4] /srv/fleet/*/cmdlog
    """
    opts = options(as_of, settings=settings, horizon=horizon, kestrel_version=kestrel_version.value, keep_open=keep_open)
    entries = resolve_each(paths, fmt, opts)
    logs = [e for e in entries if isinstance(e, Log)]
    watches = {id(log): LiveWatch(log, live=live) for log in logs}
    if engine is Engine.spark:
        from ..spark.fleet import fleet_stats
        per_log, total_jobs = [], 0
        if "_as_of" in opts.extra and len(logs) > 1:
            raise UsageError("--engine spark stats over several logs takes one --as-of time for all (each log's "
                             "own last/first: run the local engine, or one log at a time)")
        if logs:
            with _spark.session(master, spark_conf, remote) as spark:
                per_log, total_jobs = fleet_stats(spark, logs, for_log(logs[0], opts), progress=_spark.say)
        results = iter(per_log)
        per_path = list(each_log(entries, lambda log: next(results), say=say_error))
    else:
        seen: set = set()

        def one(log):
            run, st, facts = log.fmt.run(log.data, for_log(log, opts), limit=0), RecordStats(), log.fmt.facts
            for ev in run.events():
                if ev.__class__ is log.fmt.record_cls:
                    st.add(facts(ev))
            seen.update(st.jobs)
            return run.report, st, len(st.jobs)
        with track(logs, "stats"):
            per_path = list(each_log(entries, one, say=say_error))
        total_jobs = len(seen)
    items = [r if isinstance(r, Failed) else (watches[id(log)].settle(r[0]),
                                              log.fmt.state_view(r[0].state, log.data), r[1], r[2])
             for log, r in per_path]
    write_stats(sys.stdout, stats_doc(items, total_jobs), output.value)
    return run_exit_code([i[0].verdict for i in items if not isinstance(i, Failed)],
                         [i for i in items if isinstance(i, Failed)])
