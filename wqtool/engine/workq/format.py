"""workq 0.2.0 command logs behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Sequence

from ...errors import InputError
from ...formats import workq as schema
from ..fileio import listdir, read_head
from ..live import is_locked
from ..caps import About, bound, Passes, Dump, Plans, Live, Spark
from ..format import Evidence, Format, Options, PackOptions, RecordFacts, RepairOptions, StateView, register
from ..run import LogReport, ReplayPass, VerifyReport
from .codes import CODES, REPLAY_CODES, EXPLAIN
from .model import Record

if TYPE_CHECKING:       # the reader is imported where a workq log is read: detecting another format never loads it
    from .reader import LogSet


_KINDS = tuple(c.label for c in schema.CmdType)
_LABEL = {c: c.label for c in schema.CmdType}


class WorkqPasses(Passes):
    def file_events(self, log: LogSet, i: int, start_index: int = 0) -> Iterator:
        from .reader import segment_events
        from .replay import WorkqReplay
        seg = log.segments[i]
        for ev in segment_events(seg, start_index, seg is log.newest):
            yield ev
            if ev.__class__ is Record and ev.command is None:   # the payload's findings (replay adds no other)
                r = WorkqReplay(0)
                r.apply(ev)
                yield from r.findings

    def run_log(self, log: LogSet, opts: Options, *, limit: int | None = None, state: bool = True,
                workers: int | None = None) -> LogReport:
        from . import verify as verify_mod
        if state:
            workers = 1
        elif workers is None:
            workers = verify_mod.default_workers(log)
        return verify_mod.run_log(log, opts.as_of_ns, limit=limit, state=state, workers=workers)

    def verify(self, logs, opts: Options, *, max_findings: int | None = None,
               workers: int | None = None) -> VerifyReport:
        from . import verify as verify_mod
        return verify_mod.verify(logs, opts.as_of_ns, max_findings=max_findings, workers=workers)

    def replay_findings(self, log: LogSet, opts: Options) -> Iterator:
        from . import verify as verify_mod
        return verify_mod.replay_findings(log, opts.as_of_ns)

    def stats_log(self, log: LogSet, opts: Options, *, ids: bool = True):
        from . import verify as verify_mod
        fast = verify_mod.fast_stats(log, opts.as_of_ns, ids=ids)     # the kernel's one pass
        return fast if fast is not None else super().stats_log(log, opts, ids=ids)

    def series(self, log: LogSet, opts: Options, *, limit: int | None = None, max_bins: int):
        from .series import fast_series      # report and stats --chart|--timeline only
        return fast_series(log, opts.as_of_ns, limit=limit, max_bins=max_bins)

    def time_span(self, log: LogSet, end: str | None = None) -> tuple[int | None, int | None]:
        from . import walk
        return walk.time_span(log, end) if walk.available() else super().time_span(log, end)

    def series_probe(self, replay):
        from .series import WorkqProbe     # report and stats --chart|--timeline only
        return WorkqProbe(replay)


class WorkqDump(Dump):
    kind_noun = "command"
    record_kinds = _KINDS
    filters = frozenset({"job", "time"})

    def encoded_records(self, log: LogSet, opts: Options, *, style: str, payload: str, limit: int | None = None):
        from . import verify as verify_mod
        return verify_mod.fast_dump(log, opts.as_of_ns, style=style, payload=payload, limit=limit)

    def select_records(self, log: LogSet, opts: Options, flt):
        from . import walk
        if flt.selects_all() or not walk.available():
            return None
        from ..walk import Selection
        from .fastreplay import Bail
        try:
            return Selection(walk.WorkqWalker(log, opts.as_of_ns, flt), flt, Record).prepare()
        except Bail:
            return None


class WorkqPlans(Plans):
    def missing(self, path: str) -> Exception | None:
        from .reader import interrupted_missing
        return interrupted_missing(path)

    # -- plans

    def pack(self, log: LogSet, opts: PackOptions):
        from . import pack as pack_mod    # only pack needs it (start-up of every other command)
        if opts.drop_expired:
            from ...errors import UsageError
            raise UsageError("--drop-expired applies to Kestrel journals (workq replay already skips expired jobs)")
        return pack_mod.pack_plan(log, opts.as_of_ns, segment_size=opts.segment_size or schema.DEFAULT_SEGMENT_SIZE,
                              salvage=opts.salvage)

    def repair(self, log: LogSet, opts: RepairOptions):
        from .repair import repair_plan
        return repair_plan(log, opts.as_of_ns, salvage=opts.salvage,
                           drop_invalid=opts.drop_invalid, truncate_to_ns=opts.truncate_to_ns)

    def repair_loss(self, log: LogSet, opts: RepairOptions, prior=None) -> dict:
        from ..format import loss_of
        from .repair import repair_plan     # prior: the kernel's pass (series.fast_series): the plan made from it
        return loss_of(repair_plan(log, opts.as_of_ns, salvage=opts.salvage, drop_invalid=opts.drop_invalid,
                                   truncate_to_ns=opts.truncate_to_ns, prior=prior).report_doc())

    def clean(self, log: LogSet, opts: Options):
        from .clean import clean_plan
        return clean_plan(log, opts.as_of_ns)

    def finish_interrupted(self, path: str) -> list[str]:
        if os.path.isdir(path) or not os.path.exists(path):
            from . import pack as pack_mod
            return pack_mod.finish_interrupted(path)
        return []


class WorkqLive(Live):
    in_flight_code = "WQ-IN-FLIGHT"

    def writer(self, log: LogSet) -> str | None:
        if not log.is_dir:
            return None
        lock = os.path.join(log.root, "append.lock")
        if is_locked(lock):
            return "append.lock is held (a workq-server is running on this log)"
        return None


class WorkqSpark(Spark):
    source = None   # the generic data source (wqtool.spark.datasources.RecordSource)
    fleet = "wqtool.engine.workq.fleet:WorkqFleet"
    #: ``job_to_jsonable``'s fields (replay -o jsonl), in order
    state_types = {"job_id": "string", "kind": "string", "name": "string", "state": "string", "priority": "long",
                   "attempts": "long", "max_attempts": "long", "max_fails": "long", "ttr_ms": "long", "ttl_ms": "long",
                   "created_ns": "long", "scheduled_ns": "long", "expires_ns": "long", "log_expires_ns": "long",
                   "lease_expires_ns": "long", "payload_len": "long", "payload_crc32c": "string", "result": "string",
                   "created": "string", "scheduled": "string", "expires": "string", "log_expires": "string",
                   "lease_expires": "string"}

    def file_batches(self, log: LogSet, i: int, start_index: int, *, payload: str, schema, file_name: str,
                     values: dict):
        from . import columns         # the C kernel's columns (Spark's records source)
        return columns.file_batches(log, i, start_index, payload=payload, schema=schema, file_name=file_name,
                                    values=values)

    def file_batches_at(self, log: LogSet, i: int, start_index: int, at: int, *, payload: str, schema,
                        file_name: str, values: dict):
        from . import columns         # the records before ``at`` framed and CRC-checked, not decoded
        return columns.file_batches_at(log, i, start_index, at, payload=payload, schema=schema,
                                       file_name=file_name, values=values)

    def file_records(self, log: LogSet, i: int) -> int:
        from . import columns         # the kernel counts up to the first record it refuses
        n = columns.file_records(log, i)
        if n is not None:
            return n
        from .reader import segment_events
        seg = log.segments[i]
        return sum(1 for ev in segment_events(seg, 0, seg is log.newest, decode=False) if ev.__class__ is Record)


class WorkqFormat(Format):
    name = "workq"
    title = "workq 0.2.0 command log"
    codes = CODES
    about = About(
        plural="workq logs",
        file_expected=f"a workq segment (expected magic {schema.MAGIC:08x} 'wqwq' at offset 0)",
        dir_expected="a workq log directory (no segments NNNNNNNNN.log, no lock files)",
        stdin_name="000000001.log",
        manual="""A directory of segments named exactly nine digits plus .log (000000001.log, ...), read in numeric order
