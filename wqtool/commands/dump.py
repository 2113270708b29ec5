from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from ..engine import format as registry
from ..engine.dump import Encoded, Records, Told, following, parse_jobs, selection
from ..engine.findings import Verdict
from ..engine.format import Log, resolve_each
from ..engine.stats import RecordStats
from ..errors import UsageError
from ..offsets import At, at, printable
from ..render.findings import write_one_line
from ..render.outcome import Failed, Outcome, split
from ..render.progress import track
from ..render.records import RECORD_WRITERS, RecordDocument
from ..render.stats import write_record_stats
from . import _spark
from ._options import (QuietOpt, MAX_OFFSET, AsOf, DumpOutput, Engine, EngineOpt, FormatOpt, KestrelVersion,
                       KestrelVersionOpt, LiveOpt, MasterOpt, PayloadMode, ReadPaths, JdbcOpt, RemoteOpt, SettingOpt,
                       SparkConfOpt, each_log, offset_option, options, read_paths, parse_time, say_error, seconds,
                       whole_number)



def dump(
    ctx: typer.Context,
    paths: ReadPaths = None,
    jdbc: JdbcOpt = None,
    quiet: QuietOpt = False,
    output: Annotated[DumpOutput, typer.Option("--output", "-o", help="Rendering.")] = DumpOutput.table,
    type_: Annotated[Optional[list[str]], typer.Option("--type", "-t", metavar="CMD[,CMD]",
                     help="Only these commands (workq: add, schedule, complete, fail, delete, expire, start-attempt, "
                          "timeout-attempt; Kestrel: the opcode names, e.g. addx,remove); repeatable.")] = None,
    job: Annotated[Optional[list[str]], typer.Option("--job", "-j", metavar="UUID", help="Only records of this job; "
                   "repeatable (workq).")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written at or after TIME "
                     "(workq; RFC 3339, '2026-11-21 23:15:00' UTC, epoch seconds, -2h).")] = None,
    until: Annotated[Optional[str], typer.Option(metavar="TIME", help="Only records written before TIME "
                     "(workq).")] = None,
    from_offset: Annotated[Optional[At], typer.Option(parser=offset_option, metavar="OFFSET", help="Only records "
                           "from OFFSET on, in the form wqtool prints positions: FILE@0x11c (that file from 0x11c, "
                           "and every file after it), or 0x11c / @0x11c / 284 (that offset of every file).")] = None,
    to_offset: Annotated[Optional[At], typer.Option(parser=offset_option, metavar="OFFSET", help="Only records "
                         "before OFFSET (the same forms).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", parser=whole_number(0, MAX_OFFSET), metavar="N",
                     help="Stop after N records.")] = None,
    payload: Annotated[Optional[PayloadMode], typer.Option(help="Payload/result rendering "
                       "[default: text for table, base64 for json/jsonl]; binary: raw bytes (--engine spark "
                       "-o parquet only).")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print statistics (records and bytes per command, time span, "
                     "jobs) instead of records.")] = False,
    follow: Annotated[bool, typer.Option("--follow", "-F", help="Keep printing records as the log grows (new "
                      "segments and rotations included), like pg_waldump -f; Ctrl-C ends it (exit 0).")] = False,
    poll: Annotated[float, typer.Option("--poll", metavar="SECONDS", parser=seconds(0.05, 3600),
                    help="With --follow: how often to look for new records.")] = 1.0,
    qdump: Annotated[bool, typer.Option("--qdump", help="Kestrel: qdump.sh's own line format and summary.")] = False,
    qdump_contents: Annotated[bool, typer.Option("--qdump-contents", "-d", help="With --qdump: item contents "
                              "(qdump -d).")] = False,
    qdump_raw: Annotated[bool, typer.Option("--qdump-raw", "-A", help="With --qdump: raw item contents only "
                         "(qdump -A).")] = False,
    qdump_queue: Annotated[bool, typer.Option("--qdump-queue", "-Q", help="With --qdump: the final queued items "
                           "(qdump -Q).")] = False,
    live: LiveOpt = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    as_of: AsOf = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    engine: EngineOpt = Engine.local,
    out_dir: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="--engine spark: write the records "
                       "to DIR/records and verify's findings to DIR/findings (-o parquet or -o jsonl files), as the "
                       "<format> and <format>-findings Spark data sources read them.")] = None,
    master: MasterOpt = None,
    spark_conf: SparkConfOpt = None,
    remote: RemoteOpt = None,
) -> Outcome:
    """Show the records of a log: table, JSON Lines, JSON or hex; filtered; --follow a live log.

    Damaged input: everything readable is shown; each finding goes to stderr at its offset (-o hex also shows
    the unreadable bytes, marked, between the records around them) and the exit code is the one `wqtool verify`
    gives (see `wqtool verify --help`). A PATH that cannot be read is named on stderr; the other PATHs are
    dumped.

    Example:

    \b
      wqtool dump /var/lib/workq/cmdlog
      wqtool dump -o jsonl --type add,schedule --payload hex /var/lib/workq/cmdlog/000000003.log
      wqtool dump --job 00000000-0000-4000-8000-000000000001 --since '2026-11-21 23:00:00' DIR
      wqtool dump -o hex --from-offset 0x11c --to-offset 0x200 DIR/000000001.log
      wqtool dump --follow --type add /var/lib/workq/cmdlog
      wqtool dump --stats DIR
      wqtool dump --qdump -d /var/spool/kestrel/jobs
      wqtool dump --engine spark -o parquet --out /tmp/records.parquet /srv/fleet/*/cmdlog
    """
    paths = read_paths(ctx, paths, jdbc, stdin=True)
    opts = options(as_of, settings=settings, flags=dict(kestrel_version=kestrel_version.value))
    mode = (payload.value if payload else ("text" if output in (DumpOutput.table, DumpOutput.hex) else "base64"))
    if engine is Engine.spark or output is DumpOutput.parquet:
        if engine is not Engine.spark or output not in (DumpOutput.parquet, DumpOutput.jsonl) or not out_dir:
            raise UsageError("-o parquet needs --engine spark; --engine spark dump writes -o parquet or -o jsonl "
                             "files to --out DIR")
        if type_ or job or since or until or from_offset is not None or to_offset is not None or limit is not None \
                or stats or follow or qdump or qdump_contents or qdump_raw or qdump_queue:
            raise UsageError("--engine spark dump exports whole logs (no filters, no --stats, --follow or --qdump); "
                             "filter the Parquet output, or use the local engine")
        if mode == "binary" and output is not DumpOutput.parquet:
            raise UsageError("--payload binary needs -o parquet (JSON has no bytes)")
        if not remote and "://" not in out_dir and os.path.lexists(out_dir):   # before paying for a session
            raise UsageError(f"--out {out_dir}: already exists; the export never overwrites: name a new directory")
        if opts.as_of_word is not None:
            raise UsageError("--engine spark dump takes a time for --as-of (last / first: the local engine)")
        registry.resolve(paths, fmt, opts)     # every PATH must name a log before a session is paid for
        return _dump_spark(paths, fmt, output, out_dir, mode, opts, master, spark_conf, remote)
    if out_dir is not None:
        raise UsageError("--out is for --engine spark exports; the local dump writes to stdout")
    if mode == "binary":
        raise UsageError("--payload binary is for --engine spark -o parquet; use hex or base64 here")
    if follow and stats:
        raise UsageError("--follow prints records as they come; --stats counts them once: pick one")
    entries = resolve_each(paths, fmt, opts, on_note=say_error)
    logs = [e for e in entries if isinstance(e, Log)]
    if qdump or qdump_contents or qdump_raw or qdump_queue:
        if follow:
            raise UsageError("--follow does not apply to --qdump")
        return _special(entries, logs, "qdump", opts, contents=qdump_contents, raw=qdump_raw, queue=qdump_queue)
    chosen = dict(kinds=type_, jobs=parse_jobs(job), since_ns=parse_time(since, "--since", default_now=False),
                  until_ns=parse_time(until, "--until", default_now=False), from_offset=from_offset,
                  to_offset=to_offset)
    d = _Dump(output.value, mode, stats, limit, chosen, opts, live)
    if follow:
        return d.follow(entries, logs, poll)
    with track(logs, "dump", streaming=True):
        results = [r for _, r in each_log(entries, d.log, say=say_error)]
    done, failed = split(results)
    return Outcome.of(done, failed, lambda resolved: d.close(resolved.summary))


