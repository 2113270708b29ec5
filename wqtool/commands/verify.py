from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from ..engine import kestrel
from ..engine.serialize import finding_to_jsonable
from ..engine.workq.verify import LogReport, VerifyReport, verify as engine_verify
from ..exitcodes import EXIT_TABLE, for_verdict
from ..render.findings import findings_jsonl, findings_lines
from ._formats import resolve
from ._options import (AsOf, FormatOpt, Horizon, KeepOpen, KestrelVersion, KestrelVersionOpt, LogFormat, MaxFindings,
                       Output, Paths, parse_time)
from ._options import Engine, EngineOpt, MasterOpt, RemoteOpt, SparkConfOpt

EXIT_HELP = "\n".join(f"  {int(c):>3}  {text}" for c, text in EXIT_TABLE)


def verify(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering of the findings.")] = Output.table,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing; the exit code says it (for cron).")] = False,
    max_findings: MaxFindings = 100,
    horizon: Horizon = False,
    fmt: FormatOpt = LogFormat.auto,
    as_of: AsOf = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, metavar="N", help="workq: processes that "
                       "share an intact log's jobs [default: 2 for logs of 64 MiB and more, else 1].")] = None,
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
    """
    as_of_ns = parse_time(as_of, "--as-of")
    report = VerifyReport([])
    if engine is Engine.spark:  # the same reports, computed on Spark: a task per log or per share of its jobs
        report = _verify_spark(paths, fmt, horizon, as_of_ns, max_findings, kestrel_version.value, keep_open, master,
                               spark_conf, remote, quiet)
        paths = []
    for lg in [] if not paths else resolve(paths, fmt.value, horizon=horizon, kestrel_version=kestrel_version.value):
        if lg.fmt == "kestrel":
            report.logs += kestrel.verify([lg.log], as_of_ns, max_findings=max_findings, keep_open=keep_open).logs
        else:
            report.logs += engine_verify([lg.log], as_of_ns, max_findings=max_findings, workers=workers).logs
    if not quiet:
        if output is Output.json:
            doc = {"exit_code": int(for_verdict(report.verdict)), "logs": [_log_json(lr) for lr in report.logs]}
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        elif output is Output.jsonl:
            for lr in report.logs:
                findings_jsonl(sys.stdout, lr.findings)
                sys.stdout.write(json.dumps({"summary": _log_json(lr, findings=False)}) + "\n")
        else:
            for lr in report.logs:
                _log_table(lr)
    return report.verdict


def _verify_spark(paths, fmt, horizon, as_of_ns, max_findings, kestrel_version, keep_open, master, spark_conf,
                  remote, quiet=False) -> VerifyReport:
    """verify on Spark: the reports the local engine gives, computed by ``wqtool.spark.fleet`` — workq logs by
    log or job share, Kestrel queues a task each; in the order ``resolve`` gives, as the local engine."""
    from ..spark.fleet import fleet_verify, fleet_verify_kestrel
    from ..spark.session import open_session
    logs = resolve(paths, fmt.value, horizon=horizon, kestrel_version=kestrel_version)
    wq = [i for i, lg in enumerate(logs) if lg.fmt == "workq"]
    kq = [i for i, lg in enumerate(logs) if lg.fmt == "kestrel"]
    say = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))  # noqa: E731
    reports: dict = {}
    with open_session(master, spark_conf, remote, progress=None if quiet else say) as spark:
        if wq:
            rep = fleet_verify(spark, [logs[i].log for i in wq], as_of_ns, max_findings=max_findings, digest=False,
                               progress=say)
            reports.update(zip(wq, rep.logs))
        if kq:
            rep = fleet_verify_kestrel(spark, [logs[i].log for i in kq], as_of_ns, max_findings=max_findings,
                                       keep_open=keep_open, progress=say)
            reports.update(zip(kq, rep.logs))
    return VerifyReport([reports[i] for i in range(len(logs))])


def _verdict(lr: LogReport) -> str:
    return lr.verdict.label


def _log_json(lr: LogReport, findings: bool = True) -> dict:
    d = {"root": lr.root, "verdict": _verdict(lr), "exit_code": int(for_verdict(lr.verdict)), "segments": lr.segments,
         "records": lr.records, "bytes": lr.bytes, "counts": dict(sorted(lr.counts.items())),
         "last_good": None if lr.last_good is None else {"file": lr.last_good[0], "offset": lr.last_good[1]},
         "omitted_findings": lr.omitted}
    if findings:
        d["findings"] = [finding_to_jsonable(f) for f in lr.findings]
    return d


def _log_table(lr: LogReport) -> None:
    w = sys.stdout.write
    w(f"{lr.root}: {lr.segments} segment(s), {lr.records} records, {lr.bytes} bytes: "
      f"{_verdict(lr)} (exit {int(for_verdict(lr.verdict))})\n")
    if lr.last_good:
        w(f"  valid up to {lr.last_good[0]}@0x{lr.last_good[1]:x} ({lr.last_good[1]}); "
          "truncating there loses no valid record\n")
    for line in findings_lines(lr.findings):
        w(line + "\n")
    if lr.omitted:
        w(f"  ... {lr.omitted} more finding(s) not shown (--max-findings)\n")
    if lr.counts:
        w("  counts: " + ", ".join(f"{k} {v}" for k, v in sorted(lr.counts.items())) + "\n")
