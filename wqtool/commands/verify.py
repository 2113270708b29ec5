from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..engine.format import resolve
from ..engine.run import VerifyReport
from ..exitcodes import EXIT_TABLE
from ..render.report import write_verify
from . import _spark
from ._options import (MAX_WORKERS, SettingOpt, AsOf, Engine, EngineOpt, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt,
                       MasterOpt, MaxFindings, Output, Paths, RemoteOpt, SparkConfOpt, options)

EXIT_HELP = "\n".join(f"  {int(c):>3}  {text}" for c, text in EXIT_TABLE)


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
    raise typer.Exit(0)


def verify(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering of the findings.")] = Output.table,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing; the exit code says it (for cron).")] = False,
    max_findings: MaxFindings = 100,
    horizon: Horizon = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    as_of: AsOf = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=MAX_WORKERS, metavar="N", help="workq: processes that "
                       "share an intact log's jobs [default: 2 for logs of 64 MiB and more, else 1].")] = None,
    explain: Annotated[Optional[str], typer.Option("--explain", metavar="CODE", callback=_explain, is_eager=True,
                       help="Print what a finding code means (its format and severity), then exit.")] = None,
    engine: EngineOpt = Engine.local,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> int:
    """Check framing, CRCs and replay-level history; exact offsets; exit code for cron.

    Works on workq command logs and Kestrel journals (--format). Every finding has a stable code (WQ-CRC,
    WQ-TRUNCATED, KQ-..., ...), the segment, byte offset, record index,
    the last good offset, and what the upstream server would do where that differs from starting normally.

    Exit codes:

    \b
      0  clean: every segment parses, every CRC holds, no impossible history (warnings allowed)
      1  torn tail only: valid up to offset X of the newest segment, nothing valid after X
      2  usage error
      3  corrupt: damage with valid data after it, or a bad header in a non-tail segment
      4  invalid history: intact bytes, but a history workq-server 0.2.0 refuses
      5  I/O error (unreadable path, permission)
      70  internal error (a bug: rerun with --traceback and report it)
      130 interrupted

    Several classes in one run: 3 wins over 4, 4 over 1.

    Example:

    \b
      wqtool verify /var/lib/workq/cmdlog
      wqtool verify --quiet DIR || echo "cmdlog needs attention: $?"
      wqtool verify -o json --as-of 2026-11-21T23:30:00Z DIR
      wqtool verify --format kestrel /var/spool/kestrel/jobs
      wqtool verify --explain WQ-CRC
    """
    opts = options(as_of, settings=settings, horizon=horizon, kestrel_version=kestrel_version.value, keep_open=keep_open)
    logs = resolve(paths, fmt, opts)
    if engine is Engine.spark:  # the same reports, computed on Spark
        from ..spark.fleet import fleet_verify
        with _spark.session(master, spark_conf, remote, quiet=quiet) as spark:
            report = fleet_verify(spark, logs, opts, max_findings=max_findings,
                                  progress=(lambda m: None) if quiet else _spark.say)
    else:
        report = VerifyReport([lr for log in logs for lr in log.fmt.verify(
            [log.data], opts, max_findings=max_findings, workers=workers).logs])
    if not quiet:
        write_verify(sys.stdout, report, output.value)
    return report.verdict