class _Dump:
    """The records of one log after another (``engine.dump.Records``) through one writer per format."""

    def __init__(self, output: str, mode: str, stats: bool, limit, selection: dict, opts, live: bool):
        self.output, self.mode, self.stats, self.limit = output, mode, stats, limit
        self.selection, self.opts, self.live = selection, opts, live
        self.total, self.shown, self.writers, self.selections = RecordStats(), 0, {}, {}
        self.doc, self.told = RecordDocument(sys.stdout, output), []     # -o json / jsonl: the document's end

    def _selection(self, fmt_, log: Log):
        """The records chosen in ``log``; a bound naming a file the log lacks is a usage error, raised before its
        format's writer prints anything (a table's header)."""
        if fmt_.name not in self.selections:
            self.selections[fmt_.name] = selection(fmt_, **self.selection)
        return self.selections[fmt_.name].for_files(log.files, log.root)

    def _writer(self, fmt_):
        if fmt_.name not in self.writers:
            self.writers[fmt_.name] = None if self.stats else RECORD_WRITERS[self.output](sys.stdout, self.mode,
                                                                                       fmt_.record_view, self.doc)
        return self.writers[fmt_.name]

    def _tell(self, w, t: Told) -> None:
        if t.mark and w is not None:
            w.damage(t.finding, in_flight=t.in_flight)      # -o hex: the unreadable (or in-flight) bytes, marked
        sys.stdout.flush()
        write_one_line(sys.stderr, t.finding)
        self.told.append(t.finding)

    def log(self, log: Log) -> Verdict:
        flt = self._selection(log.fmt, log)
        w = self._writer(log.fmt)
        records = Records(log, self.opts, flt,
                          limit=None if self.limit is None else self.limit - self.shown, live=self.live,
                          encode=None if self.stats or self.output not in ("jsonl", "json") else (self.output,
                                                                                                  self.mode))
        facts = log.fmt.facts
        for item in records:
            cls = item.__class__
            if cls is Told:
                self._tell(w, item)
            elif cls is Encoded:
                w.write_encoded(item.n, item.text)
            elif self.stats:
                self.total.add(facts(item))
            else:
                w.write(item)
        self.shown += records.shown
        if records.stopped is not None:      # the exit code covers what was read: say where that ends
            sys.stdout.flush()
            say_error(f"{printable(log.root)}: not read past {printable(at(*records.stopped))}")
        return records.verdict

    def close(self, run: dict) -> None:
        """The end of the output; ``run``: the run's ``exit_code`` and ``verdict`` (``Resolved.summary``)."""
        if self.stats:
            write_record_stats(sys.stdout, self.total, self.output, run)
        else:
            for w in self.writers.values():
                w.close()
            self.doc.finish(run, self.shown, self.told)

    def follow(self, entries, logs: list[Log], poll_s: float) -> Outcome:
        """--follow: every log's records, then what each gains, until Ctrl-C (exit 0)."""
        failed = [Failed(e.path, e.error) for e in entries if not isinstance(e, Log)]
        for f in failed:
            say_error(f"{f.root}: {f.message}")
        chosen = [(log, self._selection(log.fmt, log)) for log in logs]
        for log in logs:
            self._writer(log.fmt)
        try:
            for item in following(chosen, self.opts, limit=self.limit, poll_s=poll_s):
                if item is None:
                    sys.stdout.flush()
                    continue
                log, x = item
                w = self._writer(log.fmt)
                if x.__class__ is Told:
                    self._tell(w, x)
                else:
                    w.write(x)
                    self.shown += 1
        except KeyboardInterrupt:
            pass

        def write(resolved) -> None:
            self.close(resolved.summary)   # Ctrl-C: the JSON document's end (-o json's closing, -o jsonl's summary)
            sys.stdout.flush()
        return Outcome.of((), failed, write)


