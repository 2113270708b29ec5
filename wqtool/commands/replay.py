from __future__ import annotations

import sys
from typing import Annotated, Iterator, Optional

import typer

from ..engine.format import resolve
from ..engine.read import Want, read
from ..errors import SendRefused, UsageError
from ..render.findings import write_one_line
from ..render.outcome import Failed, Outcome
from ..render.progress import track
from ..render.replay import nothing_live_hint, write_replay, write_send
from . import _spark
from ._options import (QuietOpt, AsOf, Engine, EngineOpt, FormatOpt, KeepOpen, KestrelVersion, KestrelVersionOpt, LiveOpt,
                       JdbcOpt, MasterOpt, Output, ReadPaths, ReplayOutput, RemoteOpt, SettingOpt, SparkConfOpt, as_of_is_now, for_log,
                       options, read_paths, say_error)


#: findings kept for stderr (all are counted in the output): memory follows the live state, not the log
REPLAY_FINDINGS_SHOWN = 1000


def replay(
    ctx: typer.Context,
    paths: ReadPaths = None,
    jdbc: JdbcOpt = None,
    quiet: QuietOpt = False,
    output: Annotated[ReplayOutput, typer.Option("--output", "-o", help="Rendering; parquet: --engine spark "
                      "with --out DIR.")] = ReplayOutput.table,
    as_of: AsOf = None,
    all_findings: Annotated[bool, typer.Option("--all-findings", help="Also print every warning and note on "
                            "stderr, one line each (by default only errors are; the counts are in the output).")]
    = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    summary: Annotated[bool, typer.Option("--summary", help="Counts and digest only, without the job list.")] = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    live: LiveOpt = False,
    send: Annotated[Optional[str], typer.Option("--send", metavar="URL", help="Deliver what the log holds "
                    "pending to its receiver (an Orth admin, a fastjournal daemon, ...); an item is deleted or marked "
                    "only after the receiver acknowledged it.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --send: print what would be sent, send "
                       "nothing.")] = False,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
    out_dir: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="--engine spark -o parquet: write "
                       "the replayed state there (DIR/jobs, partitioned by log; DIR/summary.json with the digest); "
                       "DIR must not exist.")] = None,
) -> Outcome | Iterator[Outcome]:
    """The queue state a log encodes, as workq-server 0.2.0 would rebuild it if started at --as-of.

    Deterministic: the same log and --as-of always give the same state and the same digest (sha256 over a
    canonical serialization of the jobs), so two logs — or a log before and after a pack — can be compared.
    Upstream quirks are reproduced and shown: add-jobs get a fresh TTL at restart (expires vs log_expires),
    leased jobs come back leased with a fresh TTR. Errors are reported on stderr; the exit code is verify's.
    --as-of last replays at the log's newest record time: the same state and digest whenever it runs (the
    default, now, expires jobs as time passes). Several PATHs (or a directory that two formats share: an Orth
    logPath, its retry files and its executor logs) are replayed as each of their logs in turn, under a
    "== ROOT: FORMAT ==" line (-o json: one document, {"logs": [...]} in that order), each as it would be
    alone; --format reads one format. With --engine spark, --summary of several logs is one Spark job over
    them; -o parquet writes every log's rows to DIR/jobs (partitioned by log) and one summary per log.

    Kestrel journals replay as Kestrel 2.x does at startup: open transactions go back to the queue head in
    ascending xid order (--keep-open shows them open); expiry is never applied at replay, --as-of only marks
    the items that would be expired.

    Snap! list journals (0.msg ... 23.msg) replay to one entry per uri (the largest key_start_date wins) in the
    General Sort Index order <domain>:<priority>:<key_start_date>; EVTJ journals to the live events the prinbee
    loader indexes; the fastjournal journal to its priority FIFO. --send fastjournal://HOST:PORT forwards a list
    journal's pending lines to a fastjournal daemon — per the unimplemented libfastjournal design (wqtool's own
    daemon; none exists upstream) — blanking each line only once the daemon acknowledged it; after a crash it
    asks the daemon first and blanks, unsent, what the daemon already holds ("already delivered").

    Example:

    \b
      wqtool replay /var/lib/workq/cmdlog
      wqtool replay -o json --as-of 2026-11-21T23:30:00Z DIR | jq .digest
      wqtool replay --as-of last --summary DIR
      wqtool replay --summary DIR
      wqtool replay --format kestrel --keep-open /var/spool/kestrel/jobs
      wqtool replay --send http://admin:8080/orth-admin -O access_token=TOKEN --dry-run LOGPATH/callbacklogs
      wqtool replay --send http://admin:8080/xxl-job-admin -O admin_release=xxl-job-2.0 -O access_token=TOKEN \\
        LOGPATH/callbacklog
      wqtool replay --as-of now /var/lib/snapwebsites/list/journal
      wqtool replay --send fastjournal://127.0.0.1:4008 --dry-run /var/lib/snapwebsites/list/journal
      wqtool replay --engine spark -o parquet --out /tmp/state --as-of last /srv/fleet/a/cmdlog
      wqtool replay --engine spark --summary 's3a://bucket/fleet/*/cmdlog'
    """
    if (output is ReplayOutput.parquet) != (out_dir is not None) or (out_dir and engine is not Engine.spark):
        raise UsageError("-o parquet and --out DIR go together, with --engine spark (the replayed state as a table)")
    paths = read_paths(ctx, paths, jdbc)
    opts = options(as_of, settings=settings, flags=dict(kestrel_version=kestrel_version.value, keep_open=keep_open))
    logs = resolve(paths, fmt, opts, on_note=say_error)
    if send is not None:
        sent = [lg for lg in logs if lg.fmt.send is not None]
        if not sent:
            raise UsageError(f"--send does not apply to {logs[0].fmt.about.plural}")
        refused = 0
        for log in sent:
            rep = log.fmt.send(log.data, send, for_log(log, opts), dry_run=dry_run, progress=_spark.say)
            write_send(sys.stdout, rep)
            refused += rep.failed
        return Outcome.of((), [Failed(send, SendRefused(f"{refused} record(s) refused", path=send))] if refused
                          else ())
    if dry_run:
        raise UsageError("--dry-run goes with --send")
    if out_dir is not None:
        return _replay_table(logs, opts, out_dir, master, spark_conf, remote)
    return _replay_each(logs, opts, Output(output.value), summary, as_of, all_findings, live,
                        engine is Engine.spark, master, spark_conf, remote)


