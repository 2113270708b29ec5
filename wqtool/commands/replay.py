from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..engine.verify import run_log
from ..errors import UsageError
from ..render.console import stdout_console
from ..render.findings import write_one_line
from ..render.state import counts_table, job_to_jsonable, state_summary, write_jobs_table
from ._options import AsOf, FormatOpt, LogFormat, Output, Paths, parse_time, resolve_logs


def replay(
    paths: Paths,
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    as_of: AsOf = None,
    fmt: FormatOpt = LogFormat.auto,
) -> int:
    """The queue state a log encodes, as workq-server 0.2.0 would rebuild it if started at --as-of.

    Deterministic: the same log and --as-of always give the same state and the same digest (sha256 over a
    canonical serialization of the jobs), so two logs — or a log before and after a pack — can be compared.
    Upstream quirks are reproduced and shown: add-jobs get a fresh TTL at restart (expires vs log_expires),
    leased jobs come back leased with a fresh TTR. Errors are reported on stderr; the exit code is verify's.

    Example:

    \b
      wqtool replay /var/lib/workq/cmdlog
      wqtool replay -o json --as-of 2026-11-21T23:30:00Z DIR | jq .digest
    """
    as_of_ns = parse_time(as_of, "--as-of")
    logs = resolve_logs(paths, fmt)
    if len(logs) != 1:
        raise UsageError(f"replay takes one log; these paths name {len(logs)} (run replay once per directory)")
    report = run_log(logs[0], as_of_ns)
    state = report.state
    for f in report.findings:
        if f.severity == "error":
            write_one_line(sys.stderr, f)
    if output is Output.json:
        doc = state_summary(state)
        doc.update(root=report.root, exit_code=int(report.exit_code), findings=dict(sorted(report.counts.items())),
                   jobs=[job_to_jsonable(j) for j in state.sorted_jobs()])
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif output is Output.jsonl:
        for j in state.sorted_jobs():
            sys.stdout.write(json.dumps(job_to_jsonable(j)) + "\n")
        doc = state_summary(state)
        doc.update(root=report.root, exit_code=int(report.exit_code), findings=dict(sorted(report.counts.items())))
        sys.stdout.write(json.dumps({"summary": doc}) + "\n")
    else:
        write_jobs_table(sys.stdout, state)
        sys.stdout.flush()
        con = stdout_console()
        con.print(counts_table(state))
        s = state_summary(state)
        con.print(f"as of {s['as_of']}: {s['jobs']} jobs from {s['records']} records ({s['applied']} applied)")
        for f in report.findings:
            if f.severity == "note":
                con.print(f"note: {f.message}")
        con.print(f"digest sha256:{s['digest']}")
    return report.exit_code
