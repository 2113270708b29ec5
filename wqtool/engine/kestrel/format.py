"""Kestrel queue journals behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import os
import stat
from functools import cached_property
from typing import Iterator, Sequence

from ...errors import InputError
from ...formats import kestrel as schema
from ..fileio import listdir
from ..caps import About, bound, Passes, Dump, Plans, Live, Spark
from ..format import Evidence, Format, Options, PackOptions, RecordFacts, RepairOptions, StateView, register
from ..run import LogReport, ReplayPass, VerifyReport
from ..options import Settings, setting
from ..live import describe_holders, holders
from .codes import KESTREL_CODES, KESTREL_REPLAY_CODES, KESTREL_EXPLAIN
from .model import Record
from .reader import (KESTREL_VERSIONS, ROLE_EXPLICIT, ROLE_LIVE, ROLE_ROTATED, STRONG, TEMP_MARKER, WEAK, FileSet,
                     JournalReader, discover, journal_evidence, journal_name, queue_of)


_KINDS = tuple(o.label for o in schema.Opcode)
_LABEL = {o: o.label for o in schema.Opcode}


@dataclass(frozen=True)
class KestrelSettings(Settings):
    """Kestrel's settings come from command flags (--kestrel-version, --keep-open) and the API (queue=)."""

    kestrel_version: str = setting("auto")
    keep_open: bool = setting(False)
    queue: str | None = setting(None)


def _version(opts: Options) -> str:
    return opts.of(FORMAT).kestrel_version


def _keep_open(opts: Options) -> bool:
    return opts.of(FORMAT).keep_open


EMPTY_QUEUE = ("an empty journal in a directory of nothing but empty Kestrel journal names (a queue that pack --apply "
               "emptied: Kestrel reads every such name as a queue, names decide, not content)")


def empty_queue(d: str) -> str | None:
    """The first live journal ``<q>`` of a directory whose regular files are all empty and all named as Kestrel
    names journals (docs/formats/kestrel-journal.md, "File names": ``<q>``, ``<q>.<ms>``, ``<q>.<ms>.pack``,
    ``<q>~~<ms>``), with at least one live ``<q>``; None otherwise (an empty file anywhere else is no evidence)."""
    try:
        names = sorted(listdir(d))
    except OSError:
        return None
    live = None
    for n in names:
        p = os.path.join(d, n)
        if os.path.isdir(p):
            continue
        try:
            st = os.stat(p)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size or not journal_name(n):
            return None
        if live is None and n == queue_of(n) and TEMP_MARKER not in n:
            live = n
    return live

class KestrelPasses(Passes):
    def file_events(self, log: FileSet, i: int, start_index: int = 0) -> Iterator:
        """One journal file read on its own by the engine's reader: the framing of a file does not depend on the
        others, only the torn-tail-vs-corrupt call does (damage at the end of the live file — the set's last —
        is a torn tail)."""
        jf = log.files[i]
        live = i == len(log.files) - 1 and jf.role in (ROLE_LIVE, ROLE_EXPLICIT)
        one = FileSet(root=log.root, queue=log.queue, files=[dataclasses.replace(jf, role=ROLE_LIVE if live
                                                                                 else ROLE_ROTATED)],
                      is_dir=log.is_dir, kestrel_version=log.kestrel_version)
        for ev in JournalReader(one).events():
            if start_index:
                if ev.__class__ is Record:
                    ev.index += start_index
                elif ev.record_index is not None:
                    ev.record_index += start_index
            yield ev

    def time_span(self, log: FileSet, end: str | None = None) -> tuple[int | None, int | None]:
        from . import fastreplay
        try:
            return fastreplay.time_span(log)
        except fastreplay.Bail:
            return super().time_span(log, end)

    def run_log(self, log: FileSet, opts: Options, *, limit: int | None = None, state: bool = True,
                workers: int | None = None) -> LogReport:
        from .verify import run_log
        return run_log(log, opts.as_of_ns, limit=limit, keep_open=_keep_open(opts))

    def verify(self, logs, opts: Options, *, max_findings: int | None = None,
               workers: int | None = None) -> VerifyReport:
        from .verify import verify
        return verify(logs, opts.as_of_ns, max_findings=max_findings, keep_open=_keep_open(opts))

    def replay_findings(self, log: FileSet, opts: Options) -> Iterator:
        from .verify import replay_findings
        return replay_findings(log, opts.as_of_ns, keep_open=_keep_open(opts))

    def series(self, log: FileSet, opts: Options, *, limit: int | None = None, max_bins: int):
        """The series in the C loop's one pass (kestrel/series.py), or None: the reference pass."""
        from .series import fast_series
        return fast_series(log, opts.as_of_ns, limit=limit, keep_open=_keep_open(opts), max_bins=max_bins)

    def stats_log(self, log: FileSet, opts: Options, *, ids: bool = True):
        """``stats`` in the C loop's one pass (kestrel/series.py: the record statistics are the series' by-products;
        Kestrel records name no job), else the reference pass."""
        from ..series import MAX_BINS
        from .series import fast_series
        got = fast_series(log, opts.as_of_ns, limit=0, keep_open=_keep_open(opts), max_bins=MAX_BINS)
        return super().stats_log(log, opts, ids=ids) if got is None else got[:2]

    def series_probe(self, replay):
        """Items queued and open (removed, not confirmed) after each record (only adds carry a time: what
        removes and confirms change is drawn at the time of the last add before them)."""
        from ..series import SizeProbe      # report and stats --chart|--timeline only
        return SizeProbe({"queued": lambda: len(replay.queue), "open": lambda: len(replay.open)})


