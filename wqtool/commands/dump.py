from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from ..engine.dump import RecordFilter, parse_jobs, parse_types
from ..engine.findings import ERROR
from ..engine.model import Record
from ..engine.stats import RecordStats
from ..engine.verify import LogRun, worst_exit
from ..render.console import stdout_console
from ..render.findings import write_one_line
from ..render.progress import ByteProgress
from ..render.records import RECORD_WRITERS
from ._options import AsOf, DumpOutput, FormatOpt, LogFormat, Paths, PayloadMode, parse_time, resolve_logs


def dump(
    paths: Paths,
    output: Annotated[DumpOutput, typer.Option("--output", "-o", help="Rendering.")] = DumpOutput.table,
    type_: Annotated[Optional[list[str]], typer.Option("--type", "-t", metavar="CMD[,CMD]",
                     help="Only these commands (add, schedule, complete, fail, delete, expire, start-attempt, "
                          "timeout-attempt); repeatable.")] = None,
    job: Annotated[Optional[list[str]], typer.Option("--job", "-j", metavar="UUID", help="Only records of this job; "
                   "repeatable.")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written at or after TIME.")] = None,
    until: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written before TIME.")] = None,
    from_offset: Annotated[Optional[int], typer.Option(min=0, metavar="N", help="Only records at byte offset >= N "
                           "(of their segment).")] = None,
    to_offset: Annotated[Optional[int], typer.Option(min=0, metavar="N", help="Only records at byte offset < N.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=0, metavar="N", help="Stop after N records.")] = None,
    payload: Annotated[Optional[PayloadMode], typer.Option(help="Payload/result rendering "
                       "[default: text for table, base64 for json/jsonl].")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print statistics (records and bytes per command, time span, "
                     "jobs) instead of records.")] = False,
    fmt: FormatOpt = LogFormat.auto,
    as_of: AsOf = None,
) -> int:
    """Show the records of a log: table, JSON Lines, JSON or hex; filtered.

    Damaged input: everything readable is shown; each finding goes to stderr at its offset and the exit code
    is the one `wqtool verify` gives (see `wqtool verify --help`).

    Example:

    \b
      wqtool dump /var/lib/workq/cmdlog
      wqtool dump -o jsonl --type add,schedule --payload hex /var/lib/workq/cmdlog/000000003.log
      wqtool dump --job 00000000-0000-4000-8000-000000000001 --since 2026-11-21T23:00:00Z DIR
      wqtool dump --stats DIR
    """
    flt = RecordFilter(parse_types(type_), parse_jobs(job), parse_time(since, "--since", default_now=False),
                       parse_time(until, "--until", default_now=False), from_offset, to_offset)
    as_of_ns = parse_time(as_of, "--as-of")
    mode = (payload.value if payload else ("text" if output in (DumpOutput.table, DumpOutput.hex) else "base64"))
    out = sys.stdout
    writer = None if stats else RECORD_WRITERS[output.value](out, mode)
    total = RecordStats()
    codes = []
    shown = 0
    for log in resolve_logs(paths, fmt):
        run = LogRun(log, as_of_ns, limit=0, keep_raw=output is DumpOutput.hex)
        bar = ByteProgress(sum(_size(s.path) for s in log.segments), "dump")
        for ev in run.events():
            if ev.__class__ is Record:
                if flt.match(ev):
                    if limit is not None and shown >= limit:
                        break
                    shown += 1
                    total.add(ev) if stats else writer.write(ev)
                    if shown & 0xFFF == 0:
                        bar.update(ev.offset)
            elif ev.severity == ERROR:
                out.flush()
                write_one_line(sys.stderr, ev)
        bar.close()
        run.sink.close()
        codes.append(run.report.exit_code)
    if stats:
        _print_stats(total, output)
    else:
        writer.close()
    return worst_exit(codes)


def _size(path: str) -> int:
    import os
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _print_stats(st: RecordStats, output: DumpOutput) -> None:
    d = st.to_jsonable()
    if output is not DumpOutput.table:
        sys.stdout.write(json.dumps(d, indent=None if output is DumpOutput.jsonl else 2) + "\n")
        return
    from rich.table import Table
    sys.stdout.write(f"{d['records']} records, {d['bytes']} bytes, {d['jobs']} jobs\n"
                     f"records written {d['first_time']} .. {d['last_time']}\n")
    t = Table()
    t.add_column("command")
    t.add_column("records", justify="right")
    t.add_column("bytes", justify="right")
    for k, v in d["by_type"].items():
        t.add_row(k, str(v["records"]), str(v["bytes"]))
    stdout_console().print(t)