(gaps are legal), plus the empty lock files append.lock and read.lock. Every other file is ignored by workq-server
and reported as WQ-IGNORED-FILE. Byte-level reference: docs/formats/workq-cmdlog.md.

A segment starts with the 8-byte header 77 71 77 71 00 00 00 01 ("wqwq", version 1, big-endian), followed by
records back to back:

  TIME     15 bytes, Go binary time version 1: 01, seconds since 0001-01-01 (i64 BE), nanoseconds (i32 BE),
           zone offset in minutes (i16 BE; FF FF = UTC)
  SIZE     unsigned LEB128 varint (1..10 bytes): the payload length
  PAYLOAD  one command: CMD_TYPE (1 add, 2 schedule, 3 complete, 4 fail, 5 delete, 6 expire, 7 start-attempt,
           8 timeout-attempt), the 16-byte job id, then for add/schedule: name, TTR, TTL, priority (zig-zag),
           max-attempts, max-fails, payload, time, created; for complete/fail: the result
  CRC      CRC-32C (Castagnoli) over TIME, SIZE and PAYLOAD, stored big-endian

workq-server holds append.lock for its whole life and its cleaner takes read.lock: wqtool's --apply takes both.""",
        explain=EXPLAIN,
        replay_codes=REPLAY_CODES,
        expired_code="WQ-ADD-EXPIRED",
        told_codes=frozenset({"WQ-INTERRUPTED-APPLY"}))
    record_cls = Record

    passes = bound(WorkqPasses)
    dump = bound(WorkqDump)
    plans = bound(WorkqPlans)
    live = bound(WorkqLive)
    spark = bound(WorkqSpark)

    @cached_property
    def record_view(self):
        from .serialize import WorkqRecordView
        return WorkqRecordView()

    @cached_property
    def diff(self):          # wqtool diff only
        from .diff import WorkqDiffer
        return WorkqDiffer(self)

    def detect(self, path: str) -> Evidence | None:
        if os.path.isdir(path):
            try:
                names = listdir(path)
            except OSError:
                return Evidence(True, "an unreadable directory (the reader reports it)")
            if any(schema.segment_seq(n) is not None for n in names):
                return Evidence(True, "segment files NNNNNNNNN.log")
            if any(n in schema.LOCK_FILES for n in names):
                return Evidence(True, "workq lock files")
            return None
        if schema.segment_seq(os.path.basename(path)) is not None:
            return Evidence(True, "a segment name NNNNNNNNN.log")
        try:
            head = read_head(path, len(schema.HEADER_BYTES))
        except InputError:
            return Evidence(True, "an unreadable file (the reader reports it)")
        if head[:4] == schema.HEADER_BYTES[:4]:
            return Evidence(True, "the segment magic 'wqwq'")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[LogSet]:
        from .reader import discover
        return discover(paths, horizon=opts.horizon)

    def files(self, log: LogSet) -> list[str]:
        return [s.path for s in log.segments]

    def run(self, log: LogSet, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from . import verify as verify_mod
        return verify_mod.LogRun(log, opts.as_of_ns, limit=limit)

    def facts(self, rec: Record) -> RecordFacts:
        c = rec.command
        if c is None:
            return RecordFacts("(undecodable)", rec.length, rec.time.unix_ns, None)
        return RecordFacts(_LABEL[c.cmd], rec.length, rec.time.unix_ns, c.job_id)

    def state_view(self, state, log=None) -> StateView:
        from .serialize import WorkqStateView
        return WorkqStateView(state)


FORMAT = register(WorkqFormat())