class KestrelDump(Dump):
    kind_noun = "Kestrel opcode"
    record_kinds = _KINDS
    special_dumps = frozenset({"qdump"})

    def select_records(self, log: FileSet, opts: Options, flt):
        from . import fastreplay
        if flt.selects_all() or fastreplay.KERNEL != "c":
            return None
        from ..walk import Selection
        from .walk import KestrelWalker
        try:
            return Selection(KestrelWalker(log, opts.as_of_ns, _keep_open(opts), flt, _LABEL), flt, Record).prepare()
        except fastreplay.Bail:
            return None

    def special(self, which: str, logs, opts: Options, *, contents: bool = False, raw: bool = False,
                     queue: bool = False, **_kw):
        from .qdump import qdump
        if which != "qdump":
            return super().special(which, logs, opts)
        files = [f.path for fs in logs for f in fs.files]
        return qdump(files, now_ms=opts.as_of_ns // 1_000_000, dump_contents=contents, raw=raw,
                           queue_state=queue)


class KestrelPlans(Plans):
    def finish_interrupted(self, path: str) -> list[str]:
        if os.path.isdir(path) or os.path.isfile(path):
            from .pack import finish_interrupted
            return finish_interrupted(path)
        return []

    def repair(self, log: FileSet, opts: RepairOptions):
        from .repair import repair_plan
        return repair_plan(log, opts.as_of_ns, salvage=opts.salvage,
                           drop_invalid=opts.drop_invalid, truncate_to_ns=opts.truncate_to_ns,
                           kestrel_version=_version(opts))

    def repair_loss(self, log: FileSet, opts: RepairOptions, prior=None) -> dict:
        if prior is None or opts.truncate_to_ns is not None or not log.is_dir:   # (a file alone: its whole queue)
            return super().repair_loss(log, opts)
        from .repair import repair_loss      # prior: every error finding of the kernel's pass (series.fast_series)
        return repair_loss(log, prior, salvage=opts.salvage, drop_invalid=opts.drop_invalid)

    def clean(self, log: FileSet, opts: Options):
        from .clean import clean_plan
        return clean_plan(log, opts.as_of_ns)

    # -- plans

    def pack(self, log: FileSet, opts: PackOptions):
        from .pack import pack_plan
        return pack_plan(log, opts.as_of_ns, drop_expired=opts.drop_expired,
                              salvage=opts.salvage, kestrel_version=_version(opts),
                              keep_open=_keep_open(opts))


class KestrelLive(Live):
    in_flight_code = "KQ-IN-FLIGHT"

    def files(self, log: FileSet) -> list[str]:
        return [log.live_path] if log.is_dir else self.fmt.files(log)[-1:]

    def writer(self, log: FileSet) -> str | None:
        found = holders(list(dict.fromkeys(self.fmt.files(log) + ([log.live_path] if log.is_dir else []))), writing=True)
        return describe_holders(found) if found else None


class KestrelSpark(Spark):
    source = None
    fleet = None   # the generic fleet: a task per queue

    def options(self, o: dict) -> dict:
        version = str(o.get("kestrel_version", "auto"))
        if version not in KESTREL_VERSIONS:
            raise ValueError(f"kestrel: option kestrel_version must be one of {', '.join(KESTREL_VERSIONS)}, "
                             f"got {version!r}")
        keep = str(o.get("keep_open", "false")).lower()
        if keep not in ("true", "false"):
            raise ValueError(f"kestrel: option keep_open must be true or false, got {o.get('keep_open')!r}")
        return {"kestrel_version": version, "keep_open": keep == "true", "queue": o.get("queue") or None}


