from __future__ import annotations

import sys
from functools import partial
from typing import Annotated, Optional

import typer

from ..engine.format import Log, resolve_each
from ..engine.read import Want, read
from ..errors import UsageError
from ..render.outcome import Failed, Outcome, error_text, split
from ..render.progress import track
from ..render.report import write_verify
from . import _spark
from ._options import (MAX_WORKERS, AllFindings, AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion,
                       KestrelVersionOpt, LiveOpt, MasterOpt, MaxFindings, Output, QuietOpt, ReadPaths, JdbcOpt,
                       RemoteOpt, SettingOpt, SparkConfOpt, as_of_is_now, options, read_paths, say_error,
                       whole_number)


def _explain(value: Optional[str]) -> None:
    """--explain CODE: the finding code's entry (format, severity, meaning), then exit."""
    if value is None:
        return
    from ..engine import format as registry
    code = value.strip().upper()
    fmt = registry.format_of_code(code)
    if fmt is None:
        raise typer.BadParameter(f"unknown finding code {value!r}; the codes are listed in wqtool-formats(5)",
                                 param_hint="--explain")
    severity, meaning = fmt.codes[code]
    sys.stdout.write(f"{code} ({fmt.title}, {severity}): {meaning}\n")
    if code in fmt.about.explain:
        upstream, risk, fix = fmt.about.explain[code]
        for label, text in (("what happened", meaning), ("upstream", upstream), ("data at risk", risk),
                            ("fix", fix)):
            sys.stdout.write(f"  {label + ':':<14} {text}\n")
    raise typer.Exit()


def verify(
    ctx: typer.Context,
    paths: ReadPaths = None,
    jdbc: JdbcOpt = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering of the findings.")] = Output.table,
    quiet: QuietOpt = False,
    max_findings: MaxFindings = 100,
    all_findings: AllFindings = False,
    horizon: Horizon = False,
    live: LiveOpt = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    as_of: AsOf = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    workers: Annotated[Optional[int], typer.Option("--workers", parser=whole_number(1, MAX_WORKERS), metavar="N",
                       help="workq: processes that share an intact log's jobs [default: 2 for logs of 64 MiB and "
                       "more, else 1].")] = None,
    metrics_file: Annotated[Optional[str], typer.Option("--metrics-file", metavar="FILE", help="Also write the "
                            "result as Prometheus text exposition into FILE (replaced atomically: for node_exporter's "
                            "textfile collector): per PATH its verdict and exit code, findings by code and severity, "
                            "records, bytes, live jobs by state, the newest record's time, the check's duration "
                            "(the metrics are listed below).")] = None,
    explain: Annotated[Optional[str], typer.Option("--explain", metavar="CODE", callback=_explain, is_eager=True,
                       help="Print what a finding code means: its format and severity, what happened, what "
                       "the upstream system does with it, whether data is at risk, and which wqtool command fixes it "
                       "(with the flag); then exit.")] = None,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> Outcome:
    """Check framing, CRCs and replay-level history; exact offsets; exit code for cron.

    Works on every format wqtool reads (--format; auto-detected): workq command logs, Kestrel queue journals,
    Orth / XXL-JOB callback retry files and executor log folders, Orth job-log tables (orth_job_log exports, dumps,
    databases), snapwebsites list journals, prinbee EVTJ event journals and fastjournal journals. A PATH is a log
    directory or one file of it; - reads one segment or journal file from stdin (a workq segment, a Kestrel
    journal file, an EVTJ journal: the formats whose bytes say what they are). Every finding has a stable code
    (WQ-CRC, WQ-TRUNCATED, KQ-..., ...), the segment, byte offset, record index,
    the last good offset, and what the upstream server would do where that differs from starting normally.
    Every PATH gets its own verdict, also one that cannot be read or is not a log; the exit code is the most
    severe. A log being written (a held lock, a process holding it open for writing, a file that changed during
    the read, --live) has its partial last record reported as in flight (WQ-IN-FLIGHT, KQ-IN-FLIGHT), not as a
    torn tail.

    Exit codes:

    {EXIT_CODES}

    Example:

    \b
      wqtool verify /var/lib/workq/cmdlog
      wqtool verify --quiet DIR || echo "cmdlog needs attention: $?"
      wqtool verify -o json --as-of 2026-11-21T23:30:00Z DIR
      wqtool verify --all-findings DIR
      wqtool verify --horizon --as-of last /var/lib/workq/cmdlog /srv/other/cmdlog
      wqtool verify --format kestrel /var/spool/kestrel/jobs
      wqtool verify --quiet --metrics-file /var/lib/node_exporter/textfile/wqtool.prom DIR
      wqtool verify --explain WQ-CRC

    Metrics (--metrics-file; every one a gauge, labelled path and format):

    {METRICS}
    """
    paths = read_paths(ctx, paths, jdbc, stdin=True)
    opts = options(as_of, settings=settings, horizon=horizon,
                   flags=dict(kestrel_version=kestrel_version.value, keep_open=keep_open))
    if engine is Engine.spark and metrics_file is not None:
        raise UsageError("--metrics-file is written by the local engine (a cron check of this host's logs)")
    entries = resolve_each(paths, fmt, opts, on_note=None if quiet else say_error)
    logs = [e for e in entries if isinstance(e, Log)]
    measure = None if metrics_file is None else partial(_measured, max_findings=max_findings, workers=workers)
    with _spark.runner(engine is Engine.spark, logs, master, spark_conf, remote, quiet=quiet) as runner, \
            track(logs, "verify", enabled=not quiet and runner is None):
        reading = read(entries, opts, want=Want.VERIFY, live=live, runner=runner, max_findings=max_findings,
                       workers=workers, measure=measure, on_error=lambda e: say_error(error_text(e)))
    # errors went to stderr, even -q
    results = [r.report if r.ok else Failed(r.root, r.error) for r in reading]
    done, failed = split(results)

    def write(resolved) -> None:
        if not quiet:
            write_verify(sys.stdout, results, output.value, resolved,
                         all_findings=all_findings or not as_of_is_now(as_of), as_of=as_of or "now")
        if metrics_file is not None:
            from ..render.metrics import exposition, write_metrics
            write_metrics(metrics_file, exposition([(r.report if r.ok else results[k], r.extra.get("metrics"))
                                                    for k, r in enumerate(reading)], resolved))
    return Outcome.of([r.verdict for r in done], failed, write)


def _measured(log: Log, opts, *, max_findings, workers):
    """verify of one log with its replayed state (live jobs) and the newest record's time, timed."""
    import time
    from ..errors import WqError
    from ..render.metrics import LogMetrics
    t0 = time.perf_counter()
    lr = log.fmt.passes.run_log(log.data, opts, limit=max_findings, state=True, workers=workers)
    try:
        jobs = log.fmt.state_view(lr.state, log.data).counts_by_state() if lr.state is not None else None
    except NotImplementedError:
        jobs = None
    try:
        newest = log.fmt.passes.time_span(log.data, "last")[1]   # --as-of last measured it already (remembered)
    except (WqError, OSError):
        newest = None
    return lr, {"metrics": LogMetrics(log.fmt.name, time.perf_counter() - t0, jobs, newest)}


