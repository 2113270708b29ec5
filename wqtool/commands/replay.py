from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..engine import kestrel
from ..engine.workq.verify import run_log
from ..errors import UsageError
from ..render.console import stdout_console
from ..exitcodes import for_verdict
from ..render.findings import write_one_line
from ..render import kestrel as kr
from ..render.state import counts_table, job_to_jsonable, state_summary, write_jobs_table
from ._formats import resolve
from ._options import (AsOf, FormatOpt, KeepOpen, KestrelVersion, KestrelVersionOpt, LogFormat, Output, Paths,
                       parse_time)
from ._options import Engine, EngineOpt, MasterOpt, RemoteOpt, SparkConfOpt


#: findings kept for stderr (all are counted in the output): memory follows the live state, not the log
REPLAY_FINDINGS_SHOWN = 1000


def replay(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = LogFormat.auto,
    summary: Annotated[bool, typer.Option("--summary", help="Counts and digest only, without the job list.")] = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> int:
    """The queue state a log encodes, as workq-server 0.2.0 would rebuild it if started at --as-of.

    Deterministic: the same log and --as-of always give the same state and the same digest (sha256 over a
    canonical serialization of the jobs), so two logs — or a log before and after a pack — can be compared.
    Upstream quirks are reproduced and shown: add-jobs get a fresh TTL at restart (expires vs log_expires),
    leased jobs come back leased with a fresh TTR. Errors are reported on stderr; the exit code is verify's.

    Kestrel journals replay as Kestrel 2.x does at startup: open transactions go back to the queue head in
    ascending xid order (--keep-open shows them open); expiry is never applied at replay, --as-of only marks
    the items that would be expired.

    Example:

    \b
      wqtool replay /var/lib/workq/cmdlog
      wqtool replay -o json --as-of 2026-11-21T23:30:00Z DIR | jq .digest
      wqtool replay --summary DIR
      wqtool replay --format kestrel --keep-open /var/spool/kestrel/jobs
    """
    as_of_ns = parse_time(as_of, "--as-of")
    logs = resolve(paths, fmt.value, kestrel_version=kestrel_version.value)
    if len(logs) != 1:
        raise UsageError(f"replay takes one log; these paths name {len(logs)} (run replay once per directory "
                         "or queue)")
    if logs[0].fmt == "kestrel":
        report = None
        if engine is Engine.spark:  # the same report: the queue replayed by the engine in one Spark task
            from ..spark.fleet import fleet_replay_kestrel
            from ..spark.session import open_session
            say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
            with open_session(master, spark_conf, remote, progress=say) as spark:
                report = fleet_replay_kestrel(spark, logs[0].log, as_of_ns, keep_open=keep_open, progress=say)
        return _replay_kestrel(logs[0].log, as_of_ns, output, summary, keep_open, report)
    if engine is Engine.spark:  # the same report, replayed on Spark by job
        from ..spark.fleet import fleet_replay
        from ..spark.session import open_session
        say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
        with open_session(master, spark_conf, remote, progress=say) as spark:
            report = fleet_replay(spark, logs[0].log, as_of_ns, limit=REPLAY_FINDINGS_SHOWN, progress=say)
    else:
        report = run_log(logs[0].log, as_of_ns, limit=REPLAY_FINDINGS_SHOWN)
    state = report.state
    for f in report.findings:
        if f.severity == "error":
            write_one_line(sys.stderr, f)
    jobs = [] if summary else state.sorted_jobs()
    if output is Output.json:
        doc = state_summary(state)
        doc.update(root=report.root, exit_code=int(for_verdict(report.verdict)), findings=dict(sorted(report.counts.items())),
                   jobs=[job_to_jsonable(j) for j in jobs])
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif output is Output.jsonl:
        for j in jobs:
            sys.stdout.write(json.dumps(job_to_jsonable(j)) + "\n")
        doc = state_summary(state)
        doc.update(root=report.root, exit_code=int(for_verdict(report.verdict)), findings=dict(sorted(report.counts.items())))
        sys.stdout.write(json.dumps({"summary": doc}) + "\n")
    else:
        if not summary:
            write_jobs_table(sys.stdout, state)
            sys.stdout.flush()
        stdout_console().print(counts_table(state))
        s = state_summary(state)
        w = sys.stdout.write   # plain lines: never wrapped, never read as markup
        w(f"as of {s['as_of']}: {s['job_count']} jobs from {s['records']} records ({s['applied']} applied)\n")
        for f in report.findings:
            if f.severity == "note":
                w(f"note: {f.message}\n")
        w(f"digest sha256:{s['digest']}\n")
    return report.verdict


def _replay_kestrel(fileset, as_of_ns: int, output: Output, summary: bool, keep_open: bool, report=None) -> int:
    if report is None:
        report = kestrel.run_log(fileset, as_of_ns, keep_open=keep_open)
    state = report.state
    for f in report.findings:
        if f.severity == "error":
            write_one_line(sys.stderr, f)
    doc = kr.summary(state)
    doc.update(root=report.root, queue=fileset.queue, exit_code=int(for_verdict(report.verdict)),
               findings=dict(sorted(report.counts.items())))
    if output is Output.json:
        doc["items"] = [] if summary else kr.item_rows(state)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif output is Output.jsonl:
        if not summary:
            for row in kr.item_rows(state):
                sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.write(json.dumps({"summary": doc}) + "\n")
    else:
        if not summary:
            kr.write_items_table(sys.stdout, state)
        sys.stdout.write(f"queue {fileset.queue}: {doc['items']} items ({doc['bytes']} bytes), "
                         f"{doc['counts']}, {doc['expired_at_as_of']} expired at as-of, "
                         f"from {doc['records']} records; writer guess: {doc['version_guess']}\n")
        for f in report.findings:
            if f.severity == "note":
                sys.stdout.write(f"note: {f.message}\n")
        sys.stdout.write(f"digest sha256:{doc['digest']}\n")
    return report.verdict
