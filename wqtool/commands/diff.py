from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..engine.diff import between, paths as diff_paths
from ..engine.format import resolve_each
from ..errors import UsageError
from ..render.diff import outcome, write_diff
from ..render.findings import write_one_line
from ..render.outcome import Outcome
from ..render.progress import track
from ._options import (AsOf, JdbcOpt, FormatOpt, Horizon, LiveOpt, MaxFindings, Output, QuietOpt, SettingOpt, options,
                       say_error, whole_number)

#: the jobs described by default (all are counted)
DIFF_SHOWN = 100


def diff(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="A B", help="Two logs of one format (directories or "
                                                         "segment files, as replay takes them), or an executor "
                                                         "logPath and its admin's table; with --from/--to, one.",
                                                         show_default=False)] = None,
    jdbc: JdbcOpt = None,
    since: Annotated[Optional[str], typer.Option("--from", metavar="T1", help="Compare one log with itself: as it "
                     "stood at T1 (its records up to T1, replayed at T1) against --to (times as --as-of takes them).")]
    = None,
    until: Annotated[Optional[str], typer.Option("--to", metavar="T2", help="With --from: the second instant "
                     "[default: now].")] = None,
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
) -> Outcome:
    """Compare two logs job by job: the jobs whose replayed rows differ, and the records that made them differ.

    Both logs are replayed at one --as-of (last: the newer of their newest records; first: the older of their
    first ones) with the rows replay shows. For every job that differs: its id and queue, its state, attempts
    and result on each side, and on each side the record that last changed it past the point where the logs
    diverge (FILE@0x..., record number, time, command). The first line says how the logs relate: "B = A + 2
    records", "they diverge at A: 000000003.log@0x1f0 / B: 000000003.log@0x1f0", "no common prefix". Damaged
    input is read through as verify reads it; the findings are listed (a torn tail is one of them).

    Kestrel journals: the queue's items compared (an item is what it holds: add time, expiry, data, and its rank
    among equal items; queued / open and xid, not its position), with the journal position of each differing
    item's add, and of the REMOVE or CONFIRM_REMOVE that took it on the side where it is gone.

    Orth / XXL-JOB across sources: diff EXECUTOR_DIR TABLE (TABLE: a dump, an export directory or file, or
    --jdbc URL as B) compares an executor's logPath with its admin's job-log table, run by run (log id). It names
    the runs the admin shows running (trigger_code 200, handle_code 0) although the executor finished them,
    with the retry file and entry that hold the undelivered result and the replay --send line that delivers it
    ("stuck"); the runs the admin's lost-job monitor marks lost (OJL-LOST) that the executor finished ("lost");
    and the triggered rows of the days the executor's logs cover with no job log and no callback ("no-trace").

    --from T1 --to T2 PATH compares one log with itself: the log as it stood at T1 (its records whose time is
    T1 or earlier, replayed at T1) against T2. Each job whose row differs (the row without what the clock alone
    moves: an add-job's expires, a leased job's lease expiry) is listed with the records in (T1, T2] that
    changed it; a job that is gone only because it expired in between is listed as such. This reads the log
    with the reference reader (not the kernel).

    Exit codes (as diff(1) and cmp give them, with the exit table's codes for errors):

    \b
        0  the same jobs (the logs may still differ in bytes: a pack, a torn tail; the header says)
        1  some job differs
        2  usage error, a PATH that is not a log, two logs of different formats
        3  a log is corrupt (damage with valid data after it): read through, the findings listed
        4  a log's history is one upstream refuses
        5  I/O error

    A torn tail is a finding of its side, not an exit code of its own; 3 and 4 win over 0 and 1.

    Example:

    \b
      wqtool diff /var/lib/workq/cmdlog /backup/cmdlog
      wqtool diff --as-of last -o json replica/cmdlog primary/cmdlog | jq '.jobs[].job_id'
      wqtool diff -q before/ after/ || echo "the queues differ"
      wqtool diff /data/xxl-job/jobhandler xxl_job.sql
      wqtool diff /data/xxl-job/jobhandler --jdbc 'jdbc:mysql://db:3306/xxl_job?user=ro&password=PW'
      wqtool diff --from 2026-11-21T02:00:00Z --to 2026-11-21T03:00:00Z /var/lib/workq/cmdlog
    """
    paths = [*(paths or ()), *(jdbc or ())]
    two = since is not None or until is not None
    if len(paths) != (1 if two else 2):
        raise UsageError("diff compares two logs (diff A B), or one log at two instants (diff --from T1 --to T2 "
                         f"PATH); {len(paths)} PATH(s) given")
    if two and as_of is not None:
        raise UsageError("--as-of does not go with --from/--to: they are the two instants")
    if two and since is None:
        raise UsageError("--to goes with --from")
    opts = options(as_of, settings=settings, horizon=horizon)
    groups = [resolve_each([p], fmt, opts, on_note=say_error) for p in paths]
    entries = [e for g in groups for e in g]
    logs = [e for e in entries if not hasattr(e, "error")]
    with track(logs, "diff", enabled=not quiet):
        if two:
            if len(entries) != 1:
                raise UsageError(f"diff --from/--to takes one log; {paths[0]} names {len(entries)}")
            d = between(entries[0], options(since, settings=settings, horizon=horizon),
                        options(until, settings=settings, horizon=horizon), limit=limit, max_findings=max_findings)
        else:
            d = diff_paths(groups[0], groups[1], opts, limit=limit, live=live, max_findings=max_findings)
    for r in (d.a, d.b):
        for f in r.report.findings:
            if f.severity == "error":
                write_one_line(sys.stderr, f)
    return outcome(d, None if quiet else (lambda resolved: write_diff(sys.stdout, d, output.value, resolved)))

