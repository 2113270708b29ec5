from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..engine.diff import diff as diff_logs
from ..engine.format import resolve_each
from ..render.diff import exit_code, write_diff
from ..render.findings import write_one_line
from ..render.progress import track
from ._edge import exit_codes
from ._options import (AsOf, FormatOpt, Horizon, LiveOpt, MaxFindings, Output, QuietOpt, SettingOpt, options,
                       say_error, whole_number)
from ._help import exit_help

#: the jobs described by default (all are counted)
DIFF_SHOWN = 100


def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="A log (directory or segment files), as replay takes it.",
                                     show_default=False)],
    b: Annotated[str, typer.Argument(metavar="B", help="The log to compare it with, of the same format.",
                                     show_default=False)],
    output: Annotated[Output, typer.Option("--output", "-o", help="Rendering.")] = Output.table,
    quiet: QuietOpt = False,
    limit: Annotated[int, typer.Option("--limit", parser=whole_number(0, 1 << 62), metavar="N",
                                       help="Describe at most N differing jobs (all are counted).")] = DIFF_SHOWN,
    as_of: AsOf = None,
    max_findings: MaxFindings = 100,
    horizon: Horizon = False,
    live: LiveOpt = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
) -> int:
    """Compare two logs job by job: the jobs whose replayed rows differ, and the records that made them differ.

    Both logs are replayed at one --as-of (last: the newer of their newest records; first: the older of their
    first ones) with the rows replay shows. For every job that differs: its id and queue, its state, attempts
    and result on each side, and on each side the record that last changed it past the point where the logs
    diverge (FILE@0x..., record number, time, command). The first line says how the logs relate: "B = A + 2
    records", "they diverge at A: 000000003.log@0x1f0 / B: 000000003.log@0x1f0", "no common prefix". Damaged
    input is read through as verify reads it; the findings are listed (a torn tail is one of them).

    Exit codes: 0 the same jobs, 1 some job differs, and for input that cannot be read the table below (3 or 4
    when a log is corrupt or its history impossible, over 0 and 1).

    {EXIT_CODES}

    Example:

    \b
      wqtool diff /var/lib/workq/cmdlog /backup/cmdlog
      wqtool diff --as-of last -o json replica/cmdlog primary/cmdlog | jq '.jobs[].job_id'
      wqtool diff -q before/ after/ || echo "the queues differ"
    """
    opts = options(as_of, settings=settings, horizon=horizon)
    entries = [e for p in (a, b) for e in resolve_each([p], fmt, opts, on_note=say_error)]
    logs = [e for e in entries if not hasattr(e, "error")]
    with track(logs, "diff", enabled=not quiet):
        d = diff_logs(entries, opts, limit=limit, live=live, max_findings=max_findings)
    codes = exit_codes()
    for r in (d.a, d.b):
        for f in r.report.findings:
            if f.severity == "error":
                write_one_line(sys.stderr, f)
    write_diff(sys.stdout, d, output.value, codes)
    return exit_code(d, codes)


diff.__doc__ = diff.__doc__.replace("{EXIT_CODES}", exit_help())