def _replay_each(logs, opts, output: Output, summary: bool, as_of, all_findings: bool, live: bool, spark: bool,
                 master, spark_conf, remote) -> Iterator[Outcome]:
    """Each log's replay, written as it is read (one state in memory at a time): an outcome per log, which the
    edge resolves as it comes (each document shows its log's exit code), then the run's for one JSON document."""
    wrap = len(logs) > 1 and output is Output.json     # one JSON document: {"logs": [each log's document]}
    written = 0
    with _spark.runner(spark, logs, master, spark_conf, remote) as runner:
        # --summary on Spark: the fleet in one job (digests and counts only); else a log at a time (its state is
        # the one in memory), in PATH order either way
        results = _read(logs, opts, live, runner, summary) if summary and runner is not None and len(logs) > 1 \
            else None
        if wrap:
            sys.stdout.write('{"logs": [\n')
        for i, log in enumerate(logs):
            r = results[i] if results is not None else _read([log], opts, live, runner, summary)[0]
            if r.error is not None and len(logs) > 1:    # one bad log never hides the others: named, then on
                say_error(str(r.error))
                yield Outcome.of((), [Failed(r.root, r.error)])
                continue
            if len(logs) > 1 and output is Output.table:
                sys.stdout.write(f"== {log.fmt.passes.log_name(log.data)}: {log.fmt.title} ==\n")
            if wrap and written:
                sys.stdout.write(",\n")
            written += 1
            yield _replay_one(r, output, summary, as_of, all_findings)
        if wrap:     # the run's exit code and verdict after the logs' documents, as each log's are in its own
            yield Outcome.of(write=lambda run: sys.stdout.write(
                f'], "exit_code": {run.code}, "verdict": "{run.label}"}}\n'))


def _replay_table(logs, opts, out_dir: str, master, spark_conf, remote) -> Outcome:
    """replay --engine spark -o parquet --out DIR: each log's job table (DIR/jobs, partitioned by log) and its
    summary (DIR/summary.json: replay -o json --summary's document, digest included; a list for several logs)."""
    from ..spark.fleet import export_state
    with _spark.session(master, spark_conf, remote) as spark:
        reports = export_state(spark, logs, [for_log(lg, opts) for lg in logs], out_dir, progress=_spark.say)
    return Outcome.of([rep.verdict for rep in reports], (), lambda resolved: _write_table(
        logs, reports, out_dir, resolved))


def _write_table(logs, reports, out_dir: str, resolved) -> None:
    import json
    import os

    from io import StringIO
    docs = []
    for rep in reports:       # each state is the FrozenView the export's task made with the rows it wrote
        buf = StringIO()
        write_replay(buf, rep, rep.state, "json", True, resolved)
        docs.append(json.loads(buf.getvalue()))
    with open(os.path.join(out_dir, "summary.json"), "x", encoding="utf-8") as f:
        json.dump(docs[0] if len(docs) == 1 else {"logs": docs}, f, indent=2)
        f.write("\n")
    for lg, rep in zip(logs, reports):
        for f in rep.findings:
            if f.severity == "error":
                write_one_line(sys.stderr, f)
        sys.stdout.write(f"{lg.fmt.passes.log_name(lg.data)}: {rep.state.job_count()} rows in {out_dir}/jobs, "
                         f"digest sha256:{rep.state.digest()}\n")


def _read(logs, opts, live, runner, summary) -> list:
    with track(logs, "replay", enabled=runner is None):
        return read(logs, opts, want=Want.REPLAY, live=live, runner=runner, max_findings=REPLAY_FINDINGS_SHOWN,
                    summary=summary).results


def _replay_one(r, output, summary, as_of, all_findings=False) -> Outcome:
    """One log's outcome: its verdict, and its findings (stderr), state and hint to write."""
    log = r.log
    if r.error is not None:
        raise r.error
    report = r.report

    def write(resolved) -> None:
        for f in report.shown(all_findings=True)[0] if all_findings else report.findings:
            if all_findings or f.severity == "error" or f.code in log.fmt.about.told_codes:
                write_one_line(sys.stderr, f)
        view = r.view()
        write_replay(sys.stdout, report, view, output.value, summary, resolved)
        if as_of_is_now(as_of):
            hint = nothing_live_hint(report, view, log.fmt.about.expired_code)
            if hint:
                say_error(hint)
    return Outcome.of([report.verdict], (), write)
