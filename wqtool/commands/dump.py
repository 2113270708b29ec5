from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from ..engine import format as registry
from ..engine.dump import RecordFilter, parse_jobs, parse_kinds
from ..engine.findings import ERROR, worst
from ..engine.format import resolve
from ..engine.stats import RecordStats
from ..errors import UsageError
from ..render.findings import write_one_line
from ..render.progress import ByteProgress
from ..render.records import RECORD_WRITERS
from ..render.stats import write_record_stats
from . import _spark
from ._options import (MAX_OFFSET, SettingOpt, AsOf, DumpOutput, Engine, EngineOpt, FormatOpt, KestrelVersion, KestrelVersionOpt, MasterOpt,
                       PayloadMode, Paths, RemoteOpt, SparkConfOpt, options, parse_time)


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
    from_offset: Annotated[Optional[int], typer.Option(min=0, max=MAX_OFFSET, metavar="N", help="Only records at byte offset >= N "
                           "(of their file).")] = None,
    to_offset: Annotated[Optional[int], typer.Option(min=0, max=MAX_OFFSET, metavar="N", help="Only records at byte offset < N.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=0, max=MAX_OFFSET, metavar="N", help="Stop after N records.")] = None,
    payload: Annotated[Optional[PayloadMode], typer.Option(help="Payload/result rendering "
                       "[default: text for table, base64 for json/jsonl]; binary: raw bytes (--engine spark "
                       "-o parquet only).")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print statistics (records and bytes per command, time span, "
                     "jobs) instead of records.")] = False,
    qdump: Annotated[bool, typer.Option("--qdump", help="Kestrel: qdump.sh's own line format and summary.")] = False,
    qdump_contents: Annotated[bool, typer.Option("--qdump-contents", "-d", help="With --qdump: item contents "
                              "(qdump -d).")] = False,
    qdump_raw: Annotated[bool, typer.Option("--qdump-raw", "-A", help="With --qdump: raw item contents only "
                         "(qdump -A).")] = False,
    qdump_queue: Annotated[bool, typer.Option("--qdump-queue", "-Q", help="With --qdump: the final queued items "
                           "(qdump -Q).")] = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
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
    opts = options(as_of, settings=settings, kestrel_version=kestrel_version.value)
    mode = (payload.value if payload else ("text" if output in (DumpOutput.table, DumpOutput.hex) else "base64"))
    logs = resolve(paths, fmt, opts)
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
        return _dump_spark(paths, fmt, output, out_dir, mode, opts, master, spark_conf, remote)
    if mode == "binary":
        raise UsageError("--payload binary is for --engine spark -o parquet; use hex or base64 here")
    if qdump or qdump_contents or qdump_raw or qdump_queue:
        return _special(logs, "qdump", opts, contents=qdump_contents, raw=qdump_raw, queue=qdump_queue)
    selection = dict(kinds=type_, jobs=parse_jobs(job), since_ns=parse_time(since, "--since", default_now=False),
                     until_ns=parse_time(until, "--until", default_now=False), from_offset=from_offset,
                     to_offset=to_offset)
    total, verdicts, shown, writers = RecordStats(), [], 0, {}
    for log in logs:
        fmt_ = log.fmt
        if fmt_.name not in writers:
            writers[fmt_.name] = (None if stats else RECORD_WRITERS[output.value](sys.stdout, mode, fmt_.record_view),
                                  _filter(fmt_, selection))
        w, flt = writers[fmt_.name]
        run = fmt_.run(log.data, opts, limit=0)
        bar = ByteProgress(sum(_size(p) for p in log.files), "dump")
        for ev in run.events():
            if ev.__class__ is fmt_.record_cls:
                if flt.match(ev):
                    if limit is not None and shown >= limit:
                        break
                    shown += 1
                    total.add(fmt_.facts(ev)) if stats else w.write(ev)
                    if shown & 0xFFF == 0:
                        bar.update(ev.offset)
            elif ev.severity == ERROR:
                sys.stdout.flush()
                write_one_line(sys.stderr, ev)
        bar.close()
        run.sink.close()
        verdicts.append(run.report.verdict)
    if stats:
        write_record_stats(sys.stdout, total, output.value)
    else:
        for w, _ in writers.values():
            w.close()
    return worst(verdicts)


def _filter(fmt_, sel: dict) -> RecordFilter:
    """The record filter of one format; a filter the format cannot apply is a usage error."""
    unsupported = [o for o, k in (("--job", "jobs"), ("--since", "since_ns"), ("--until", "until_ns"))
                   if sel[k] is not None and ("job" if k == "jobs" else "time") not in fmt_.filters]
    if unsupported:
        able = [f.plural for f in registry.formats() if "job" in f.filters]
        raise UsageError(f"{', '.join(unsupported)} apply to {' and '.join(able) or 'no format'} only, not to "
                         f"{fmt_.plural}")
    return RecordFilter(fmt_.facts, parse_kinds(sel["kinds"], fmt_.record_kinds, fmt_.kind_noun), sel["jobs"],
                        sel["since_ns"], sel["until_ns"], sel["from_offset"], sel["to_offset"])


def _special(logs, which: str, opts, **kw) -> int:
    """An extra view a format offers (--qdump): one call per format, over its logs."""
    by_fmt: dict = {}
    for log in logs:
        if which not in log.fmt.special_dumps:
            able = [f.plural for f in registry.formats() if which in f.special_dumps]
            raise UsageError(f"--{which} applies to {' and '.join(able)} only", path=log.root)
        by_fmt.setdefault(log.fmt.name, (log.fmt, []))[1].append(log.data)
    for fmt_, datas in by_fmt.values():
        for stream, chunk in fmt_.special_dump(which, datas, opts, **kw):
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


def _dump_spark(paths, fmt, output: DumpOutput, out_dir: str, mode: str, opts, master, spark_conf, remote) -> int:
    """Export with each format's Spark data source (several formats: to OUT/<format>, one schema each); their
    findings — verify's, the replay's at --as-of included — are rows of the export, the errors go to stderr, and
    together they decide the exit code, as the local dump's."""
    from ..spark.fleet import export_records
    by_fmt: dict[str, list[str]] = {}
    for p in paths:  # a PATH is one format (a directory, a file)
        by_fmt.setdefault(fmt if fmt != "auto" else registry.detect(p)[0].name, []).append(p)
    verdicts: set[int] = set()
    with _spark.session(master, spark_conf, remote) as spark:
        for source, ps in by_fmt.items():
            res = export_records(spark, ps, out_dir if len(by_fmt) == 1 else os.path.join(out_dir, source),
                                 fmt="parquet" if output is DumpOutput.parquet else "json",
                                 payload="false" if mode == "none" else mode, progress=_spark.say, source=source,
                                 opts=opts)
            for f in res.errors:
                write_one_line(sys.stderr, f)
            if res.error_count > len(res.errors):
                _spark.say(f"... {res.error_count - len(res.errors)} more error finding(s): the _corrupt rows of the "
                           "export")
            verdicts |= res.exit_classes
    return worst(verdicts)
