from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Optional

import typer

from ..engine import kestrel
from ..engine.workq.dump import RecordFilter, parse_jobs, parse_kestrel_ops, parse_types
from ..engine.findings import ERROR, worst
from ..engine.workq.model import Record
from ..engine.workq.stats import RecordStats
from ..engine.workq.verify import LogRun
from ..errors import UsageError
from ..render.console import stdout_console
from ..render.findings import write_one_line
from ..render.kestrel import KESTREL_WRITERS
from ..render.progress import ByteProgress
from ..render.records import RECORD_WRITERS
from ._formats import resolve
from ._options import (AsOf, DumpOutput, FormatOpt, KestrelVersion, KestrelVersionOpt, LogFormat, Paths,
                       PayloadMode, parse_time)
from ._options import Engine, EngineOpt, MasterOpt, RemoteOpt, SparkConfOpt


def dump(
    paths: Paths,
    output: Annotated[DumpOutput, typer.Option("--output", "-o", help="Rendering.")] = DumpOutput.table,
    type_: Annotated[Optional[list[str]], typer.Option("--type", "-t", metavar="CMD[,CMD]",
                     help="Only these commands (workq: add, schedule, complete, fail, delete, expire, start-attempt, "
                          "timeout-attempt; Kestrel: the opcode names, e.g. addx,remove); repeatable.")] = None,
    job: Annotated[Optional[list[str]], typer.Option("--job", "-j", metavar="UUID", help="Only records of this job; "
                   "repeatable (workq).")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written at or after TIME "
                     "(workq).")] = None,
    until: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written before TIME "
                     "(workq).")] = None,
    from_offset: Annotated[Optional[int], typer.Option(min=0, metavar="N", help="Only records at byte offset >= N "
                           "(of their file).")] = None,
    to_offset: Annotated[Optional[int], typer.Option(min=0, metavar="N", help="Only records at byte offset < N.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=0, metavar="N", help="Stop after N records.")] = None,
    payload: Annotated[Optional[PayloadMode], typer.Option(help="Payload/result rendering "
                       "[default: text for table, base64 for json/jsonl]; binary: raw bytes (--engine spark "
                       "-o parquet only).")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print statistics (records and bytes per command, time span, "
                     "jobs) instead of records (workq).")] = False,
    qdump: Annotated[bool, typer.Option("--qdump", help="Kestrel: qdump.sh's own line format and summary.")] = False,
    qdump_contents: Annotated[bool, typer.Option("--qdump-contents", "-d", help="With --qdump: item contents "
                              "(qdump -d).")] = False,
    qdump_raw: Annotated[bool, typer.Option("--qdump-raw", "-A", help="With --qdump: raw item contents only "
                         "(qdump -A).")] = False,
    qdump_queue: Annotated[bool, typer.Option("--qdump-queue", "-Q", help="With --qdump: the final queued items "
                           "(qdump -Q).")] = False,
    fmt: FormatOpt = LogFormat.auto,
    as_of: AsOf = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    engine: EngineOpt = Engine.local,
    out_dir: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="--engine spark: write the records "
                       "to DIR (-o parquet or -o jsonl files), as the workq / kestrel Spark data sources read them "
                       "(permissive: a _corrupt row per finding verify reports).")] = None,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
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
      wqtool dump --qdump -d /var/spool/kestrel/jobs
      wqtool dump --engine spark -o parquet --out /tmp/records.parquet /srv/fleet/*/cmdlog
    """
    as_of_ns = parse_time(as_of, "--as-of")
    mode = (payload.value if payload else ("text" if output in (DumpOutput.table, DumpOutput.hex) else "base64"))
    logs = resolve(paths, fmt.value, kestrel_version=kestrel_version.value)
    if engine is Engine.spark or output is DumpOutput.parquet:
        if engine is not Engine.spark or output not in (DumpOutput.parquet, DumpOutput.jsonl) or not out_dir:
            raise UsageError("-o parquet needs --engine spark; --engine spark dump writes -o parquet or -o jsonl "
                             "files to --out DIR")
        if type_ or job or since or until or from_offset is not None or to_offset is not None or limit is not None \
                or stats or qdump or qdump_contents or qdump_raw or qdump_queue:
            raise UsageError("--engine spark dump exports whole logs (no filters, no --stats, no --qdump); filter "
                             "the Parquet output, or use the local engine")
        if mode == "binary" and output is not DumpOutput.parquet:
            raise UsageError("--payload binary needs -o parquet (JSON has no bytes)")
        if not remote and "://" not in out_dir and os.path.lexists(out_dir):   # before paying for a session
            raise UsageError(f"--out {out_dir}: already exists; the export never overwrites: name a new directory")
        by_fmt: dict[str, list[str]] = {}
        for p in paths:  # a PATH is one format (a directory, a file); auto-detected ones again, one at a time
            f = fmt.value if fmt is not LogFormat.auto else resolve([p], "auto")[0].fmt
            by_fmt.setdefault(f, []).append(p)
        return _dump_spark(by_fmt, output, out_dir, mode, as_of_ns, kestrel_version.value, master, spark_conf,
                           remote)
    if mode == "binary":
        raise UsageError("--payload binary is for --engine spark -o parquet; use hex or base64 here")
    if qdump or qdump_contents or qdump_raw or qdump_queue:
        return _qdump(logs, as_of_ns, qdump_contents, qdump_raw, qdump_queue)
    out = sys.stdout
    total = RecordStats()
    codes = []
    shown = [0]
    writers = {}
    filters = {}

    def writer_for(fmt_: str):
        if fmt_ not in writers:
            table = KESTREL_WRITERS if fmt_ == "kestrel" else RECORD_WRITERS
            writers[fmt_] = table[output.value](out, mode)
            if fmt_ == "kestrel":
                if job or since or until or stats:
                    raise UsageError("--job, --since, --until and --stats apply to workq logs only")
                filters[fmt_] = RecordFilter(parse_kestrel_ops(type_), None, None, None, from_offset, to_offset)
            else:
                filters[fmt_] = RecordFilter(parse_types(type_), parse_jobs(job),
                                             parse_time(since, "--since", default_now=False),
                                             parse_time(until, "--until", default_now=False), from_offset, to_offset)
        return writers[fmt_], filters[fmt_]

    for lg in logs:
        w, flt = writer_for(lg.fmt)
        if lg.fmt == "kestrel":
            codes.append(_dump_kestrel(lg.log, as_of_ns, w, flt, limit, shown))
            continue
        run = LogRun(lg.log, as_of_ns, limit=0, keep_raw=output is DumpOutput.hex)
        bar = ByteProgress(sum(_size(s.path) for s in lg.log.segments), "dump")
        for ev in run.events():
            if ev.__class__ is Record:
                if flt.match(ev):
                    if limit is not None and shown[0] >= limit:
                        break
                    shown[0] += 1
                    total.add(ev) if stats else w.write(ev)
                    if shown[0] & 0xFFF == 0:
                        bar.update(ev.offset)
            elif ev.severity == ERROR:
                out.flush()
                write_one_line(sys.stderr, ev)
        bar.close()
        run.sink.close()
        codes.append(run.report.verdict)
    if stats:
        _print_stats(total, output)
    for w in writers.values():
        if not stats:
            w.close()
    return worst(codes)


class _Stop(Exception):
    pass


def _dump_kestrel(fileset, as_of_ns: int, w, flt: RecordFilter, limit: int | None, shown: list[int]) -> int:
    def on_record(rec) -> None:
        if flt.match_kestrel(rec):
            if limit is not None and shown[0] >= limit:
                raise _Stop
            shown[0] += 1
            w.write(rec)
    try:
        report = kestrel.run_log(fileset, as_of_ns, on_record=on_record)
    except _Stop:
        return 0
    sys.stdout.flush()
    for f in report.findings:
        if f.severity == ERROR:
            write_one_line(sys.stderr, f)
    return report.verdict


def _qdump(logs, as_of_ns: int, contents: bool, raw: bool, queue: bool) -> int:
    files = []
    for lg in logs:
        if lg.fmt != "kestrel":
            raise UsageError("--qdump applies to Kestrel journals only", path=lg.root)
        files += [f.path for f in lg.log.files]
    for stream, chunk in kestrel.qdump(files, now_ms=as_of_ns // 1_000_000, dump_contents=contents, raw=raw,
                                       queue_state=queue):
        if stream == "raw":
            sys.stdout.flush()
            sys.stdout.buffer.write(chunk)
        elif stream == "err":
            sys.stderr.write(chunk)
        else:
            sys.stdout.write(chunk)
    return 0


def _size(path: str) -> int:
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


def _dump_spark(by_fmt: dict[str, list[str]], output: DumpOutput, out_dir: str, mode: str, as_of_ns: int,
                kestrel_version: str, master, spark_conf, remote) -> int:
    """Export with the workq / kestrel Spark data source (both present: to OUT/workq and OUT/kestrel, two
    schemas); their findings — verify's, the replay's at --as-of included — are rows of the export, the errors
    go to stderr, and together they decide the exit code, as the local dump's."""
    from ..spark.fleet import export_records
    from ..spark.session import open_session
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    classes: set[int] = set()
    with open_session(master, spark_conf, remote, progress=say) as spark:
        for source, paths in by_fmt.items():
            res = export_records(spark, paths, out_dir if len(by_fmt) == 1 else os.path.join(out_dir, source),
                                 fmt="parquet" if output is DumpOutput.parquet else "json",
                                 payload="false" if mode == "none" else mode, progress=say, source=source,
                                 as_of_ns=as_of_ns, kestrel_version=kestrel_version)
            for f in res.errors:
                write_one_line(sys.stderr, f)
            if res.error_count > len(res.errors):
                say(f"... {res.error_count - len(res.errors)} more error finding(s): the _corrupt rows of the export")
            classes |= res.exit_classes
    return worst(classes)