def _special(entries, logs, which: str, opts, **kw) -> Outcome:
    """An extra view a format offers (--qdump): one call per format, over its logs."""
    failed = [Failed(e.path, e.error) for e in entries if not isinstance(e, Log)]
    for f in failed:
        say_error(f"{f.root}: {f.message}")
    by_fmt: dict = {}
    for log in logs:
        if which not in log.fmt.dump.special_dumps:
            able = [f.about.plural for f in registry.formats() if which in f.dump.special_dumps]
            raise UsageError(f"--{which} applies to {' and '.join(able)} only", path=log.root)
        by_fmt.setdefault(log.fmt.name, (log.fmt, []))[1].append(log.data)
    for fmt_, datas in by_fmt.values():
        for stream, chunk in fmt_.dump.special(which, datas, opts, **kw):
            if stream == "raw":
                sys.stdout.flush()
                sys.stdout.buffer.write(chunk)
            elif stream == "err":
                sys.stderr.write(chunk)
            else:
                sys.stdout.write(chunk)
    return Outcome.of((), failed)


def _dump_spark(paths, fmt, output: DumpOutput, out_dir: str, mode: str, opts, master, spark_conf, remote) -> Outcome:
    """Export with each format's Spark data sources (several formats: to OUT/<format>, one schema each): the
    records (``<format>``, permissive) to OUT/records, verify's findings — the replay's at --as-of included —
    (``<format>-findings``) to OUT/findings; the errors go to stderr and the findings decide the exit code, as
    the local dump's."""
    from ..spark.fleet import export_records
    by_fmt: dict[str, list[str]] = {}
    for p in paths:  # a PATH is one format, or several sharing a directory (detect_all)
        for name in [fmt] if fmt != "auto" else [f.name for f, _ in registry.detect_all(p)]:
            by_fmt.setdefault(name, []).append(p)
    verdicts: set = set()
    with _spark.session(master, spark_conf, remote) as spark:
        for source, ps in by_fmt.items():
            res = export_records(spark, ps, out_dir if len(by_fmt) == 1 else os.path.join(out_dir, source),
                                 fmt="parquet" if output is DumpOutput.parquet else "json",
                                 payload="false" if mode == "none" else mode, progress=_spark.say, source=source,
                                 opts=opts)
            for f in res.errors:
                write_one_line(sys.stderr, f)
            if res.error_count > len(res.errors):
                _spark.say(f"... {res.error_count - len(res.errors)} more error finding(s): see the findings "
                           "export")
            verdicts |= res.verdicts
    return Outcome.of(sorted(verdicts))
