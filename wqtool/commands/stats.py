from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Annotated

import typer

from ..engine import kestrel
from ..engine.workq.model import Record
from ..engine.workq.replay import JobState
from ..engine.workq.stats import KestrelRecordStats, RecordStats
from ..engine.findings import worst
from ..engine.workq.verify import LogRun
from ..exitcodes import for_verdict
from ._formats import resolve
from ._options import (AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt,
                       LogFormat, MasterOpt, Output, Paths, RemoteOpt, SparkConfOpt, parse_time)


def stats(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = LogFormat.auto,
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
    as_of_ns = parse_time(as_of, "--as-of")
    resolved = resolve(paths, fmt.value, horizon=horizon, kestrel_version=kestrel_version.value)
    logs = [lg.log for lg in resolved if lg.fmt == "workq"]
    sets = [lg.log for lg in resolved if lg.fmt == "kestrel"]
    if engine is Engine.spark:
        from ..spark.fleet import fleet_stats, run_kestrel
        from ..spark.session import open_session
        fleet, total_jobs = [], 0
        with open_session(master, spark_conf, remote, progress=_say) as spark:
            if logs:
                fleet, total_jobs = fleet_stats(spark, logs, as_of_ns, progress=_say)
            queues = run_kestrel(spark, sets, as_of_ns, limit=0, keep_open=keep_open, collect=KestrelRecordStats,
                                 progress=_say)
        wq = [(fl.report, fl.stats, fl.jobs) for fl in fleet]
        kq = [(report, st, 0) for report, st in queues]
    else:
        wq, kq, seen = [], [], set()
        for log in logs:
            run = LogRun(log, as_of_ns, limit=0)
            st = RecordStats()
            for ev in run.events():
                if ev.__class__ is Record:
                    st.add(ev)
            seen |= st.jobs
            wq.append((run.report, st, len(st.jobs)))
        for fs in sets:
            st = KestrelRecordStats()
            report = kestrel.run_log(fs, as_of_ns, limit=0, keep_open=keep_open, on_record=st.add)
            report.state = _KestrelStateView(report.state, fs.queue)
            kq.append((report, st, 0))
        total_jobs = len(seen)
    per_log = [(wq if lg.fmt == "workq" else kq).pop(0) for lg in resolved]   # in resolve's order
    doc = stats_doc(per_log, total_jobs)
    if output is Output.table:
        _table(doc)
    elif output is Output.json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        for d in doc["logs"]:
            sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.write(json.dumps({"total": doc["total"]}) + "\n")
    return worst(d["damage"]["exit_code"] for d in doc["logs"])


class _KestrelStateView:
    """What ``stats_doc`` asks of a state, for a ``KestrelState`` (the Spark path ships a ``KestrelSummary``
    with the same three answers): items per state, the queue's name with them, the digest."""

    def __init__(self, state, queue: str):
        self.state, self.queue = state, queue

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return {self.queue: self.state.counts_by_state()}

    def digest(self) -> str:
        return self.state.digest()


def _say(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def stats_doc(per_log, total_jobs: int) -> dict:
    """The stats document from (LogReport, RecordStats, distinct jobs) per log — the same for both engines."""
    logs = []
    tot = RecordStats()
    tot_states: Counter = Counter({s.label: 0 for s in JobState})
    tot_queues: dict[str, Counter] = {}
    tot_counts: Counter = Counter()
    tot_sev: Counter = Counter()
    for report, st, jobs in per_log:
        state = report.state
        d = st.to_jsonable()
        d["jobs"] = jobs
        by_state = state.counts_by_state()
        queues = state.queues()
        logs.append({"root": report.root, "segments": report.segments, **d,
                     "state": {"jobs": sum(by_state.values()), "by_state": by_state, "queues": queues,
                               "digest": state.digest()},
                     "damage": _damage(report.verdict, report.counts, report.severities)})
        tot.merge(st)
        tot_states.update(by_state)
        for q, c in queues.items():
            tot_queues.setdefault(q, Counter()).update(c)
        tot_counts.update(report.counts)
        tot_sev.update(report.severities)
    t = tot.to_jsonable()
    t["jobs"] = total_jobs
    total = {"logs": len(logs), "segments": sum(d["segments"] for d in logs), **t,
             "state": {"jobs": sum(tot_states.values()), "by_state": dict(tot_states),
                       "queues": {q: dict(c) for q, c in sorted(tot_queues.items())}},
             "damage": _damage(worst(d["damage"]["exit_code"] for d in logs), tot_counts, tot_sev)}
    return {"logs": logs, "total": total}


def _damage(exit_code, counts, severities) -> dict:
    return {"exit_code": int(for_verdict(exit_code)), "errors": severities.get("error", 0),
            "warnings": severities.get("warning", 0), "counts": dict(sorted(counts.items()))}


def _table(doc: dict) -> None:
    w = sys.stdout.write
    for d in doc["logs"] + [dict(doc["total"], root=f"total ({doc['total']['logs']} log(s))")]:
        s, dm = d["state"], d["damage"]
        w(f"{d['root']}: {d['segments']} segment(s), {d['records']} records, {d['bytes']} bytes, {d['jobs']} job id(s)\n")
        if d["first_time"]:
            w(f"  written {d['first_time']} .. {d['last_time']}\n")
        for k, v in d["by_type"].items():
            w(f"  {k:<16} {v['records']:>10} records {v['bytes']:>14} bytes\n")
        w("  jobs at --as-of: " + ", ".join(f"{k} {v}" for k, v in s["by_state"].items()) + f" ({s['jobs']} live)\n")
        if s["queues"]:
            w("  queues: " + ", ".join(f"{q} {sum(c.values())}" for q, c in s["queues"].items()) + "\n")
        if s.get("digest"):
            w(f"  digest sha256:{s['digest']}\n")
        w(f"  damage: exit {dm['exit_code']}, {dm['errors']} error(s), {dm['warnings']} warning(s)"
          + (": " + ", ".join(f"{k} {v}" for k, v in dm["counts"].items()) if dm["counts"] else "") + "\n")