class KestrelFormat(Format):
    name = "kestrel"
    title = "Kestrel queue journal"
    codes = KESTREL_CODES
    about = About(
        plural="Kestrel journals",
        file_expected=f"a Kestrel journal (first byte an opcode 0-{int(schema.MAX_OPCODE)})",
        dir_expected="a Kestrel queue directory (no file parses as a journal)",
        stdin_name="stdin",
        manual="""A queue directory holds one journal per queue: the live file <q>, rotated files <q>.<ms> replayed first in
numeric order, a finished pack <q>.<ms>.pack that supersedes every <q>.<ts> with ts <= ms (Kestrel deletes them and
renames it), and <q>~~<ms> temp files of an unfinished rewrite (deleted at start-up). wqtool applies these rules
virtually: it never renames or deletes while reading. Byte-level reference: docs/formats/kestrel-journal.md.

Detection: a directory is a queue when one journal-named file has records that parse from its first byte, or when
its files are nothing but empty journal names with a live <q> (a queue that pack --apply emptied: Kestrel reads
every such name as a queue; the names decide, not the content) — also its <q> named alone. An empty file anywhere
else is no evidence of any format: wqtool exits 2 (cannot detect the log format) unless --format kestrel. repair and
clean take one journal file as its whole queue, and files named one by one when they are every file of their queue.

A journal is records back to back, no header and no checksum: an opcode byte (0 ADD legacy, 1 REMOVE, 2 ADDX,
3 REMOVE_TENTATIVE legacy, 4 SAVE_XID, 5 UNREMOVE, 6 CONFIRM_REMOVE, 7 ADD_XID, 8 CONTINUE,
9 REMOVE_TENTATIVE_XID), then a little-endian, signed body:

  ADDX        i32 size; i64 add_ms; i64 expiry_ms (0 = never); data[size-16]
  ADD_XID,
  CONTINUE    i32 xid; then an ADDX block
  ADD         i32 size; i32 expiry_s; data[size-4]            (starling / 0.8)
  4, 5, 6, 9  i32 xid

Only framing damage is detectable (KQ-NO-CHECKSUM). Kestrel has no lock files: stop it before pack --apply (wqtool
refuses while another process holds a journal open, and rolls back if the live file changes).""",
        explain=KESTREL_EXPLAIN,
        replay_codes=KESTREL_REPLAY_CODES,
        expired_code=None,
        told_codes=frozenset({"KQ-INTERRUPTED-APPLY"}))
    settings = KestrelSettings
    record_cls = Record

    passes = bound(KestrelPasses)
    dump = bound(KestrelDump)
    plans = bound(KestrelPlans)
    live = bound(KestrelLive)
    spark = bound(KestrelSpark)

    @cached_property
    def record_view(self):
        from .serialize import KestrelRecordView
        return KestrelRecordView()

    @cached_property
    def diff(self):          # wqtool diff only
        from .diff import KestrelDiffer
        return KestrelDiffer(self)

    def detect(self, path: str) -> Evidence | None:
        """Strong: a journal-named file where records parse from the first byte (or resume after damage at its
        start). A directory needs one such file; a single empty file is weak evidence (a fresh journal)."""
        if os.path.isdir(path):
            for n in sorted(listdir(path)):
                p = os.path.join(path, n)
                if os.path.isfile(p) and journal_name(n):
                    grade, why = journal_evidence(p)
                    if grade == STRONG:
                        return Evidence(True, f"{n}: {why}")
            live = empty_queue(path)
            return None if live is None else Evidence(True, f"{live}: {EMPTY_QUEUE}")
        try:
            grade, why = journal_evidence(path)
        except InputError:
            return None
        if grade == WEAK:     # an empty file: Kestrel's only if its name and directory have a queue's shape
            live = empty_queue(os.path.dirname(path) or ".")
            name = os.path.basename(path)
            return Evidence(True, f"{name}: {EMPTY_QUEUE}") if live is not None and journal_name(name) else None
        return None if grade is None else Evidence(grade == STRONG, why)

    def discover(self, paths: Sequence[str], opts: Options) -> list[FileSet]:
        sets = discover(paths, _version(opts), queue=opts.of(self).queue, evidence=opts.detected)
        if opts.horizon:   # pin each file's size at start: a live queue is read as it was when the command began
            for fs in sets:
                fs.files = [dataclasses.replace(f, pinned_size=_size(f.path)) for f in fs.files]
        return sets

    def files(self, log: FileSet) -> list[str]:
        return [f.path for f in log.files]

    def run(self, log: FileSet, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import KestrelRun
        return KestrelRun(log, opts.as_of_ns, limit=limit, keep_open=_keep_open(opts))

    def facts(self, rec: Record) -> RecordFacts:
        t = rec.add_time
        return RecordFacts(_LABEL[rec.op], rec.length, t * 1_000_000 if t else None, None)

    def state_view(self, state, log: FileSet | None = None) -> StateView:
        from .serialize import KestrelStateView
        return KestrelStateView(state, log.queue if log is not None else getattr(state, "queue", ""))


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


FORMAT = register(KestrelFormat())

